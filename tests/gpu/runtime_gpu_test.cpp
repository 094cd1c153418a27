// Several models on one GPU under one budget (runtime/multi/runtime.h): outputs
// bit-identical to each model's own preload session while the models stream under a
// budget of half their separate preload memory (prefetch across inferences included),
// the budget never exceeded, detect() from 4 threads giving every single run's
// detections with no growth in device memory, and closing a model giving its share to
// the others. Plus prefetch across inferences on a session of its own.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <thread>

#include "runtime/engine_sharing.h"
#include "runtime/multi/runtime.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/session_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

struct Model {
  std::string name, cfg, weights;
  int size = 416;
};

std::vector<Model> three_models() {
  std::vector<Model> m;
  const std::string fastest = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string fastest_w = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  const std::string tiny = test::required_shared_file("models/yolov4-tiny.cfg");
  const std::string tiny3 = test::required_shared_file("models/yolov3-tiny.cfg");
  if (fastest.empty() || fastest_w.empty() || tiny.empty() || tiny3.empty()) return {};
  m.push_back({"yolov4-tiny", tiny, test::synthetic_weights(tiny), 416});
  m.push_back({"yolov3-tiny", tiny3, test::synthetic_weights(tiny3), 320});
  m.push_back({"yolo-fastest", fastest, fastest_w, 320});
  for (const Model& x : m)
    if (x.weights.empty()) return {};
  return m;
}

SessionOptions fp16(int size) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.width = o.height = size;
  o.thresh = 0.05f;
  o.max_image_width = 320;
  o.max_image_height = 240;
  return o;
}

int64_t device_bytes(const MemoryReport& m) { return m.weights + m.activations + m.workspace; }

struct Reference {
  std::vector<std::vector<std::vector<float>>> heads;  // per model
  std::vector<std::vector<float>> inputs;
  int64_t separate_bytes = 0;                          // sum of the preload sessions' device memory
};

Reference preload_reference(const std::vector<Model>& models) {
  Reference r;
  for (size_t i = 0; i < models.size(); ++i) {
    auto s = Session::open(models[i].cfg, models[i].weights, fp16(models[i].size));
    EXPECT_TRUE(s.ok()) << s.status().to_string();
    if (!s.ok()) return r;
    r.inputs.push_back(test::random_input(1, 3, models[i].size, models[i].size, uint32_t(i + 1)));
    r.heads.push_back(test::network_heads(**s, r.inputs.back()));
    r.separate_bytes += device_bytes((*s)->engine().memory());
  }
  return r;
}

// three_models() with yolov4 @320 in place of yolov3-tiny (whose weights fit in less
// than its minimal ring): a model that must stream under half the separate memory.
// Empty without the shared data (a failed synthetic generation fails the test).
std::vector<Model> streaming_models() {
  std::vector<Model> models = three_models();
  const std::string v4 = test::required_shared_file("models/yolov4.cfg");
  if (models.empty() || v4.empty()) return {};
  models[1] = {"yolov4", v4, test::synthetic_weights(v4), 320};
  if (models[1].weights.empty()) return {};
  return models;
}

TEST(RuntimeGpu, ModelsMatchPreloadBitForBitUnderHalfTheirSeparateMemory) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  std::vector<Model> models = streaming_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const Reference ref = preload_reference(models);
  ASSERT_EQ(ref.heads.size(), models.size());
  RuntimeOptions ro;
  ro.budget = std::to_string(ref.separate_bytes / 2);
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  std::vector<std::unique_ptr<RuntimeModel>> ms;
  for (const Model& m : models) {
    auto r = (*rt)->open(m.cfg, m.weights, fp16(m.size));
    ASSERT_TRUE(r.ok()) << m.name << ": " << r.status().to_string();
    ms.push_back(std::move(r).value());
    EXPECT_LE((*rt)->memory().total(), (*rt)->budget_bytes()) << "after opening " << m.name;
  }
  const RuntimeMemory mem = (*rt)->memory();
  std::cout << mem.to_text() << "\n" << (*rt)->plan_text() << "\n";
  // The round's bound: below the joint plan's own prediction of the round.
  const Expected<RoundBound> bound = (*rt)->round_bound();
  ASSERT_TRUE(bound.ok()) << bound.status().to_string();
  std::cout << bound->to_text() << "\n";
  double predicted = 0;
  for (const auto& m : mem.models) predicted += m.predicted_ms;
  ASSERT_EQ(bound->names.size(), models.size());
  EXPECT_EQ(bound->names.front(), mem.models.front().name);
  EXPECT_GE(bound->ms, bound->compute_ms);
  EXPECT_LE(bound->ms, predicted + 1e-9);
  // Each model's bound alone within the weight budget: below its own prediction in the
  // joint plan (a plan of dlrun's model in that budget), never below its kernels.
  const Expected<std::vector<LatencyBound>> alone = (*rt)->alone_bounds();
  ASSERT_TRUE(alone.ok()) << alone.status().to_string();
  ASSERT_EQ(alone->size(), mem.models.size());
  for (size_t i = 0; i < alone->size(); ++i) {
    std::cout << mem.models[i].name << " alone: " << (*alone)[i].to_text() << "\n";
    EXPECT_GE((*alone)[i].ms, (*alone)[i].compute_ms) << mem.models[i].name;
    EXPECT_LE((*alone)[i].ms, mem.models[i].predicted_ms + 1e-9) << mem.models[i].name;
  }
  int64_t streamed = 0;
  for (const auto& m : mem.models) streamed += m.streamed;
  EXPECT_GT(streamed, 0) << "a budget of half the separate memory should make some model stream";
  // Round robin: the first round copies everything; later ones find their first units prefetched.
  for (int round = 0; round < 3; ++round)
    for (size_t i = 0; i < ms.size(); ++i) {
      EXPECT_TRUE(test::same_bits(test::network_heads(ms[i]->session(), ref.inputs[i]), ref.heads[i]))
          << models[i].name << " round " << round;
      // The model expected next (the least recently run: the next in this round robin)
      // has its first weights prefetched, when it has any to prefetch; the one after it
      // may have some (two models ahead, RuntimeOptions::prefetch_depth); no other.
      const size_t next = (i + 1) % ms.size(), after_next = (i + 2) % ms.size();
      for (size_t j = 0; j < ms.size(); ++j) {
        const bool can = ms[j]->session().model().streaming && ms[j]->session().model().stream.prefetch_units() > 0;
        const bool pending = ms[j]->session().engine().shared_ring()->prefetch_pending();
        if (round > 0 || j <= i) {
          if (j == next) {
            EXPECT_EQ(pending, can) << models[j].name << " after " << models[i].name << ", round " << round;
          } else if (j == after_next) {
            EXPECT_TRUE(can || !pending) << models[j].name << " after " << models[i].name << ", round " << round;
          } else {
            EXPECT_FALSE(pending) << models[j].name << " after " << models[i].name << ", round " << round;
          }
        }
      }
    }
  EXPECT_LE((*rt)->memory().total(), (*rt)->budget_bytes());
}

// One ring for every streamed model (the default; prefetch depth 1 and 2) and a ring per
// model, under 40 % of the separate memory, in an order that is not a round robin: a model runs twice in a
// row, a prefetched model is passed over (its prefetch given up: the model that runs
// instead overwrites the ring), models run after one another in both directions. Every
// output the same bits as preload alone.
TEST(RuntimeGpu, SharedRingAndOwnRingsMatchPreloadInAnyOrder) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  std::vector<Model> models = streaming_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  // Two networks that must both stream (yolov4 at two sizes) beside two small ones;
  // yolov4-tiny (11.55 MiB, less than the ring) has a weight of 0.01 in the sum the
  // joint plan minimises, so the plan streams all of it through the ring (its bytes
  // then serve the yolov4s' resident blobs).
  const Model tiny = models[0];
  models[0] = models[1];
  models[0].name = "yolov4@256";
  models[0].size = 256;
  models.push_back(tiny);
  const Reference ref = preload_reference(models);
  ASSERT_EQ(ref.heads.size(), models.size());
  for (const int variant : {0, 1, 2}) {  // shared ring with prefetch depth 1 and 2; own rings
    const bool shared = variant < 2;
    RuntimeOptions ro;
    ro.budget = std::to_string(ref.separate_bytes * 2 / 5);
    ro.shared_ring = shared;
    ro.prefetch_depth = variant == 1 ? 2 : 1;
    auto rt = Runtime::create(ro);
    ASSERT_TRUE(rt.ok()) << rt.status().to_string();
    std::vector<std::unique_ptr<RuntimeModel>> ms;
    for (const Model& m : models) {
      auto r = (*rt)->open(m.cfg, m.weights, fp16(m.size), &m == &models.back() ? 0.01 : 1.0);
      ASSERT_TRUE(r.ok()) << m.name << ": " << r.status().to_string();
      ms.push_back(std::move(r).value());
    }
    const RuntimeMemory mem = (*rt)->memory();
    std::cout << (shared ? "shared ring: " : "own rings: ") << mem.to_text() << "\n" << (*rt)->plan_text() << "\n";
    EXPECT_LE(mem.total(), (*rt)->budget_bytes());
    int on_ring = 0;
    for (const auto& m : mem.models) on_ring += m.shared_ring;
    if (shared) {
      EXPECT_GT(mem.ring, 0);
      EXPECT_GE(on_ring, 3) << "both yolov4 and yolov4-tiny should stream through the shared ring at 40 %";
      EXPECT_TRUE(mem.models[0].shared_ring && mem.models[1].shared_ring);
      const RuntimeMemory::Model& t = mem.models[3];
      EXPECT_TRUE(t.shared_ring && t.resident == 0 && t.streamed == ms[3]->session().model().plan.weight_bytes() &&
                  t.streamed <= mem.ring)
          << "yolov4-tiny should stream all its weights through a ring that holds them";
    } else {
      EXPECT_EQ(mem.ring, 0);
      EXPECT_EQ(on_ring, 0);
    }
    const int order[] = {0, 1, 2, 3, 0, 1, 1, 3, 2, 2, 1, 0, 3, 3, 2, 1, 0, 0, 2, 3, 0, 1, 2, 3};
    for (int k : order)
      EXPECT_TRUE(test::same_bits(test::network_heads(ms[size_t(k)]->session(), ref.inputs[size_t(k)]),
                                  ref.heads[size_t(k)]))
          << models[size_t(k)].name << (shared ? " (shared ring, prefetch depth " : " (own rings")
          << (shared ? std::to_string(ro.prefetch_depth) + ")" : ")");
  }
}

// 1 MiB slots on a runtime whose budget leaves 8 MiB for every weight, below the ring of
// two of yolov4's largest blob (docs/streaming.md section 8): the layers above the slot
// kept whole in the shared arena's idle bytes, the rest sliced through a small shared
// ring. Every output the same bits as the model's own streaming session with the same
// slices and whole layers, in an order that is not a round robin.
TEST(RuntimeGpu, LayersKeptWholeOnASmallSharedRingMatchTheirOwnSession) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  const std::vector<Model> models = streaming_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const auto sliced = [](int size) {
    SessionOptions o = fp16(size);
    o.slot_bytes = int64_t(1) << 20;
    o.slice_by = SliceBy::kChannels;  // the same cut in both sessions (auto measures at open)
    return o;
  };
  Reference own;
  for (size_t i = 0; i < models.size(); ++i) {
    SessionOptions o = sliced(models[i].size);
    o.mode = WeightMode::kStream;
    o.weight_budget = WeightBudget::min();
    auto s = Session::open(models[i].cfg, models[i].weights, o);
    ASSERT_TRUE(s.ok()) << models[i].name << ": " << s.status().to_string();
    own.inputs.push_back(test::random_input(1, 3, models[i].size, models[i].size, uint32_t(i + 11)));
    own.heads.push_back(test::network_heads(**s, own.inputs.back()));
  }
  // Every model opened on a runtime of `budget` (with 1 MiB slots, or with none given:
  // the runtime's own where the ring of whole layers does not fit); false where one fails.
  const auto open_all = [&](const std::string& budget, std::unique_ptr<Runtime>* rt,
                            std::vector<std::unique_ptr<RuntimeModel>>* ms, bool slot_given = true) {
    RuntimeOptions ro;
    ro.budget = budget;
    auto created = Runtime::create(ro);
    EXPECT_TRUE(created.ok()) << created.status().to_string();
    if (!created.ok()) return false;
    *rt = std::move(created).value();
    for (const Model& m : models) {
      SessionOptions o = sliced(m.size);
      if (!slot_given) o.slot_bytes = 0;
      auto r = (*rt)->open(m.cfg, m.weights, o);
      EXPECT_TRUE(r.ok()) << m.name << ": " << r.status().to_string();
      if (!r.ok()) return false;
      ms->push_back(std::move(r).value());
    }
    return true;
  };
  // The shared arena and workspace the models need, from a runtime without a limit.
  int64_t fixed = 0;
  {
    std::unique_ptr<Runtime> all;
    std::vector<std::unique_ptr<RuntimeModel>> ms;
    ASSERT_TRUE(open_all("all", &all, &ms));
    fixed = all->memory().arena + all->memory().workspace;
    ms.clear();
  }
  std::unique_ptr<Runtime> runtime;
  std::vector<std::unique_ptr<RuntimeModel>> ms;
  ASSERT_TRUE(open_all(std::to_string(fixed + (int64_t(8) << 20)), &runtime, &ms));
  Runtime* rt = runtime.get();
  const RuntimeMemory mem = rt->memory();
  std::cout << mem.to_text() << "\n" << rt->plan_text() << "\n";
  EXPECT_LE(mem.total(), rt->budget_bytes());
  EXPECT_GT(mem.ring, 0);
  EXPECT_LE(mem.ring, int64_t(8) << 20);
  const ExecutionPlan& v4 = ms[1]->session().model().plan;
  int64_t largest = 0;
  for (const WeightBlob& w : v4.weights) largest = std::max(largest, w.bytes);
  EXPECT_GT(largest, int64_t(4) << 20) << "yolov4's largest layers kept whole";
  const int order[] = {0, 1, 2, 1, 1, 0, 2, 2, 1, 0, 0, 1, 2};
  for (int k : order)
    EXPECT_TRUE(test::same_bits(test::network_heads(ms[size_t(k)]->session(), own.inputs[size_t(k)]),
                                own.heads[size_t(k)]))
        << models[size_t(k)].name;
  // The same budget with no slot given: yolov4, whose whole layers find no ring, is
  // opened again with kRuntimeSlotBytes (1 MiB, as above); a model that kept its whole
  // layers is compared with its own unsliced streaming session.
  ms.clear();
  runtime.reset();
  ASSERT_TRUE(open_all(std::to_string(fixed + (int64_t(8) << 20)), &runtime, &ms, false));
  std::cout << runtime->memory().to_text() << "\n" << runtime->plan_text() << "\n";
  EXPECT_EQ(ms[1]->session().options().slot_bytes, kRuntimeSlotBytes) << models[1].name;
  EXPECT_LE(runtime->memory().total(), runtime->budget_bytes());
  for (size_t i = 0; i < models.size(); ++i) {
    const int64_t slot = ms[i]->session().options().slot_bytes;
    std::cout << models[i].name << ": slot " << slot << "\n";
    if (slot == kRuntimeSlotBytes) continue;
    ASSERT_EQ(slot, 0) << models[i].name;
    SessionOptions o = fp16(models[i].size);
    o.mode = WeightMode::kStream;
    o.weight_budget = WeightBudget::min();
    auto whole = Session::open(models[i].cfg, models[i].weights, o);
    ASSERT_TRUE(whole.ok()) << models[i].name << ": " << whole.status().to_string();
    own.heads[i] = test::network_heads(**whole, own.inputs[i]);
  }
  for (int k : order)
    EXPECT_TRUE(test::same_bits(test::network_heads(ms[size_t(k)]->session(), own.inputs[size_t(k)]),
                                own.heads[size_t(k)]))
        << models[size_t(k)].name;
}

// A model reading its weights from storage (three stages) on a runtime beside models
// with theirs in host memory, under half their separate memory: every output the same
// bits as preload alone, round after round (the storage model is never prefetched).
TEST(RuntimeGpu, ModelFromStorageMatchesPreloadBesideOthers) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  std::vector<Model> models = streaming_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const Reference ref = preload_reference(models);
  ASSERT_EQ(ref.heads.size(), models.size());
  RuntimeOptions ro;
  ro.budget = std::to_string(ref.separate_bytes / 2);
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  std::vector<std::unique_ptr<RuntimeModel>> ms;
  for (size_t i = 0; i < models.size(); ++i) {
    SessionOptions o = fp16(models[i].size);
    if (i == 1) {  // yolov4 from storage
      o.weights_from = WeightsFrom::kStorage;
      o.prepared_path = test::temp_dir() + "/yolov4-320-runtime.dlrw";
    }
    auto r = (*rt)->open(models[i].cfg, models[i].weights, o);
    ASSERT_TRUE(r.ok()) << models[i].name << ": " << r.status().to_string();
    ms.push_back(std::move(r).value());
    EXPECT_LE((*rt)->memory().total(), (*rt)->budget_bytes()) << "after opening " << models[i].name;
  }
  ASSERT_TRUE(ms[1]->session().model().from_storage);
  const RuntimeMemory mem = (*rt)->memory();
  std::cout << mem.to_text() << "\n" << (*rt)->plan_text() << "\n";
  EXPECT_GT(mem.models[1].streamed, 0) << "yolov4 should stream from storage under half the memory";
  for (int round = 0; round < 4; ++round)
    for (size_t i = 0; i < ms.size(); ++i) {
      EXPECT_TRUE(test::same_bits(test::network_heads(ms[i]->session(), ref.inputs[i]), ref.heads[i]))
          << models[i].name << " round " << round;
      EXPECT_FALSE(ms[1]->session().engine().shared_ring()->prefetch_pending()) << "the storage model was prefetched";
    }
  EXPECT_GT(ms[1]->session().engine().read_timings().size(), 0u);
  // A zero-copy storage model is refused with the fix named.
  SessionOptions zc = fp16(320);
  zc.weights_from = WeightsFrom::kStorage;
  zc.zero_copy = 1;
  zc.prepared_path = test::temp_dir() + "/yolov4-320-runtime.dlrw";
  auto refused = (*rt)->open(models[1].cfg, models[1].weights, zc);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("zero_copy off"), std::string::npos) << refused.status().message();
}

TEST(RuntimeGpu, FourThreadsGiveSingleRunDetectionsWithoutMemoryGrowth) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  const std::vector<Model> models = three_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  RuntimeOptions ro;
  ro.budget = "64MiB";
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  std::vector<std::unique_ptr<RuntimeModel>> ms;
  for (const Model& m : models) {
    auto r = (*rt)->open(m.cfg, m.weights, fp16(m.size));
    ASSERT_TRUE(r.ok()) << m.name << ": " << r.status().to_string();
    ms.push_back(std::move(r).value());
  }
  std::cout << "opened: " << (*rt)->memory().to_text() << std::endl;
  std::vector<std::vector<uint8_t>> pixels(3);
  std::vector<ImageU8> images;
  for (int i = 0; i < 3; ++i) images.push_back(test::pattern_image(&pixels[size_t(i)], 160, 120, i));
  std::vector<std::vector<std::vector<Detection>>> single(ms.size());
  for (size_t m = 0; m < ms.size(); ++m)
    for (const ImageU8& img : images) {
      auto d = ms[m]->detect(img);
      ASSERT_TRUE(d.ok()) << d.status().to_string();
      single[m].push_back(*d);
    }
  std::cout << "single runs done" << std::endl;
  size_t free_before = 0, free_after = 0, total = 0;
  ASSERT_EQ(cudaSuccess, cudaMemGetInfo(&free_before, &total));
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 150; ++i) {
        const size_t m = size_t(t + i) % ms.size();
        const size_t k = size_t(t * 7 + i) % images.size();
        auto d = ms[m]->detect(images[k]);
        if (!d.ok()) ++failures;
        else if (!test::same_detections(*d, single[m][k])) ++mismatches;
      }
    });
  for (std::thread& th : threads) th.join();
  ASSERT_EQ(cudaSuccess, cudaMemGetInfo(&free_after, &total));
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
  EXPECT_EQ(free_after, free_before) << "device memory changed during the threaded inferences";
}

TEST(RuntimeGpu, ClosingAModelGivesItsShareToTheOthers) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  const std::vector<Model> models = three_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const Reference ref = preload_reference(models);
  RuntimeOptions ro;
  ro.budget = "40MiB";
  auto rt = Runtime::create(ro);
  ASSERT_TRUE(rt.ok());
  auto a = (*rt)->open(models[0].cfg, models[0].weights, fp16(models[0].size));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  const int64_t alone = (*a)->session().weight_budget_bytes();
  auto b = (*rt)->open(models[1].cfg, models[1].weights, fp16(models[1].size), 4.0);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  const int64_t shared = (*a)->session().weight_budget_bytes();
  EXPECT_LE(shared, alone);
  EXPECT_LE((*rt)->memory().total(), (*rt)->budget_bytes());
  EXPECT_TRUE(test::same_bits(test::network_heads((*a)->session(), ref.inputs[0]), ref.heads[0]));
  EXPECT_TRUE(test::same_bits(test::network_heads((*b)->session(), ref.inputs[1]), ref.heads[1]));
  const int64_t total_two = (*rt)->memory().total();
  b->reset();
  EXPECT_EQ((*a)->session().weight_budget_bytes(), alone);
  EXPECT_LT((*rt)->memory().total(), total_two);
  EXPECT_TRUE(test::same_bits(test::network_heads((*a)->session(), ref.inputs[0]), ref.heads[0]));
  // A budget nothing fits: refused with one line, the open model untouched.
  RuntimeOptions tiny_budget;
  tiny_budget.budget = "4MiB";
  auto small = Runtime::create(tiny_budget);
  ASSERT_TRUE(small.ok());
  auto refused = (*small)->open(models[0].cfg, models[0].weights, fp16(models[0].size));
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kOutOfMemory) << refused.status().to_string();
  EXPECT_NE(refused.status().message().find("runtime budget 4"), std::string::npos) << refused.status().message();
  EXPECT_EQ((*small)->memory().total(), 0);
}

// Where a mismatch would come from: the same model resident in stream mode alone, on a
// runtime alone, and on a runtime after another model has run (the shared arena then
// holds that model's activations).
std::string diff_text(const std::vector<std::vector<float>>& a, const std::vector<std::vector<float>>& b) {
  std::string s;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    size_t n = 0;
    double worst = 0;
    for (size_t k = 0; k < a[i].size() && k < b[i].size(); ++k)
      if (std::memcmp(&a[i][k], &b[i][k], 4) != 0) {
        ++n;
        worst = std::max(worst, double(std::abs(a[i][k] - b[i][k])));
      }
    s += "head " + std::to_string(i) + ": " + std::to_string(n) + " of " + std::to_string(a[i].size()) +
         " differ (max " + std::to_string(worst) + "); ";
  }
  return s;
}

TEST(RuntimeGpu, ResidentModelMatchesPreloadAloneAndAfterAnother) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  const std::vector<Model> models = three_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const Reference ref = preload_reference(models);
  ASSERT_EQ(ref.heads.size(), models.size());
  for (size_t i = 0; i < models.size(); ++i) {
    const Model& m = models[i];
    {
      auto s = Session::open(m.cfg, m.weights, fp16(m.size));
      ASSERT_TRUE(s.ok());
      const auto got = test::network_heads(**s, ref.inputs[i]);
      EXPECT_TRUE(test::same_bits(got, ref.heads[i])) << m.name << " second preload: " << diff_text(got, ref.heads[i]);
    }
    {
      SessionOptions o = fp16(m.size);
      o.mode = WeightMode::kStream;
      o.weight_budget = WeightBudget::all();
      auto s = Session::open(m.cfg, m.weights, o);
      ASSERT_TRUE(s.ok());
      const auto got = test::network_heads(**s, ref.inputs[i]);
      EXPECT_TRUE(test::same_bits(got, ref.heads[i])) << m.name << " stream all alone: " << diff_text(got, ref.heads[i]);
    }
    {
      auto rt = Runtime::create(RuntimeOptions{});
      ASSERT_TRUE(rt.ok());
      auto b = (*rt)->open(m.cfg, m.weights, fp16(m.size));
      ASSERT_TRUE(b.ok());
      const auto got = test::network_heads((*b)->session(), ref.inputs[i]);
      EXPECT_TRUE(test::same_bits(got, ref.heads[i])) << m.name << " runtime alone: " << diff_text(got, ref.heads[i]);
    }
    {
      const size_t o = (i + 1) % models.size();
      auto rt = Runtime::create(RuntimeOptions{});
      ASSERT_TRUE(rt.ok());
      auto a = (*rt)->open(models[o].cfg, models[o].weights, fp16(models[o].size));
      ASSERT_TRUE(a.ok());
      auto b = (*rt)->open(m.cfg, m.weights, fp16(m.size));
      ASSERT_TRUE(b.ok());
      const auto first = test::network_heads((*b)->session(), ref.inputs[i]);
      EXPECT_TRUE(test::same_bits(first, ref.heads[i])) << m.name << " runtime second, first run: " << diff_text(first, ref.heads[i]);
      (void)test::network_heads((*a)->session(), ref.inputs[o]);
      const auto after = test::network_heads((*b)->session(), ref.inputs[i]);
      EXPECT_TRUE(test::same_bits(after, ref.heads[i])) << m.name << " runtime second, after the other: " << diff_text(after, ref.heads[i]);
    }
  }
}

TEST(StreamPrefetch, NextInferenceFirstUnitsCopiedAheadStayBitIdentical) {
  if (!test::have_cuda_device()) GTEST_SKIP() << test::cuda_device_message();
  const std::vector<Model> models = three_models();
  if (models.empty()) GTEST_SKIP() << "../shared is not available";
  const Reference ref = preload_reference(models);
  for (bool graph : {true, false}) {
    SessionOptions o = fp16(models[0].size);
    o.mode = WeightMode::kStream;
    o.prefetch_next = true;
    o.cuda_graph = graph;
    o.profile_layers = !graph;
    auto s = Session::open(models[0].cfg, models[0].weights, o);
    ASSERT_TRUE(s.ok()) << s.status().to_string();
    ASSERT_GT((*s)->model().stream.prefetch_units(), 0);
    ASSERT_LT((*s)->model().stream.prefetch_units(), int((*s)->model().stream.units.size()));
    for (int rep = 0; rep < 4; ++rep)
      EXPECT_TRUE(test::same_bits(test::network_heads(**s, ref.inputs[0]), ref.heads[0])) << "graph " << graph << " rep " << rep;
    if (!graph) {  // the profiled run records only the copies it made itself
      const auto copies = (*s)->engine().copy_timings();
      EXPECT_EQ(int(copies.size()),
                int((*s)->model().stream.units.size()) - (*s)->model().stream.prefetch_units());
    }
  }
}

}  // namespace
}  // namespace dlr
