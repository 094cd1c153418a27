// Int8 weights on the GPU (WeightFormat::kInt8): the expansion kernel gives the CPU's f32
// products bit for bit (f16: those products rounded to nearest); an int8 network in fp32
// matches the CPU's int8 run as fp32 matches fp32; in fp16, streamed through slots or the
// ring, from storage or with zero copy, with staged copies queued early or copied in runs,
// and planned with the expansions on a stage of their own, it is bit-identical to its own
// preload.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "kernels/cuda/cuda_handles.h"
#include "kernels/cuda/cuda_ops.h"
#include "runtime/compile/compiled_model.h"
#include "runtime/core/half.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/session_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"

namespace dlr {
namespace {

TEST(Int8Gpu, DequantizeKernelGivesTheCpuProducts) {
  DLR_REQUIRE_GPU();
  std::mt19937 rng(3);
  for (int64_t row : {int64_t(9), int64_t(64), int64_t(27), int64_t(4608)}) {
    const int64_t filters = 37, n = filters * row;
    std::vector<int8_t> q(static_cast<size_t>(n));
    std::vector<float> scales(static_cast<size_t>(filters));
    for (int8_t& v : q) v = int8_t(int(rng() % 255) - 127);
    for (float& s : scales) s = std::uniform_real_distribution<float>(1e-5f, 0.5f)(rng);
    std::vector<float> want(static_cast<size_t>(n));
    cpu::dequantize_weights(q.data(), scales.data(), filters, row, want.data(), 1);
    void *dq = nullptr, *ds = nullptr, *d32 = nullptr, *d16 = nullptr;
    ASSERT_EQ(cudaMalloc(&dq, size_t(n)), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&ds, size_t(filters) * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d32, size_t(n) * 4), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&d16, size_t(n) * 2), cudaSuccess);
    ASSERT_EQ(test::to_device(dq, q.data(), size_t(n)), cudaSuccess);
    ASSERT_EQ(test::to_device(ds, scales.data(), size_t(filters) * 4), cudaSuccess);
    const auto* src = static_cast<const int8_t*>(dq);
    const auto* sc = static_cast<const float*>(ds);
    ASSERT_TRUE(cuda::dequantize_weights(src, sc, filters, row, DType::kF32, d32, nullptr).ok());
    ASSERT_TRUE(cuda::dequantize_weights(src, sc, filters, row, DType::kF16, d16, nullptr).ok());
    std::vector<float> got32(static_cast<size_t>(n));
    std::vector<uint16_t> got16(static_cast<size_t>(n));
    ASSERT_EQ(cudaMemcpy(got32.data(), d32, size_t(n) * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got16.data(), d16, size_t(n) * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    for (void* p : {dq, ds, d32, d16}) cudaFree(p);
    EXPECT_EQ(0, std::memcmp(got32.data(), want.data(), size_t(n) * 4)) << "row " << row;
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got16[size_t(i)], float_to_half(want[size_t(i)])) << "row " << row << " " << i;
  }
  EXPECT_FALSE(cuda::dequantize_weights(nullptr, nullptr, 0, 9, DType::kF16, nullptr, nullptr).ok());
}

// One launch over several blobs (an expansion group) gives each blob's products as the
// single-blob kernel does, eight weights a thread or one (odd jobs start one element past
// an aligned address; counts not multiples of 8, rows shorter than 8 and rows crossing an
// eight); a batch of 0 or more than kMaxDequantJobs is refused.
TEST(Int8Gpu, BatchedExpansionGivesEachBlobsProducts) {
  DLR_REQUIRE_GPU();
  std::mt19937 rng(5);
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{32, 27}, {64, 9}, {255, 512}, {7, 4608}, {1, 1}, {96, 25}, {13, 7}, {3, 5}, {5, 3}, {40, 1}};
  const int n = int(shapes.size());
  std::vector<std::vector<float>> want(shapes.size());
  std::vector<cuda::DeviceBuffer> bufs;  // per job: int8, scales, f32 out, f16 out
  cuda::DequantJob j32[cuda::kMaxDequantJobs], j16[cuda::kMaxDequantJobs];
  for (int j = 0; j < n; ++j) {
    const int64_t filters = shapes[size_t(j)].first, row = shapes[size_t(j)].second, count = filters * row;
    std::vector<int8_t> q(static_cast<size_t>(count));
    std::vector<float> scales(static_cast<size_t>(filters));
    for (int8_t& v : q) v = int8_t(int(rng() % 255) - 127);
    for (float& s : scales) s = std::uniform_real_distribution<float>(1e-5f, 0.5f)(rng);
    want[size_t(j)].resize(size_t(count));
    cpu::dequantize_weights(q.data(), scales.data(), filters, row, want[size_t(j)].data(), 1);
    const size_t skew = size_t(j % 2);  // elements past the buffer's (256-byte aligned) start
    for (size_t bytes : {size_t(count) + 1, size_t(filters) * 4, size_t(count + 1) * 4, size_t(count + 1) * 2}) {
      Expected<cuda::DeviceBuffer> b = cuda::DeviceBuffer::alloc(bytes);
      ASSERT_TRUE(b.ok()) << b.status().to_string();
      bufs.push_back(std::move(*b));
    }
    cuda::DeviceBuffer* b = &bufs[bufs.size() - 4];
    const auto* src = static_cast<const int8_t*>(b[0].data()) + skew;
    ASSERT_EQ(test::to_device(static_cast<char*>(b[0].data()) + skew, q.data(), size_t(count)), cudaSuccess);
    ASSERT_EQ(test::to_device(b[1].data(), scales.data(), size_t(filters) * 4), cudaSuccess);
    j32[j] = {src, static_cast<const float*>(b[1].data()), static_cast<float*>(b[2].data()) + skew, filters, row};
    j16[j] = {src, static_cast<const float*>(b[1].data()), static_cast<uint16_t*>(b[3].data()) + skew, filters, row};
  }
  ASSERT_TRUE(cuda::dequantize_weights_batch(j32, n, DType::kF32, nullptr).ok());
  ASSERT_TRUE(cuda::dequantize_weights_batch(j16, n, DType::kF16, nullptr).ok());
  for (int j = 0; j < n; ++j) {
    const size_t count = want[size_t(j)].size();
    std::vector<float> got32(count);
    std::vector<uint16_t> got16(count);
    ASSERT_EQ(cudaMemcpy(got32.data(), j32[j].dst, count * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(got16.data(), j16[j].dst, count * 2, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(0, std::memcmp(got32.data(), want[size_t(j)].data(), count * 4)) << "job " << j;
    for (size_t i = 0; i < count; ++i) ASSERT_EQ(got16[i], float_to_half(want[size_t(j)][i])) << "job " << j << " " << i;
  }
  EXPECT_FALSE(cuda::dequantize_weights_batch(j32, 0, DType::kF32, nullptr).ok());
  EXPECT_FALSE(cuda::dequantize_weights_batch(j32, cuda::kMaxDequantJobs + 1, DType::kF32, nullptr).ok());
}

SessionOptions cuda_int8(Precision p, int size) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = p;
  o.width = o.height = size;
  o.weight_format = WeightFormat::kInt8;
  return o;
}

std::vector<std::vector<float>> heads(const std::string& cfg, const std::string& weights, const SessionOptions& o,
                                      const std::vector<float>& input) {
  auto s = Session::open(cfg, weights, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  if (!s.ok()) return {};
  auto first = test::network_heads(**s, input);
  EXPECT_TRUE(test::same_bits(test::network_heads(**s, input), first)) << "a second inference differs";
  return first;
}

// The real yolo-fastest-1.1 weights (grouped convs): CUDA fp32 int8 against the CPU's int8 run.
TEST(Int8Gpu, Fp32MatchesTheCpusInt8Run) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  const std::vector<float> input = test::random_input(1, 3, 320, 320, 4);
  SessionOptions cpu;
  cpu.width = cpu.height = 320;
  cpu.weight_format = WeightFormat::kInt8;
  const auto want = heads(cfg, weights, cpu, input);
  const auto got = heads(cfg, weights, cuda_int8(Precision::kFP32, 320), input);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_FALSE(want.empty());
  for (size_t h = 0; h < want.size(); ++h) {
    const double e = test::rel_error(got[h], want[h]);
    std::printf("yolo-fastest int8 @320 head %zu: CUDA fp32 against the CPU %.3g\n", h, e);
    EXPECT_LE(e, 1e-4) << "head " << h;
  }
}

// yolov4-tiny @320 fp16 (synthetic weights): streamed at the minimum pool through slots
// and the ring, whole layers and 256 KiB slices, from storage and with zero copy, each
// bit-identical to the int8 preload of the same plan.
TEST(Int8Gpu, StreamedStorageAndZeroCopyBitIdenticalToPreload) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::string cfg = test::required_shared_file("models/yolov4-tiny.cfg");
  if (cfg.empty()) return;
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const std::vector<float> input = test::random_input(1, 3, 320, 320, 6);
  for (int64_t slot : {int64_t(0), int64_t(256) << 10}) {
    SessionOptions o = cuda_int8(Precision::kFP16, 320);
    o.slot_bytes = slot;
    o.slice_by = SliceBy::kChannels;
    const auto pre = heads(cfg, weights, o, input);
    ASSERT_FALSE(pre.empty());
    const std::string what = "slot " + std::to_string(slot);
    for (PoolLayout pool : {PoolLayout::kSlots, PoolLayout::kRing}) {
      SessionOptions st = o;
      st.mode = WeightMode::kStream;
      st.weight_pool = pool;
      st.stage_whole = false;  // the preload's slices (layers kept whole: WholeStagingGpu)
      EXPECT_TRUE(test::same_bits(heads(cfg, weights, st, input), pre)) << what << " " << pool_layout_name(pool);
    }
    SessionOptions storage = o;
    storage.mode = WeightMode::kStream;
    storage.weights_from = WeightsFrom::kStorage;
    storage.prepared_path = test::temp_dir() + "/tiny-int8-" + std::to_string(slot) + ".dlrw";
    EXPECT_TRUE(test::same_bits(heads(cfg, weights, storage, input), pre)) << what << " storage";
    storage.zero_copy = 1;
    EXPECT_TRUE(test::same_bits(heads(cfg, weights, storage, input), pre)) << what << " zero copy";
    // And the fp16 run of the same network is near (the int8 weights are not fp16's).
    SessionOptions fp = o;
    fp.weight_format = WeightFormat::kFp;
    const auto ref = heads(cfg, weights, fp, input);
    ASSERT_EQ(ref.size(), pre.size());
    double worst = 0;
    for (size_t h = 0; h < ref.size(); ++h) worst = std::max(worst, test::rel_error(pre[h], ref[h]));
    std::printf("yolov4-tiny @320 fp16 %s: int8 heads against fp16 %.3g\n", what.c_str(), worst);
    EXPECT_GT(worst, 0.0);
  }
}

// yolov4 @608 fp16 with int8 weights in 8 MiB, streamed with `tweak` applied to the
// options: `check` sees each session's stream plan, and three inferences in a row must each
// be bit-identical to the int8 preload.
void int8_8mib_bit_identical(const std::vector<std::pair<std::string, std::function<void(SessionOptions*)>>>& tweaks,
                             const std::function<void(const std::string&, const CompiledModel&)>& check) {
  const std::string cfg = test::required_shared_file("models/yolov4.cfg");
  if (cfg.empty()) return;
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  const std::vector<float> input = test::random_input(1, 3, 608, 608, 8);
  const SessionOptions o = cuda_int8(Precision::kFP16, 608);
  const auto pre = heads(cfg, weights, o, input);
  ASSERT_FALSE(pre.empty());
  for (const auto& [what, tweak] : tweaks) {
    SessionOptions st = o;
    st.mode = WeightMode::kStream;
    st.weight_budget = *WeightBudget::parse("8MiB");
    tweak(&st);
    auto s = Session::open(cfg, weights, st);
    ASSERT_TRUE(s.ok()) << what << ": " << s.status().to_string();
    check(what, (*s)->model());
    for (int i = 0; i < 3; ++i)
      EXPECT_TRUE(test::same_bits(test::network_heads(**s, input), pre)) << what << ", inference " << i;
  }
}

// Blobs staged in idle activation bytes, some copied as soon as those bytes are free,
// ahead of ring units of earlier layers (SessionOptions::staging_early,
// StreamOptions::arena_early); the same with every staged copy late. Runs of staged blobs
// off here (StagedRunsBitIdenticalToPreload has them).
TEST(Int8Gpu, StagedCopiesQueuedEarlyBitIdenticalToPreload) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  auto early = [](bool on) {
    return [on](SessionOptions* o) {
      o->staging_early = on;
      o->staging_runs = false;
    };
  };
  int8_8mib_bit_identical({{"early", early(true)}, {"late", early(false)}}, [](const std::string& what,
                                                                              const CompiledModel& m) {
    const StreamPlan& sp = m.stream;
    std::printf("yolov4 int8 8 MiB, staging %s: %.2f MiB staged, %d copies ahead of ring units; %s\n", what.c_str(),
                double(sp.staged_bytes) / (1 << 20), sp.staged_copies_ahead(), m.notes.back().c_str());
    EXPECT_GT(sp.staged_bytes, 0);
    if (what == "early") {
      EXPECT_GT(sp.staged_copies_ahead(), 0) << "no staged copy was queued early: the path is not exercised";
    } else {
      EXPECT_EQ(sp.staged_copies_ahead(), 0);
    }
  });
}

// Runs of staged blobs (SessionOptions::staging_runs, StreamOptions::arena_joined):
// consecutive blobs placed together in idle activation bytes and copied in one unit, where
// the planner predicts them faster from this GPU's kernel times (two H100s planned 4 and 5
// runs, a third none); the same with every staged blob copied alone.
TEST(Int8Gpu, StagedRunsBitIdenticalToPreload) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  auto runs = [](bool on) { return [on](SessionOptions* o) { o->staging_runs = on; }; };
  int8_8mib_bit_identical({{"runs", runs(true)}, {"alone", runs(false)}}, [](const std::string& what,
                                                                            const CompiledModel& m) {
    int n_runs = 0;
    for (const TransferUnit& u : m.stream.units) n_runs += u.in_arena && u.last_blob > u.first_blob;
    std::printf("yolov4 int8 8 MiB, staged blobs %s: %.2f MiB staged, %d runs, predicted %.3f ms\n", what.c_str(),
                double(m.stream.staged_bytes) / (1 << 20), n_runs, m.predicted_ms);
    // Runs are the planner's choice from this GPU's kernel times: an H100 whose times
    // predict none plans none (the bits are then checked on that plan, and it says so).
    if (what == "runs" && n_runs == 0)
      std::printf("no run planned from this GPU's kernel times: the run path is not exercised here\n");
    if (what != "runs") {
      EXPECT_EQ(n_runs, 0);
    }
  });
}

// The expansion of int8 weights measured apart at open (Engine::measure_layer_ms) and
// planned on a stage of its own (SessionOptions::expansion_stage; the engine expanding a
// batch per copy), against the expansions counted in the kernel times: both bit-identical
// to the preload.
TEST(Int8Gpu, ExpansionStageBitIdenticalToPreload) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  auto stage = [](bool on) { return [on](SessionOptions* o) { o->expansion_stage = on; }; };
  int8_8mib_bit_identical({{"stage", stage(true)}, {"inline", stage(false)}}, [](const std::string& what,
                                                                                const CompiledModel& m) {
    ASSERT_EQ(m.expand_ms.size(), m.plan.steps.size()) << what << ": no expansion times measured at open";
    double expanding = 0, kernels = 0;
    for (const Step& st : m.plan.steps) {
      const double e = m.expand_ms[size_t(st.index)];
      expanding += e;
      kernels += m.layer_ms[size_t(st.index)];
      if (st.dequant < 0) {
        EXPECT_EQ(e, 0.0) << what << ": step " << st.index << " expands nothing";
      }
      EXPECT_LE(e, m.layer_ms[size_t(st.index)] + 1e-12) << what << ": step " << st.index;
    }
    std::printf("yolov4 int8 8 MiB, expansions %s: %.3f of %.3f ms at open expand, predicted %.3f ms, bound %.3f ms\n",
                what.c_str(), expanding, kernels, m.predicted_ms, m.lower_bound_ms);
    EXPECT_GT(expanding, 0.0);
    EXPECT_LT(expanding, kernels);
    if (what == "stage") {
      EXPECT_EQ(m.lower_bound_expanded_steps, 0);
    } else {
      EXPECT_GT(m.lower_bound_expanded_steps, 0);
    }
  });
}

}  // namespace
}  // namespace dlr
