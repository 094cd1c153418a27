// libFuzzer harness: a cfg and a .weights file together -> parser,
// WeightsFile::open (header, index, exact size check, mapping) and
// prepare_conv (batch-norm fold + value checks) of every conv layer, and the
// fp16 range check. Input: 2 bytes little-endian cfg length, the cfg text, then
// the .weights bytes (written to a memfd that WeightsFile::open reads by path).
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/prepare.h"
#include "loaders/weights_file.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

// One memfd for the whole run, rewritten for every input.
int weights_fd() {
  static const int fd = memfd_create("fuzz.weights", MFD_CLOEXEC);
  dlr::fuzz::require(fd >= 0, "memfd_create");
  return fd;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const size_t cfg_len = size_t(data[0]) | size_t(data[1]) << 8;
  if (cfg_len > size - 2) return 0;
  const std::string cfg(reinterpret_cast<const char*>(data + 2), cfg_len);
  dlr::Expected<dlr::NetworkDesc> net = dlr::parse_network_cfg_text(cfg, "fuzz.cfg");
  if (!net.ok()) return 0;  // the cfg harness covers parser errors
  if (net->total_file_floats() > (int64_t(1) << 20)) return 0;  // keep executions fast

  const int fd = weights_fd();
  const uint8_t* w = data + 2 + cfg_len;
  const size_t wn = size - 2 - cfg_len;
  dlr::fuzz::require(ftruncate(fd, 0) == 0 && (wn == 0 || pwrite(fd, w, wn, 0) == ssize_t(wn)), "memfd write");
  const std::string path = "/proc/self/fd/" + std::to_string(fd);

  dlr::Expected<dlr::WeightsFile> file = dlr::WeightsFile::open(path, *net);
  if (!file.ok()) {
    dlr::fuzz::require_one_line(file.status());
    return 0;
  }
  dlr::fuzz::require(file->file_bytes() == wn && file->index().payload_end == wn, "size check");
  std::vector<float> weights, bias;
  std::vector<std::string> warnings;
  for (const dlr::LayerDesc& l : net->layers) {
    if (l.kind != dlr::LayerKind::kConv) continue;
    const dlr::PreparedSizes s = dlr::prepared_sizes(l);
    weights.assign(size_t(s.weights), 0.0f);
    bias.assign(size_t(s.bias), 0.0f);
    const dlr::Status st = dlr::prepare_conv(l, *file, weights.data(), bias.data(), &warnings);
    dlr::fuzz::require_one_line(st);
    if (!st.ok()) continue;
    for (float v : weights) dlr::fuzz::require(v - v == 0.0f, "non-finite prepared weight accepted");
    for (float v : bias) dlr::fuzz::require(v - v == 0.0f, "non-finite prepared bias accepted");
    dlr::fuzz::require_one_line(dlr::check_fp16_range(l, path, weights.data()));
  }
  for (const std::string& m : warnings) dlr::fuzz::require_one_line(dlr::internal_error(m));
  return 0;
}
