// Fault injection under ASan/LSan (built with -DDLR_FUZZ=ON, run by scripts/fuzz.sh
// and ctest's fault_injection_leaks): opens a CPU session of CFG (at 64x64, with
// synthetic weights) while failing every host allocation and file operation in
// turn (runtime/core/fault_injection.h). Each failure must be a one-line error
// naming its site; then a clean open must detect. LSan reports anything a failed
// open leaked when the process exits. Usage: dlr_fault_leak_check CFG TMPDIR
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "loaders/synthetic_weights.h"
#include "runtime/core/fault_injection.h"
#include "runtime/session.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: dlr_fault_leak_check CFG TMPDIR\n");
    return 2;
  }
  auto net = dlr::parse_network_cfg(argv[1]);
  if (!net.ok()) return std::fprintf(stderr, "%s\n", net.status().message().c_str()), 1;
  const std::string weights = std::string(argv[2]) + "/fault_leak_check.weights";
  dlr::Status st = dlr::write_synthetic_weights(*net, weights, dlr::SyntheticOptions{});
  if (!st.ok()) return std::fprintf(stderr, "%s\n", st.message().c_str()), 1;
  dlr::SessionOptions o;
  o.width = o.height = 64;
  std::map<std::string, int> seen;
  int failures = 0;
  for (int n = 1; n < 100; ++n) {
    dlr::fault::arm(n);
    auto s = dlr::Session::open(argv[1], weights, o);
    if (dlr::fault::count() < n) {
      if (!s.ok()) ++failures, std::fprintf(stderr, "open without a fault failed: %s\n", s.status().message().c_str());
      break;
    }
    const std::string m = s.ok() ? "" : s.status().message();
    const size_t at = m.find(" [fault injected at ");
    if (s.ok() || at == std::string::npos || m.find('\n') != std::string::npos) {
      ++failures;
      std::fprintf(stderr, "fault %d: not reported as one line naming the site: '%s'\n", n, m.c_str());
      continue;
    }
    ++seen[m.substr(at + 20, m.size() - at - 21)];
  }
  dlr::fault::disarm();
  auto s = dlr::Session::open(argv[1], weights, o);
  std::vector<uint8_t> gray(32 * 32 * 3, 90);
  dlr::ImageView img;
  img.data = gray.data();
  img.width = img.height = 32;
  img.row_stride = 32 * 3;
  if (!s.ok() || !(*s)->detect(img).ok()) ++failures, std::fprintf(stderr, "the session is not usable afterwards\n");
  std::remove(weights.c_str());
  std::printf("fault injection: ");
  for (const auto& [site, k] : seen) std::printf("%s x%d ", site.c_str(), k);
  std::printf("-> %s\n", failures == 0 ? "every fault reported on one line naming its site" : "FAILED");
  return failures == 0 ? 0 : 1;
}
