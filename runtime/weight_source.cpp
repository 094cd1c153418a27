#include "runtime/weight_source.h"

#include <atomic>
#include <cstring>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/prepare.h"
#include "loaders/weights_file.h"
#include "runtime/core/half.h"

namespace dlr {
namespace {

// Zeroes the blob's padding: after the weights up to the bias, and after the bias.
void zero_padding(const WeightBlob& blob, int64_t weight_bytes, char* out) {
  const int64_t bias_end = blob.bias_offset + blob.bias_elems * 4;
  if (blob.bias_offset > weight_bytes) std::memset(out + weight_bytes, 0, size_t(blob.bias_offset - weight_bytes));
  if (blob.bytes > bias_end) std::memset(out + bias_end, 0, size_t(blob.bytes - bias_end));
}

template <typename Store>
void convert_weights(const float* w, int64_t filters, int64_t cin, int64_t kk, Layout layout, char* out, Store store) {
  const int64_t per_filter = cin * kk, n = filters * per_filter;
  if (layout == Layout::kNCHW || kk == 1) {  // OIHW as folded (OHWI equals it for 1x1 filters)
    for (int64_t i = 0; i < n; ++i) store(out, i, w[i]);
    return;
  }
  for (int64_t o = 0; o < filters; ++o)  // OHWI: [o][ky][kx][ci] from [o][ci][ky][kx]
    for (int64_t k = 0; k < kk; ++k)
      for (int64_t ci = 0; ci < cin; ++ci) store(out, o * per_filter + k * cin + ci, w[o * per_filter + ci * kk + k]);
}

// The folded fp32 weights and bias of the layer a thread prepared last, so that the
// slices of a sliced layer (WeightBlob::filters or ::channels) fold it once per thread, not per slice.
struct FoldedLayer {
  uint64_t source = 0;  // FileSource::m_id (0: none)
  int layer = -1;
  std::vector<float> weights, bias;
};

std::atomic<uint64_t> g_next_source_id{1};

class FileSource final : public WeightSource {
 public:
  FileSource(const NetworkDesc& net, const WeightsFile& file) : m_net(net), m_file(file), m_id(g_next_source_id++) {}

  // fp32 OIHW (or 1x1) blobs are folded straight into dst; the others through a
  // per-thread scratch of the folded fp32 weights, converted in one pass.
  Status prepare(const WeightBlob& blob, Layout layout, void* dst) override {
    if (blob.layer < 0 || blob.layer >= int(m_net.layers.size()))
      return internal_error(m_file.path() + ": plan blob names layer " + std::to_string(blob.layer) +
                            ", which the network does not have");
    const LayerDesc& layer = m_net.layers[size_t(blob.layer)];
    if (blob.filters > 0 || blob.channels > 0) return prepare_slice(layer, blob, layout, static_cast<char*>(dst));
    const PreparedSizes sizes = prepared_sizes(layer);
    if (sizes.weights != blob.weight_elems || sizes.bias != blob.bias_elems)
      return internal_error("layer " + std::to_string(layer.index) + ": plan blob does not match the layer");
    const ConvParams& p = layer.conv();
    const int64_t cin = layer.in.c / p.groups;
    const int64_t kk = int64_t(p.size) * p.size;
    char* out = static_cast<char*>(dst);
    float* bias = reinterpret_cast<float*>(out + blob.bias_offset);
    const bool f16 = blob.dtype == DType::kF16;
    zero_padding(blob, sizes.weights * (f16 ? 2 : 4), out);
    if (!f16 && (layout == Layout::kNCHW || kk == 1))
      return prepare_conv(layer, m_file, reinterpret_cast<float*>(out), bias);
    thread_local std::vector<float> tmp;
    if (tmp.size() < size_t(sizes.weights)) tmp.resize(size_t(sizes.weights));
    DLR_RETURN_IF_ERROR(prepare_conv(layer, m_file, tmp.data(), bias));
    if (f16) {
      DLR_RETURN_IF_ERROR(check_fp16_range(layer, m_file.path(), tmp.data()));
      convert_weights(tmp.data(), p.filters, cin, kk, layout, out, [](char* o, int64_t i, float v) {
        const uint16_t h = float_to_half(v);
        std::memcpy(o + i * 2, &h, 2);
      });
    } else {
      convert_weights(tmp.data(), p.filters, cin, kk, layout, out,
                      [](char* o, int64_t i, float v) { std::memcpy(o + i * 4, &v, 4); });
    }
    return Status();
  }

  const std::string& name() const override { return m_file.path(); }
  bool concurrent() const override { return true; }

 private:
  // A slice of the layer from its folded fp32 weights (folded at most once per thread
  // and layer): filters [filter_begin, filter_begin + filters) with their bias, or input
  // channels [channel_begin, channel_begin + channels) of every filter (the bias only
  // when the blob has room for it: the last slice).
  Status prepare_slice(const LayerDesc& layer, const WeightBlob& blob, Layout layout, char* out) {
    const PreparedSizes sizes = prepared_sizes(layer);
    const ConvParams& p = layer.conv();
    const int64_t cin = layer.in.c / p.groups, kk = int64_t(p.size) * p.size;
    const bool by_filters = blob.filters > 0;
    const int filters = by_filters ? blob.filters : p.filters;
    const int channels = by_filters ? int(cin) : blob.channels;
    const bool fits = by_filters ? blob.filter_begin >= 0 && blob.filter_begin + blob.filters <= p.filters &&
                                       blob.bias_elems == blob.filters && blob.channels == 0
                                 : p.groups == 1 && blob.channel_begin >= 0 && blob.channel_begin + channels <= cin &&
                                       (blob.bias_elems == 0 || blob.bias_elems == p.filters);
    if (!fits || blob.weight_elems != int64_t(filters) * channels * kk)
      return internal_error("layer " + std::to_string(layer.index) + ": plan slice does not match the layer");
    thread_local FoldedLayer folded;
    if (folded.source != m_id || folded.layer != layer.index) {
      folded.source = 0;
      folded.weights.resize(size_t(sizes.weights));
      folded.bias.resize(size_t(sizes.bias));
      DLR_RETURN_IF_ERROR(prepare_conv(layer, m_file, folded.weights.data(), folded.bias.data()));
      if (blob.dtype == DType::kF16) DLR_RETURN_IF_ERROR(check_fp16_range(layer, m_file.path(), folded.weights.data()));
      folded.source = m_id;
      folded.layer = layer.index;
    }
    const bool f16 = blob.dtype == DType::kF16;
    zero_padding(blob, blob.weight_elems * (f16 ? 2 : 4), out);
    if (blob.bias_elems > 0)
      std::memcpy(out + blob.bias_offset, folded.bias.data() + blob.filter_begin, size_t(blob.bias_elems) * 4);
    const float* w = folded.weights.data() + int64_t(blob.filter_begin) * cin * kk;
    thread_local std::vector<float> part;  // a channel slice's weights, OIHW [filters][channels][k][k]
    if (!by_filters) {
      part.resize(size_t(blob.weight_elems));
      for (int64_t o = 0; o < filters; ++o)
        std::memcpy(part.data() + o * channels * kk, w + (o * cin + blob.channel_begin) * kk,
                    size_t(channels * kk) * 4);
      w = part.data();
    }
    if (f16) {
      convert_weights(w, filters, channels, kk, layout, out, [](char* o, int64_t i, float v) {
        const uint16_t h = float_to_half(v);
        std::memcpy(o + i * 2, &h, 2);
      });
    } else {
      convert_weights(w, filters, channels, kk, layout, out,
                      [](char* o, int64_t i, float v) { std::memcpy(o + i * 4, &v, 4); });
    }
    return Status();
  }

  const NetworkDesc& m_net;
  const WeightsFile& m_file;
  const uint64_t m_id;  // tells this source's folded layers from another's (FoldedLayer)
};

}  // namespace

std::unique_ptr<WeightSource> weights_file_source(const NetworkDesc& net, const WeightsFile& file) {
  return std::make_unique<FileSource>(net, file);
}

}  // namespace dlr
