// Several models on one Runtime (runtime/multi/runtime.h), CPU backend: outputs
// bit-identical to each model's own session; detect() from several threads on several
// models gives every single run's detections; the shared arena is the largest model's
// and shrinks when that model closes; a budget too small refuses the model with one
// line and gives back what the attempt took; misuse is refused with a clear error.
// (The GPU side, with streaming and the joint plan, is tests/gpu/runtime_gpu_test.cpp.)
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "runtime/multi/runtime.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/session_fixtures.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

struct Model {
  std::string cfg, weights;
};

bool models(Model* fastest, Model* tiny) {
  fastest->cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  fastest->weights = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  tiny->cfg = test::required_shared_file("models/yolov4-tiny.cfg");
  if (fastest->cfg.empty() || fastest->weights.empty() || tiny->cfg.empty()) return false;
  tiny->weights = test::synthetic_weights(tiny->cfg);
  return !tiny->weights.empty();
}

SessionOptions small(int size) {
  SessionOptions o;
  o.width = o.height = size;  // small: the suite runs on 2 cores
  o.threads = 1;
  o.thresh = 0.05f;
  return o;
}

RuntimeOptions cpu_runtime(const std::string& budget = "all") {
  RuntimeOptions o;
  o.device = DeviceKind::kCPU;
  o.budget = budget;
  return o;
}

TEST(RuntimeCpu, ModelsMatchTheirOwnSessionsBitForBit) {
  Model fastest, tiny;
  if (!models(&fastest, &tiny)) GTEST_SKIP() << "../shared is not available";
  const std::vector<float> in_a = test::random_input(1, 3, 160, 160, 1);
  const std::vector<float> in_b = test::random_input(1, 3, 128, 128, 2);
  auto sa = Session::open(fastest.cfg, fastest.weights, small(160));
  auto sb = Session::open(tiny.cfg, tiny.weights, small(128));
  ASSERT_TRUE(sa.ok() && sb.ok());
  const auto ref_a = test::network_heads(**sa, in_a), ref_b = test::network_heads(**sb, in_b);
  const int64_t arena_a = (*sa)->plan().arena_bytes, arena_b = (*sb)->plan().arena_bytes;

  auto rt = Runtime::create(cpu_runtime());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto a = (*rt)->open(fastest.cfg, fastest.weights, small(160));
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto b = (*rt)->open(tiny.cfg, tiny.weights, small(128));
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  for (int rep = 0; rep < 2; ++rep) {  // interleaved: each run overwrites the other's activations
    EXPECT_EQ(test::network_heads((*a)->session(), in_a), ref_a);
    EXPECT_EQ(test::network_heads((*b)->session(), in_b), ref_b);
  }
  const RuntimeMemory m = (*rt)->memory();
  EXPECT_EQ(m.arena, (std::max(arena_a, arena_b) + 255) / 256 * 256);
  ASSERT_EQ(m.models.size(), 2u);
  EXPECT_EQ(m.models[0].arena_need, arena_a);
  EXPECT_EQ(m.models[1].arena_need, arena_b);
  EXPECT_EQ(m.weights, (*sa)->engine().memory().weights + (*sb)->engine().memory().weights);
  EXPECT_EQ(m.total(), m.arena + m.workspace + m.weights);
  EXPECT_NE(m.to_text().find("shared activations"), std::string::npos);
  // The round's bound and the models' bounds alone need a shared ring (CUDA): refused on
  // the CPU with one line.
  const Expected<RoundBound> bound = (*rt)->round_bound();
  ASSERT_FALSE(bound.ok());
  EXPECT_NE(bound.status().message().find("one shared ring"), std::string::npos) << bound.status().message();
  const Expected<std::vector<LatencyBound>> alone = (*rt)->alone_bounds();
  ASSERT_FALSE(alone.ok());
  EXPECT_EQ(alone.status().message(), "alone bounds: only for a runtime with one shared ring (CUDA)");

  // Closing the larger model shrinks the shared arena to the other's.
  const bool a_larger = arena_a > arena_b;
  (a_larger ? a : b)->reset();
  EXPECT_EQ((*rt)->memory().arena, (std::min(arena_a, arena_b) + 255) / 256 * 256);
  if (a_larger)
    EXPECT_EQ(test::network_heads((*b)->session(), in_b), ref_b);
  else
    EXPECT_EQ(test::network_heads((*a)->session(), in_a), ref_a);
}

// Weights from storage on a CPU runtime: each model reads its own prepared file into
// its own staging (yolov4-tiny with a host budget that also keeps its largest blobs),
// beside a model with its weights in memory; every output stays its own host-weights
// session's, interleaved, and the runtime reports kept weights and staging apart.
TEST(RuntimeCpu, ModelsFromStorageMatchTheirHostWeightSessions) {
  Model fastest, tiny;
  if (!models(&fastest, &tiny)) GTEST_SKIP() << "../shared is not available";
  const std::vector<float> in_a = test::random_input(1, 3, 160, 160, 3);
  const std::vector<float> in_b = test::random_input(1, 3, 128, 128, 4);
  auto sa = Session::open(fastest.cfg, fastest.weights, small(160));
  auto sb = Session::open(tiny.cfg, tiny.weights, small(128));
  ASSERT_TRUE(sa.ok() && sb.ok());
  const auto ref_a = test::network_heads(**sa, in_a), ref_b = test::network_heads(**sb, in_b);

  auto rt = Runtime::create(cpu_runtime());
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  SessionOptions from_disk = small(128);
  from_disk.weights_from = WeightsFrom::kStorage;
  from_disk.prepared_path = test::temp_dir() + "/tiny-runtime.dlrw";
  from_disk.host_budget = int64_t(21) << 20;  // 18 MiB of staging (the minimum) + 3 MiB kept
  auto b = (*rt)->open(tiny.cfg, tiny.weights, from_disk);
  ASSERT_TRUE(b.ok()) << b.status().to_string();
  SessionOptions fastest_disk = small(160);
  fastest_disk.weights_from = WeightsFrom::kStorage;
  fastest_disk.prepared_path = test::temp_dir() + "/fastest-runtime.dlrw";
  auto a = (*rt)->open(fastest.cfg, fastest.weights, fastest_disk);
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  auto c = (*rt)->open(tiny.cfg, tiny.weights, small(128));  // the same network, weights in memory
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  for (int rep = 0; rep < 3; ++rep) {
    EXPECT_EQ(test::network_heads((*a)->session(), in_a), ref_a) << "round " << rep;
    EXPECT_EQ(test::network_heads((*b)->session(), in_b), ref_b) << "round " << rep;
    EXPECT_EQ(test::network_heads((*c)->session(), in_b), ref_b) << "round " << rep;
  }
  const CompiledModel& mb = (*b)->session().model();
  ASSERT_TRUE(mb.from_storage);
  int64_t kept = 0;
  for (size_t i = 0; i < mb.plan.weights.size(); ++i)
    if (mb.reads.blob_staging_offset[i] < 0) kept += mb.plan.weights[i].bytes;
  EXPECT_GT(kept, 0);
  EXPECT_GT(mb.reads.read_bytes(), 0);
  const RuntimeMemory m = (*rt)->memory();
  ASSERT_EQ(m.models.size(), 3u);
  EXPECT_EQ(m.models[0].resident, kept);
  EXPECT_EQ(m.models[0].host_weights, mb.reads.staging_bytes);
  EXPECT_EQ(m.models[2].resident, (*sb)->engine().memory().weights);
}

TEST(RuntimeCpu, ThreadsOnSeveralModelsGiveTheSingleRunDetections) {
  Model fastest, tiny;
  if (!models(&fastest, &tiny)) GTEST_SKIP() << "../shared is not available";
  auto rt = Runtime::create(cpu_runtime());
  ASSERT_TRUE(rt.ok());
  std::vector<std::unique_ptr<RuntimeModel>> ms;
  for (const auto& [m, size] : {std::pair<Model, int>{fastest, 160}, {tiny, 128}}) {
    auto r = (*rt)->open(m.cfg, m.weights, small(size));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ms.push_back(std::move(r).value());
  }
  std::vector<std::vector<uint8_t>> pixels(3);
  std::vector<ImageU8> images;
  for (int i = 0; i < 3; ++i) images.push_back(test::pattern_image(&pixels[size_t(i)], 120, 90, i));
  std::vector<std::vector<std::vector<Detection>>> ref(ms.size());  // [model][image]
  for (size_t m = 0; m < ms.size(); ++m)
    for (const ImageU8& img : images) {
      auto d = ms[m]->detect(img);
      ASSERT_TRUE(d.ok());
      ref[m].push_back(*d);
    }
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 12; ++i) {
        const size_t m = size_t(t + i) % ms.size();
        const size_t k = size_t(t * 7 + i) % images.size();
        auto d = ms[m]->detect(images[k]);
        if (!d.ok()) ++failures;
        else if (!test::same_detections(*d, ref[m][k])) ++mismatches;
      }
    });
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(RuntimeCpu, BudgetTooSmallRefusesTheModelAndGivesItsMemoryBack) {
  Model fastest, tiny;
  if (!models(&fastest, &tiny)) GTEST_SKIP() << "../shared is not available";
  auto rt = Runtime::create(cpu_runtime("2MiB"));
  ASSERT_TRUE(rt.ok());
  auto a = (*rt)->open(fastest.cfg, fastest.weights, small(160));
  ASSERT_FALSE(a.ok());
  EXPECT_EQ(a.status().code(), StatusCode::kOutOfMemory);
  const std::string msg = a.status().message();
  EXPECT_NE(msg.find("runtime budget 2MiB"), std::string::npos) << msg;
  EXPECT_NE(msg.find("yolo-fastest-1.1.cfg"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos);
  const RuntimeMemory m = (*rt)->memory();
  EXPECT_EQ(m.total(), 0);
  EXPECT_TRUE(m.models.empty());
}

TEST(RuntimeCpu, MisuseIsRefusedWithAClearError) {
  Model fastest, tiny;
  if (!models(&fastest, &tiny)) GTEST_SKIP() << "../shared is not available";
  RuntimeOptions bad = cpu_runtime("40%");
  auto r = Runtime::create(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("runtime budget \"40%\": a percentage is of the device's memory, and the CPU "
                                      "backend has none (give a size"),
            std::string::npos)
      << r.status().message();
  auto bad_auto = Runtime::create(cpu_runtime("auto"));
  ASSERT_FALSE(bad_auto.ok());
  EXPECT_NE(bad_auto.status().message().find("runtime budget \"auto\": expected all, NN% or a size"),
            std::string::npos)
      << bad_auto.status().message();
  auto bad_text = Runtime::create(cpu_runtime("lots"));
  ASSERT_FALSE(bad_text.ok());
  EXPECT_NE(bad_text.status().message().find("lots"), std::string::npos) << bad_text.status().message();
  RuntimeOptions few = cpu_runtime();
  few.curve_points = 1;
  auto bad_points = Runtime::create(few);
  ASSERT_FALSE(bad_points.ok());
  EXPECT_NE(bad_points.status().message().find("curve points must be >= 2"), std::string::npos);
  for (int depth : {0, 3}) {
    RuntimeOptions deep = cpu_runtime();
    deep.prefetch_depth = depth;
    auto bad_depth = Runtime::create(deep);
    ASSERT_FALSE(bad_depth.ok());
    EXPECT_NE(bad_depth.status().message().find("runtime: prefetch depth " + std::to_string(depth) +
                                                ": expected 1 (the next model) or 2 (two models ahead)"),
              std::string::npos)
        << bad_depth.status().message();
  }
  auto rt = Runtime::create(cpu_runtime());
  ASSERT_TRUE(rt.ok());
  SessionOptions gpu = small(160);
  gpu.device = DeviceKind::kCUDA;
  auto g = (*rt)->open(fastest.cfg, fastest.weights, gpu);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("runtime on cpu"), std::string::npos) << g.status().message();
  auto zero = (*rt)->open(fastest.cfg, fastest.weights, small(160), 0.0);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.status().message().find("a model's weight must be > 0"), std::string::npos)
      << zero.status().message();
  auto missing = (*rt)->open(fastest.cfg, "/nonexistent.weights", small(160));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent.weights"), std::string::npos);
  EXPECT_EQ((*rt)->memory().total(), 0);
}

}  // namespace
}  // namespace dlr
