// dlgen: writes seeded synthetic Darknet .weights for a cfg.
//
//   dlgen CFG OUT.weights [--seed N] [--header-version 0.2.5|0.1.0] [--seen N]
//         [--objectness-bias B]
//
// stdout: "wrote OUT (N bytes, L conv layers) in X s". Exit codes: 0 ok,
// 2 usage error, 1 any other error (one line "dlgen: <message>" on stderr).

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <string>

#include "loaders/network_desc.h"
#include "loaders/synthetic_weights.h"
#include "loaders/weights_file.h"
#include "runtime/core/log.h"
#include "tools/common/command_line.h"
#include "tools/common/tool_support.h"

namespace {

// "MAJOR.MINOR.REVISION" with non-negative integers; false when malformed.
bool parse_version(const std::string& s, dlr::WeightsHeader* h) {
  int major = 0, minor = 0, revision = 0;
  char tail = 0;
  if (std::sscanf(s.c_str(), "%d.%d.%d%c", &major, &minor, &revision, &tail) != 3) return false;
  if (major < 0 || minor < 0 || revision < 0 || major > 1000 || minor > 1000) return false;
  h->major = major;
  h->minor = minor;
  h->revision = revision;
  return true;
}

}  // namespace

namespace {

int tool_main(int argc, char** argv) {
  dlr::init_logging();
  CLI::App app{"dlgen: write seeded synthetic Darknet .weights matching a .cfg"};
  std::string cfg_path, out_path, version = "0.2.5";
  uint64_t seed = 1, seen = 0;
  app.add_option("cfg", cfg_path, "Darknet .cfg file")->required();
  app.add_option("out", out_path, "output .weights file")->required();
  app.add_option("--seed", seed, "random seed (same seed -> identical bytes)")->capture_default_str();
  app.add_option("--header-version", version, "header version MAJOR.MINOR.REVISION: 0.2.5 (64-bit seen) or 0.1.0 (32-bit seen)")
      ->capture_default_str();
  app.add_option("--seen", seen, "images-seen counter stored in the header")->capture_default_str();
  float objectness_bias = dlr::SyntheticOptions{}.objectness_bias;
  app.add_option("--objectness-bias", objectness_bias,
                 "added to the objectness bias of every [yolo] head (higher: more detections)")
      ->capture_default_str();
  if (const int rc = dlr::tools::parse_command_line(app, argc, argv, "dlgen"); rc >= 0) return rc;

  dlr::SyntheticOptions options;
  options.seed = seed;
  options.objectness_bias = objectness_bias;
  if (!parse_version(version, &options.header)) {
    std::fprintf(stderr, "dlgen: --header-version: expected MAJOR.MINOR.REVISION such as 0.2.5 or 0.1.0, got '%s'\n",
                 version.c_str());
    return 2;
  }
  options.header.seen = seen;
  if (options.header.header_bytes() == 16 && seen > 0xFFFFFFFFull) {
    std::fprintf(stderr, "dlgen: --seen %llu does not fit the 32-bit counter of header version %s\n",
                 static_cast<unsigned long long>(seen), version.c_str());
    return 2;
  }

  const auto t0 = std::chrono::steady_clock::now();
  dlr::Expected<dlr::NetworkDesc> net = dlr::parse_network_cfg(cfg_path);
  if (!net.ok()) {
    std::fprintf(stderr, "dlgen: %s\n", net.status().message().c_str());
    return 1;
  }
  for (const std::string& w : net->warnings) DLR_LOG_WARN("{}", w);
  dlr::Status st = dlr::write_synthetic_weights(*net, out_path, options);
  if (!st.ok()) {
    std::fprintf(stderr, "dlgen: %s\n", st.message().c_str());
    return 1;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  const dlr::WeightsIndex index = dlr::build_weights_index(*net, options.header);
  int convs = 0;
  for (const dlr::LayerDesc& l : net->layers) convs += l.kind == dlr::LayerKind::kConv;
  std::printf("wrote %s (%llu bytes, %d conv layers) in %.2f s\n", out_path.c_str(),
              static_cast<unsigned long long>(index.payload_end), convs, secs);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return dlr::tools::guarded_main("dlgen", [&] { return tool_main(argc, argv); });
}
