// The public Runtime (<dlrun/runtime.h>): sessions opened on one runtime give the
// detections of the same networks opened alone, from several threads at once; the
// runtime's memory names each part and shares the activations; sessions outlive the
// runtime handle; errors are values. On the CPU here; on the GPU where there is one
// (the budget then streams weights).
#include <gtest/gtest.h>

#include <dlrun/dlrun.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <thread>

#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"

namespace {


void expect_same(const std::vector<dlrun::Detection>& got, const std::vector<dlrun::Detection>& want,
                 const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].class_id, want[i].class_id) << what << " detection " << i;
    EXPECT_EQ(got[i].prob, want[i].prob) << what << " detection " << i;
    EXPECT_EQ(got[i].box.x, want[i].box.x) << what << " detection " << i;
    EXPECT_EQ(got[i].box.w, want[i].box.w) << what << " detection " << i;
  }
}

class PublicRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    // The repository's copy; on a machine without the source tree (the GPU machine runs
    // a copy of the binaries), the shared folder's.
    m_cfg = dlr::test::source_file("models/yolov4-tiny.cfg");
    if (!std::ifstream(m_cfg)) m_cfg = dlr::test::required_shared_file("models/yolov4-tiny.cfg");
    ASSERT_FALSE(m_cfg.empty());
    m_weights = dlr::test::synthetic_weights(m_cfg);
    ASSERT_FALSE(m_weights.empty());
    m_pixels = dlr::test::noise_pixels(200, 150, 11);
    m_image.data = m_pixels.data();
    m_image.width = 200;
    m_image.height = 150;
  }
  struct Net {
    std::string cfg, weights;
    int size = 0;
  };
  // Two networks, by default yolov4-tiny at 160 and at 128 (different arenas).
  std::vector<Net> nets() const { return {{m_cfg, m_weights, 160}, {m_cfg, m_weights, 128}}; }
  // Low threshold (noise gives detections); fp16 on the GPU.
  dlrun::Options options(int size, dlrun::Device device) const {
    dlrun::Options o;
    o.device = device;
    o.width = o.height = size;
    o.thresh = 0.05f;
    o.threads = 1;
    if (device == dlrun::Device::kCUDA) o.precision = dlrun::Precision::kFP16;
    return o;
  }
  // Device bytes (weights + activations + workspace) of the networks opened alone.
  int64_t alone_bytes(const std::vector<Net>& two, dlrun::Device device) const {
    int64_t n = 0;
    for (const Net& net : two) {
      auto s = dlrun::Session::open(net.cfg, net.weights, options(net.size, device));
      EXPECT_TRUE(s.ok()) << s.error().to_string();
      if (!s.ok()) return 0;
      EXPECT_TRUE(s->detect(m_image).ok());
      const dlrun::MemoryReport m = s->last_report().memory;
      n += m.weights + m.activations + m.workspace;
    }
    return n;
  }
  // Opens both networks on `rt` and checks them against each network opened alone,
  // one thread per network, `rounds` detections each; `streams`: the runtime's memory
  // report must show weights streamed per inference.
  void check_two_networks(dlrun::Runtime& rt, const std::vector<Net>& two, dlrun::Device device, int rounds,
                          bool streams = false) {
    std::vector<std::vector<dlrun::Detection>> want;
    for (const Net& net : two) {
      auto alone = dlrun::Session::open(net.cfg, net.weights, options(net.size, device));
      ASSERT_TRUE(alone.ok()) << alone.error().to_string();
      auto d = alone->detect(m_image);
      ASSERT_TRUE(d.ok()) << d.error().to_string();
      ASSERT_FALSE(d->empty()) << "noise at threshold 0.05 should give detections";
      want.push_back(std::move(*d));
    }
    auto a = rt.open(two[0].cfg, two[0].weights, options(two[0].size, device));
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    auto b = rt.open(two[1].cfg, two[1].weights, options(two[1].size, device), 2.0);
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    dlrun::Session* sessions[2] = {&*a, &*b};
    int failures[2] = {0, 0};
    std::vector<std::thread> threads;
    for (int t = 0; t < 2; ++t)
      threads.emplace_back([&, t] {
        for (int i = 0; i < rounds; ++i) {
          auto got = sessions[t]->detect(m_image);
          if (!got.ok() || got->size() != want[size_t(t)].size()) {
            ++failures[t];
            continue;
          }
          for (size_t k = 0; k < got->size(); ++k)
            if ((*got)[k].prob != want[size_t(t)][k].prob || (*got)[k].box.x != want[size_t(t)][k].box.x) {
              ++failures[t];
              break;
            }
        }
      });
    for (auto& th : threads) th.join();
    EXPECT_EQ(failures[0], 0) << "the first network on the runtime differs from it alone";
    EXPECT_EQ(failures[1], 0) << "the second network on the runtime differs from it alone";
    auto again = a->detect(m_image);
    ASSERT_TRUE(again.ok());
    expect_same(*again, want[0], "after the threads");

    const dlrun::RuntimeMemory mem = rt.memory();
    ASSERT_EQ(mem.networks.size(), 2u);
    EXPECT_EQ(mem.networks[0].name, two[0].cfg.substr(two[0].cfg.find_last_of('/') + 1));
    EXPECT_GT(mem.networks[0].activations, mem.networks[1].activations);
    EXPECT_GE(mem.activations, mem.networks[0].activations) << "the shared arena holds the largest";
    EXPECT_LT(mem.activations, mem.networks[0].activations + mem.networks[1].activations);
    EXPECT_GT(mem.weights, 0);
    EXPECT_EQ(mem.total(), mem.activations + mem.workspace + mem.weights);
    if (device == dlrun::Device::kCUDA) {
      EXPECT_FALSE(rt.plan_text().empty());
    }
    EXPECT_LE(mem.total(), mem.budget > 0 ? mem.budget : mem.total());
    int64_t streamed = 0;
    for (const auto& n : mem.networks) {
      streamed += n.streamed;
      std::printf("%s: weight budget %lld, resident %lld, pool %lld, streamed %lld, prefetched %lld\n",
                  n.name.c_str(), static_cast<long long>(n.weight_budget), static_cast<long long>(n.resident),
                  static_cast<long long>(n.pool), static_cast<long long>(n.streamed),
                  static_cast<long long>(n.prefetched));
    }
    EXPECT_EQ(streamed > 0, streams);
  }
  std::string m_cfg, m_weights;
  std::vector<uint8_t> m_pixels;
  dlrun::ImageView m_image;
};

TEST_F(PublicRuntime, CpuSessionsMatchTheNetworksAloneFromTwoThreads) {
  dlrun::RuntimeOptions ro;
  ro.device = dlrun::Device::kCPU;
  auto rt = dlrun::Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.error().to_string();
  EXPECT_EQ(rt->options().device, dlrun::Device::kCPU);
  check_two_networks(*rt, nets(), dlrun::Device::kCPU, 4);
}

TEST_F(PublicRuntime, SessionsOutliveTheRuntimeHandle) {
  dlrun::RuntimeOptions ro;
  ro.device = dlrun::Device::kCPU;
  auto want = dlrun::Session::open(m_cfg, m_weights, options(160, dlrun::Device::kCPU));
  ASSERT_TRUE(want.ok());
  auto w = want->detect(m_image);
  ASSERT_TRUE(w.ok());
  std::unique_ptr<dlrun::Session> kept;
  {
    auto rt = dlrun::Runtime::create(ro);
    ASSERT_TRUE(rt.ok()) << rt.error().to_string();
    auto s = rt->open(m_cfg, m_weights, options(160, dlrun::Device::kCPU));
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    kept = std::make_unique<dlrun::Session>(std::move(*s));
  }  // the handle goes; the runtime stays while the session needs it
  auto got = kept->detect(m_image);
  ASSERT_TRUE(got.ok()) << got.error().to_string();
  expect_same(*got, *w, "after the handle was destroyed");
  EXPECT_EQ(kept->info().input_width, 160);
  kept.reset();  // closes the session, then the runtime
}

TEST_F(PublicRuntime, ErrorsAreValues) {
  dlrun::RuntimeOptions ro;
  ro.device = dlrun::Device::kCPU;
  ro.budget = "lots";
  auto bad = dlrun::Runtime::create(ro);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().message.find("lots"), std::string::npos) << bad.error().message;
  EXPECT_EQ(bad.error().message.find('\n'), std::string::npos);

  ro.budget = "all";
  auto rt = dlrun::Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.error().to_string();
  auto cuda = rt->open(m_cfg, m_weights, options(160, dlrun::Device::kCUDA));
  ASSERT_FALSE(cuda.ok());
  EXPECT_NE(cuda.error().message.find("runtime on cpu"), std::string::npos) << cuda.error().message;
  auto zero = rt->open(m_cfg, m_weights, options(160, dlrun::Device::kCPU), 0.0);
  ASSERT_FALSE(zero.ok());
  EXPECT_NE(zero.error().message.find("weight must be > 0"), std::string::npos) << zero.error().message;
  auto missing = rt->open("/nonexistent/x.cfg", m_weights, options(160, dlrun::Device::kCPU));
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("/nonexistent/x.cfg"), std::string::npos) << missing.error().message;
  EXPECT_TRUE(rt->memory().networks.empty()) << "a failed open leaves nothing behind";

  dlrun::Runtime moved = std::move(*rt);
  auto gone = rt->open(m_cfg, m_weights, options(160, dlrun::Device::kCPU));
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("moved from"), std::string::npos) << gone.error().message;
  EXPECT_TRUE(rt->memory().networks.empty());
  auto fine = moved.open(m_cfg, m_weights, options(160, dlrun::Device::kCPU));
  EXPECT_TRUE(fine.ok()) << fine.error().to_string();
}

// On a GPU (fp16), yolov4 @160 and yolov4-tiny @128: a budget 32 MiB below what the
// runtime holds with every weight resident, so that yolov4 streams; the detections stay
// those of preload alone.
TEST_F(PublicRuntime, GpuSessionsMatchTheNetworksAloneUnderAStreamingBudget) {
  if (!dlrun::has_cuda()) GTEST_SKIP() << "built without CUDA";
  dlrun::RuntimeOptions ro;
  ro.budget = "all";
  if (!dlrun::Runtime::create(ro).ok()) GTEST_SKIP() << "no CUDA device";
  const std::string v4 = dlr::test::required_shared_file("models/yolov4.cfg");
  if (v4.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  const std::vector<Net> two = {{v4, dlr::test::synthetic_weights(v4), 160}, {m_cfg, m_weights, 128}};
  ASSERT_FALSE(two[0].weights.empty());
  int64_t resident = 0;
  {
    auto unlimited = dlrun::Runtime::create(ro);
    ASSERT_TRUE(unlimited.ok()) << unlimited.error().to_string();
    auto a = unlimited->open(two[0].cfg, two[0].weights, options(two[0].size, dlrun::Device::kCUDA));
    ASSERT_TRUE(a.ok()) << a.error().to_string();
    auto b = unlimited->open(two[1].cfg, two[1].weights, options(two[1].size, dlrun::Device::kCUDA));
    ASSERT_TRUE(b.ok()) << b.error().to_string();
    resident = unlimited->memory().total();
    EXPECT_LT(resident, alone_bytes(two, dlrun::Device::kCUDA)) << "shared activations and workspace save nothing";
  }
  const int64_t budget = resident - (int64_t(32) << 20);
  ro.budget = std::to_string(budget);
  auto rt = dlrun::Runtime::create(ro);
  ASSERT_TRUE(rt.ok()) << rt.error().to_string();
  EXPECT_EQ(rt->memory().budget, budget);
  check_two_networks(*rt, two, dlrun::Device::kCUDA, 50, true);
  EXPECT_TRUE(rt->memory().networks.empty()) << "closed sessions leave the runtime";
}

}  // namespace
