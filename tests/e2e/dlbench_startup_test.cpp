// dlbench's startup report on the CPU (tools/dlbench/startup.h): the phases a CPU open
// has (parse, compile, engine: weights and buffers) and none of the CUDA ones (context,
// cuDNN handle, convolution set-up, graph), neither in the startup line nor in the JSON;
// and --startup N (tools/dlbench/startup_report.h): N fresh processes, each timed, with
// the medians of their parts, and no floor on the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <utility>
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

TEST(DlbenchStartup, ReportOverFreshProcesses) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  const std::string w = test::required_shared_file("weights/yolo-fastest-1.1.weights");
  if (cfg.empty() || w.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string json = test::temp_dir() + "/startup_report.json";
  const auto r = test::run_tool("dlbench " + cfg + " --weights " + w +
                                " --device cpu --size 160 --iters 7 --threads 1 --startup 2 --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("startup over 2 fresh processes each, no other process holding the GPU"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("process: spawn to main "), std::string::npos) << r.out;
  std::ifstream f(json);
  const nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  ASSERT_FALSE(j.is_discarded());
  EXPECT_EQ(j["startup_report"]["rounds"].get<int>(), 2);
  ASSERT_EQ(j["startup_report"]["conditions"].size(), 1u) << "the default --startup-gpu is idle alone";
  const nlohmann::json& rep = j["startup_report"]["conditions"][0];
  EXPECT_EQ(rep["gpu"].get<std::string>(), "idle");
  EXPECT_FALSE(rep.contains("floor")) << "no floor on the CPU";
  ASSERT_EQ(rep["configs"].size(), 1u) << rep.dump();
  const nlohmann::json& c = rep["configs"][0];
  ASSERT_EQ(c["runs"].size(), 2u);
  for (const nlohmann::json& run : c["runs"]) {
    EXPECT_GT(run["exec_to_exit_ms"].get<double>(), 0.0);
    EXPECT_GE(run["startup"]["process_age_at_first_result_ms"].get<double>(), 0.0);
    EXPECT_LE(run["startup"]["first_inference_ms"].get<double>(), run["exec_to_exit_ms"].get<double>());
    // The child's own start and end, read from its clock against this process's.
    const double start = run["startup"]["process_start_ms"].get<double>();
    const double end = run["startup"]["process_end_ms"].get<double>();
    EXPECT_GT(start, 0.0);
    EXPECT_GE(end, 0.0);
    EXPECT_LT(start + end + run["startup"]["open_ms"].get<double>(), run["exec_to_exit_ms"].get<double>());
  }
  EXPECT_GE(c["exec_to_exit"]["max_ms"].get<double>(), c["exec_to_exit"]["median_ms"].get<double>());
  EXPECT_GE(c["exec_to_exit"]["median_ms"].get<double>(), c["exec_to_exit"]["min_ms"].get<double>());
  for (const char* part : {"open_ms", "engine.weights_ms", "first_inference_ms", "process_age_at_first_result_ms",
                           "process_start_ms", "process_end_ms"})
    EXPECT_TRUE(c["median_parts"].contains(part)) << part << " in " << c["median_parts"].dump();
}

// --startup-gpu: each value refused with one line naming the option and what it needs.
TEST(DlbenchStartup, GpuConditionRefusals) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  if (cfg.empty()) GTEST_SKIP() << "../shared is not available";
  const std::string base = "dlbench " + cfg + " --synthetic --size 160 --threads 1 ";
  const std::pair<std::string, std::string> cases[] = {
      {"--device cpu --startup 1 --startup-gpu held", "--startup-gpu held: needs --device cuda"},
      {"--device cpu --startup 1 --startup-gpu idle,busy", "--startup-gpu: 'busy' is not idle or held"},
      {"--device cpu --startup 1 --startup-gpu idle,idle", "--startup-gpu: give idle, held or idle,held, each once"},
      {"--device cpu --startup-gpu held", "--startup-gpu applies to --startup N"},
  };
  for (const auto& [flags, message] : cases) {
    const auto r = test::run_tool(base + flags);
    EXPECT_NE(r.code, 0) << flags;
    EXPECT_NE(r.err.find(message), std::string::npos) << flags << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << flags << ": " << r.err;
  }
}

// --hold-gpu with its input at an end: where a GPU is usable it says "held" and ends at
// once; where none is (CI, a build without CUDA) one line on stderr, a failing exit and
// no "held", so a --startup-gpu held report stops at its first round.
TEST(DlbenchStartup, HoldGpuEndsWithItsInput) {
  const auto r = test::run_tool("dlbench --hold-gpu < /dev/null");
  if (r.code == 0) {
    EXPECT_EQ(r.out, "held\n");
    return;
  }
  EXPECT_EQ(r.out.find("held"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("dlbench: --hold-gpu: "), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

}  // namespace
}  // namespace dlr
