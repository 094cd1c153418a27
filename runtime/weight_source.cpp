#include "runtime/weight_source.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <mutex>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/prepare.h"
#include "loaders/weights_file.h"
#include "runtime/core/half.h"
#include "runtime/core/log.h"

namespace dlr {
namespace {

// Zeroes the blob's padding: after the weights (int8: and after the scales) up to the
// bias, and after the bias.
void zero_padding(const WeightBlob& blob, int64_t weight_bytes, char* out) {
  auto zero = [&](int64_t from, int64_t to) {
    if (to > from) std::memset(out + from, 0, size_t(to - from));
  };
  const int64_t bias_end = blob.bias_offset + blob.bias_elems * 4;
  if (blob.format == WeightFormat::kInt8) {
    zero(weight_bytes, blob.scale_offset);
    zero(blob.scale_offset + blob.scale_elems * 4, blob.bias_offset);
  } else {
    zero(weight_bytes, blob.bias_offset);
  }
  zero(bias_end, blob.bytes);
}

// int8 weights: rows of folded fp32 weights of `n` whole filters (`cin` channels x `kk`
// taps, OIHW within a row) -> per filter, scale = max |w| / 127 over the whole filter
// (0 for a filter of zeros) to scales[o], and round-to-nearest-even(w / scale), in
// [-127, 127], of channels [c0, c0 + channels) at `out` in the blob's layout (OHWI for
// NHWC: [o][k][c]).
void quantize_rows(const float* rows, int64_t n, int64_t cin, int64_t kk, int64_t c0, int64_t channels, Layout layout,
                   int8_t* out, float* scales) {
  const bool ohwi = layout == Layout::kNHWC && kk > 1;
  for (int64_t o = 0; o < n; ++o) {
    const float* row = rows + o * cin * kk;
    float m = 0.0f;
    for (int64_t i = 0; i < cin * kk; ++i) m = std::max(m, std::fabs(row[i]));
    const float scale = m / 127.0f;
    scales[o] = scale;
    int8_t* dst = out + o * channels * kk;
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t k = 0; k < kk; ++k) {
        const float q = scale > 0.0f ? std::nearbyint(row[(c0 + c) * kk + k] / scale) : 0.0f;
        dst[ohwi ? k * channels + c : c * kk + k] = int8_t(std::clamp(q, -127.0f, 127.0f));
      }
  }
}

// Rows of folded fp32 weights (`n` filters of `cin` channels x `kk` taps, OIHW within a
// row) -> the blob's dtype and layout at `out` (OHWI: [o][k][c], the same for 1x1).
void store_rows(const float* rows, int64_t n, int64_t cin, int64_t kk, Layout layout, bool f16, char* out,
                std::vector<float>* scratch) {
  const int64_t count = n * cin * kk;
  const float* src = rows;
  if (layout == Layout::kNHWC && kk > 1) {  // fp32: transposed straight into the blob
    float* t = reinterpret_cast<float*>(out);
    if (f16) {
      scratch->resize(size_t(count));
      t = scratch->data();
    }
    for (int64_t o = 0; o < n; ++o)
      for (int64_t k = 0; k < kk; ++k)
        for (int64_t c = 0; c < cin; ++c) t[(o * kk + k) * cin + c] = rows[(o * cin + c) * kk + k];
    if (!f16) return;
    src = t;
  }
  if (f16)
    floats_to_halves(src, reinterpret_cast<uint16_t*>(out), count);
  else
    std::memcpy(out, src, size_t(count) * 4);
}

// Folded rows per block: a block of rows stays in the core's cache between the fold,
// the checks and the conversion.
constexpr int64_t kBlockFloats = 16384;

class FileSource final : public WeightSource {
 public:
  FileSource(const NetworkDesc& net, const WeightsFile& file)
      : m_net(net), m_file(file), m_warned(net.layers.size(), 0) {}

  Status prepare(const WeightBlob& blob, Layout layout, void* dst) override {
    DLR_ASSIGN_OR_RETURN(const LayerDesc* layer, layer_of(blob));
    return prepare_filters(blob, layout, dst, 0, blob_filters(blob, layer->conv().filters));
  }

  // Folded block by block (fold_conv_range) and stored in the blob's dtype and layout:
  // fp32 OIHW (or 1x1) straight into dst, the others through a per-thread block.
  Status prepare_filters(const WeightBlob& blob, Layout layout, void* dst, int begin, int end) override {
    DLR_ASSIGN_OR_RETURN(const LayerDesc* layer, layer_of(blob));
    const ConvParams& p = layer->conv();
    const int64_t cin = layer->in.c / p.groups, kk = int64_t(p.size) * p.size;
    const bool by_filters = blob.filters > 0, by_channels = blob.channels > 0;
    const int filters = blob_filters(blob, p.filters);
    const int64_t channels = by_channels ? blob.channels : cin;
    const bool fits = (!by_filters || (blob.filter_begin >= 0 && blob.filter_begin + blob.filters <= p.filters &&
                                       blob.bias_elems == blob.filters && !by_channels)) &&
                      (!by_channels || (p.groups == 1 && blob.channel_begin >= 0 &&
                                        blob.channel_begin + channels <= cin &&
                                        (blob.bias_elems == 0 || blob.bias_elems == p.filters))) &&
                      (by_filters || by_channels || blob.bias_elems == p.filters) &&
                      blob.weight_elems == int64_t(filters) * channels * kk;
    if (!fits) return internal_error("layer " + std::to_string(layer->index) + ": plan blob does not match the layer");
    if (begin < 0 || end > filters || begin > end)
      return internal_error("layer " + std::to_string(layer->index) + ": filters [" + std::to_string(begin) + ", " +
                            std::to_string(end) + ") of a blob of " + std::to_string(filters));
    if (blob.format == WeightFormat::kInt8) return prepare_int8(*layer, blob, layout, dst, begin, end);
    const bool f16 = blob.dtype == DType::kF16;
    const int64_t row = channels * kk, es = f16 ? 2 : 4;
    char* out = static_cast<char*>(dst);
    float* bias = blob.bias_elems > 0 ? reinterpret_cast<float*>(out + blob.bias_offset) : nullptr;
    const bool direct = !f16 && (layout == Layout::kNCHW || kk == 1);
    const int64_t block = std::max<int64_t>(1, kBlockFloats / std::max<int64_t>(1, row));
    thread_local std::vector<float> rows, scratch;
    FoldCheck check;
    for (int64_t f = begin; f < end; f += block) {
      const FilterRange r = block_range(blob, f, std::min<int64_t>(block, end - f), by_channels ? blob.channel_begin : 0,
                                        channels);
      float* folded = reinterpret_cast<float*>(out) + f * row;
      if (!direct) {
        rows.resize(size_t(r.count * row));
        folded = rows.data();
      }
      DLR_RETURN_IF_ERROR(fold_block(*layer, blob, r, folded, bias ? bias + f : nullptr, &check));
      if (!direct) store_rows(folded, r.count, channels, kk, layout, f16, out + f * row * es, &scratch);
    }
    if (end == filters) zero_padding(blob, blob.weight_elems * es, out);
    warn_once(*layer, check);
    return Status();
  }

  const std::string& name() const override { return m_file.path(); }
  bool concurrent() const override { return true; }

  // prepare_filters of an int8 blob (checked against its layer there): whole filters
  // folded block by block (every input channel, so a channel slice's scales are its
  // filters'), quantized by quantize_rows.
  Status prepare_int8(const LayerDesc& layer, const WeightBlob& blob, Layout layout, void* dst, int begin, int end) {
    const ConvParams& p = layer.conv();
    const int64_t cin = layer.in.c / p.groups, kk = int64_t(p.size) * p.size;
    const int filters = blob_filters(blob, p.filters);
    const int64_t channels = blob.channels > 0 ? blob.channels : cin, c0 = blob.channel_begin;
    if (blob.scale_elems != filters)
      return internal_error("layer " + std::to_string(layer.index) + ": int8 blob of " + std::to_string(filters) +
                            " filters with " + std::to_string(blob.scale_elems) + " scales");
    char* out = static_cast<char*>(dst);
    float* bias = blob.bias_elems > 0 ? reinterpret_cast<float*>(out + blob.bias_offset) : nullptr;
    float* scales = reinterpret_cast<float*>(out + blob.scale_offset);
    const int64_t block = std::max<int64_t>(1, kBlockFloats / std::max<int64_t>(1, cin * kk));
    thread_local std::vector<float> rows;
    FoldCheck check;
    for (int64_t f = begin; f < end; f += block) {
      const FilterRange r = block_range(blob, f, std::min<int64_t>(block, end - f), 0, cin);
      rows.resize(size_t(r.count * cin * kk));
      DLR_RETURN_IF_ERROR(fold_block(layer, blob, r, rows.data(), bias ? bias + f : nullptr, &check));
      quantize_rows(rows.data(), r.count, cin, kk, c0, channels, layout,
                    reinterpret_cast<int8_t*>(out) + f * channels * kk, scales + f);
    }
    if (end == filters) zero_padding(blob, blob.weight_elems, out);
    warn_once(layer, check);
    return Status();
  }
  bool splits() const override { return true; }

 private:
  // Filters [f, f + count) of `blob` (its own numbering) over input channels
  // [channel, channel + channels) of the layer.
  static FilterRange block_range(const WeightBlob& blob, int64_t f, int64_t count, int64_t channel, int64_t channels) {
    FilterRange r;
    r.first = (blob.filters > 0 ? blob.filter_begin : 0) + f;
    r.count = count;
    r.channel = channel;
    r.channels = channels;
    return r;
  }

  // fold_conv_range of `r` into `rows` (and its biases, bias not null), then, for an f16
  // blob whose weights went above the half range, the check naming the first such weight.
  Status fold_block(const LayerDesc& layer, const WeightBlob& blob, const FilterRange& r, float* rows, float* bias,
                    FoldCheck* check) const {
    DLR_RETURN_IF_ERROR(fold_conv_range(layer, m_file, r, rows, bias, check));
    if (blob.dtype == DType::kF16 && check->max_weight > kMaxHalf)
      DLR_RETURN_IF_ERROR(check_fp16_rows(layer, m_file.path(), r, rows));
    return Status();
  }

  Expected<const LayerDesc*> layer_of(const WeightBlob& blob) const {
    if (blob.layer < 0 || blob.layer >= int(m_net.layers.size()) ||
        m_net.layers[size_t(blob.layer)].kind != LayerKind::kConv)
      return internal_error(m_file.path() + ": plan blob names layer " + std::to_string(blob.layer) +
                            ", which is not a convolution of the network");
    return &m_net.layers[size_t(blob.layer)];
  }

  // A layer's warnings (fold_warnings) are logged once per source, however many
  // parts, slices or set-ups prepare it.
  void warn_once(const LayerDesc& layer, const FoldCheck& check) {
    std::vector<std::string> found = fold_warnings(layer, m_file.path(), check);
    if (found.empty()) return;
    {
      std::lock_guard<std::mutex> lock(m_warn_mutex);
      if (m_warned[size_t(layer.index)]) return;
      m_warned[size_t(layer.index)] = 1;
    }
    for (const std::string& w : found) DLR_LOG_WARN("{}", w);
  }

  const NetworkDesc& m_net;
  const WeightsFile& m_file;
  std::mutex m_warn_mutex;
  std::vector<char> m_warned;  // per layer: its warnings were logged
};

}  // namespace

Status WeightSource::prepare_filters(const WeightBlob&, Layout, void*, int, int) {
  return internal_error(name() + ": this weight source prepares whole blobs only (prepare_filters without splits())");
}

int blob_filters(const WeightBlob& blob, int layer_filters) { return blob.filters > 0 ? blob.filters : layer_filters; }

std::unique_ptr<WeightSource> weights_file_source(const NetworkDesc& net, const WeightsFile& file) {
  return std::make_unique<FileSource>(net, file);
}

}  // namespace dlr
