#include "runtime/weight_source.h"

#include <cstring>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/prepare.h"
#include "loaders/weights_file.h"
#include "runtime/core/half.h"

namespace dlr {
namespace {

class FileSource final : public WeightSource {
 public:
  FileSource(const NetworkDesc& net, const WeightsFile& file) : m_net(net), m_file(file) {}

  Status prepare(const WeightBlob& blob, Layout layout, void* dst) override {
    if (blob.layer < 0 || blob.layer >= int(m_net.layers.size()))
      return internal_error(m_file.path() + ": plan blob names layer " + std::to_string(blob.layer) +
                            ", which the network does not have");
    const LayerDesc& layer = m_net.layers[size_t(blob.layer)];
    const PreparedSizes sizes = prepared_sizes(layer);
    if (sizes.weights != blob.weight_elems || sizes.bias != blob.bias_elems)
      return internal_error("layer " + std::to_string(layer.index) + ": plan blob does not match the layer");
    m_tmp.resize(size_t(sizes.total()));
    float* w = m_tmp.data();
    float* b = w + sizes.weights;
    DLR_RETURN_IF_ERROR(prepare_conv(layer, m_file, w, b));
    if (blob.dtype == DType::kF16) DLR_RETURN_IF_ERROR(check_fp16_range(layer, m_file.path(), w));

    char* out = static_cast<char*>(dst);
    std::memset(out, 0, size_t(blob.bytes));
    const ConvParams& p = layer.conv();
    const int64_t cin = layer.in.c / p.groups;
    const int64_t kk = int64_t(p.size) * p.size;
    auto src_index = [&](int64_t o, int64_t i) -> int64_t {  // destination element i of filter o -> OIHW index
      if (layout == Layout::kNCHW) return o * cin * kk + i;
      const int64_t ci = i % cin, k = i / cin;  // OHWI: [o][ky][kx][ci]
      return o * cin * kk + ci * kk + k;
    };
    const int64_t per_filter = cin * kk;
    for (int64_t o = 0; o < p.filters; ++o) {
      for (int64_t i = 0; i < per_filter; ++i) {
        const float v = w[src_index(o, i)];
        const int64_t di = o * per_filter + i;
        if (blob.dtype == DType::kF16) {
          const uint16_t h = float_to_half(v);
          std::memcpy(out + di * 2, &h, 2);
        } else {
          std::memcpy(out + di * 4, &v, 4);
        }
      }
    }
    std::memcpy(out + blob.bias_offset, b, size_t(sizes.bias) * 4);
    return Status();
  }

  const std::string& name() const override { return m_file.path(); }

 private:
  const NetworkDesc& m_net;
  const WeightsFile& m_file;
  std::vector<float> m_tmp;
};

}  // namespace

std::unique_ptr<WeightSource> weights_file_source(const NetworkDesc& net, const WeightsFile& file) {
  return std::make_unique<FileSource>(net, file);
}

}  // namespace dlr
