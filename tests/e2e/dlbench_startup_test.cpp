// dlbench's startup report on the CPU (tools/dlbench/startup.h): the phases a CPU open
// has (parse, compile, engine: weights and buffers) and none of the CUDA ones (context,
// cuDNN handle, convolution set-up, graph), neither in the startup line nor in the JSON.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"

namespace dlr {
namespace {

TEST(DlbenchStartup, ACpuRunReportsNoCudaPhases) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string w = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  if (cfg.empty() || w.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string json = test::temp_dir() + "/startup.json";
  const auto r = test::run_tool("dlbench " + cfg + " --weights " + w +
                                " --device cpu --size 160 --iters 1 --warmup 0 --threads 1 --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  const size_t line = r.out.find("startup: open ");
  ASSERT_NE(line, std::string::npos) << r.out;
  const std::string startup = r.out.substr(line, r.out.find('\n', line) - line);
  EXPECT_NE(startup.find("[weights "), std::string::npos) << startup;
  for (const char* cuda : {"CUDA context", "cuDNN", "graph", "convolutions", "device "})
    EXPECT_EQ(startup.find(cuda), std::string::npos) << cuda << " in: " << startup;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  const nlohmann::json& su = j["results"][0]["startup"];
  ASSERT_TRUE(su.contains("open_ms")) << su.dump();
  EXPECT_GT(su["engine"]["weights_ms"].get<double>(), 0.0) << su.dump();
  for (const char* key : {"context_ms", "context_cudnn_ms", "context_prime_ms", "context_wait_ms", "graph_ms"})
    EXPECT_FALSE(su.contains(key)) << key;
  for (const char* key : {"device_ms", "cudnn_handle_ms", "conv_setup_ms", "convs", "algo_cache"})
    EXPECT_FALSE(su["engine"].contains(key)) << key;
}

}  // namespace
}  // namespace dlr
