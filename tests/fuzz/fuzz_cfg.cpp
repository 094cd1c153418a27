// libFuzzer harness: cfg text -> lexer, parser (with and without size overrides),
// summary, weight counts and the weights index. Checks the NetworkDesc
// invariants the rest of dlrun relies on (shapes positive and bounded, weight
// counts within limits) and that every error is one printable line.
#include <cstddef>
#include <cstdint>
#include <string>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "tests/fuzz/fuzz_check.h"

namespace {

void check_network(const dlr::NetworkDesc& net) {
  using dlr::fuzz::require;
  require(!net.layers.empty() && net.layers.size() <= size_t(dlr::limits::kLayers), "layer count");
  require(int64_t(net.net.width) * net.net.height <= dlr::limits::kInputPixels, "input pixels");
  for (const dlr::LayerDesc& l : net.layers) {
    require(l.out.c > 0 && l.out.h > 0 && l.out.w > 0 && l.out.count() <= INT32_MAX, "output shape",
            std::to_string(l.index));
    for (int in : l.inputs) require(in >= -1 && in < l.index, "input index", std::to_string(l.index));
    require(l.weight_count() <= dlr::limits::kLayerWeights, "layer weights", std::to_string(l.index));
  }
  require(net.total_file_floats() <= dlr::limits::kNetworkWeights, "network weights");
  require(dlr::check_weight_counts(net, "fuzz").ok(), "check_weight_counts");
  const dlr::WeightsIndex index = dlr::build_weights_index(net, dlr::WeightsHeader{});
  require(index.payload_end == 20 + 4 * uint64_t(net.total_file_floats()), "index size");
  (void)dlr::network_summary(net);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > (size_t(1) << 16)) return 0;  // the size cap itself is a unit test
  const std::string text(reinterpret_cast<const char*>(data), size);
  dlr::Expected<dlr::NetworkDesc> net = dlr::parse_network_cfg_text(text, "fuzz.cfg");
  if (!net.ok()) {
    dlr::fuzz::require_one_line(net.status());
    return 0;
  }
  check_network(*net);
  // The same cfg at another input size: must parse or fail with a one-line error.
  dlr::CfgOptions o;
  o.width = 32 + int(size % 97) * 8;
  o.height = 32 + int(data[0]) * 4;
  dlr::Expected<dlr::NetworkDesc> other = dlr::parse_network_cfg_text(text, "fuzz.cfg", o);
  if (other.ok())
    check_network(*other);
  else
    dlr::fuzz::require_one_line(other.status());
  return 0;
}
