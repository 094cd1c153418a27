// Conv preparation: raw Darknet blobs -> fused fp32 weights + bias.
//
// Folding follows network.c:fuse_conv_batchnorm bit for bit:
//   b[f] = bias[f] - (double)scale[f]*mean[f] / sqrt((double)var[f] + .00001)
//   k    = scale[f] / sqrt((double)var[f] + .00001)        (double)
//   w[f][i] = (float)(w[f][i] * k)                         (float <- float*double)
// so prepared weights equal what Darknet runs after fusion.

#include "loaders/prepare.h"

#include <cmath>
#include <cstring>
#include <string>

namespace dlr {

PreparedSizes prepared_sizes(const LayerDesc& layer) {
  PreparedSizes s;
  if (layer.kind != LayerKind::kConv) return s;
  s.weights = layer.weight_count();
  s.bias = layer.bias_count();
  return s;
}

void fold_batchnorm(const LayerDesc& layer, const float* bias, const float* scale, const float* mean,
                    const float* var, const float* weights, float* weights_out, float* bias_out) {
  const int64_t n = layer.bias_count();
  const int64_t total = layer.weight_count();
  DLR_ASSERT(n > 0 && total % n == 0);
  const int64_t per_filter = total / n;  // (c/groups)*k*k
  const bool bn = scale != nullptr;
  if (!bn) {
    std::memcpy(bias_out, bias, static_cast<size_t>(n) * sizeof(float));
    std::memcpy(weights_out, weights, static_cast<size_t>(total) * sizeof(float));
    return;
  }
  DLR_ASSERT(mean != nullptr && var != nullptr);
  for (int64_t f = 0; f < n; ++f) {
    const double denom = std::sqrt(static_cast<double>(var[f]) + .00001);
    bias_out[f] = static_cast<float>(bias[f] - static_cast<double>(scale[f]) * mean[f] / denom);
    const double k = scale[f] / denom;
    const float* src = weights + f * per_filter;
    float* dst = weights_out + f * per_filter;
    for (int64_t i = 0; i < per_filter; ++i) dst[i] = static_cast<float>(src[i] * k);
  }
}

Status prepare_conv(const LayerDesc& layer, const WeightsFile& file, float* weights_out, float* bias_out) {
  const std::string where = file.path() + ": layer " + std::to_string(layer.index);
  if (layer.kind != LayerKind::kConv) {
    return invalid_argument(where + " (" + layer_kind_name(layer.kind) + ") has no weights to prepare");
  }
  if (weights_out == nullptr || bias_out == nullptr) return invalid_argument(where + ": null output buffer");
  const WeightsIndex& index = file.index();
  if (layer.index < 0 || static_cast<size_t>(layer.index) >= index.layers.size()) {
    return invalid_argument(where + ": index has only " + std::to_string(index.layers.size()) + " layers");
  }
  const LayerBlobs& lb = index.layers[static_cast<size_t>(layer.index)];
  const BlobRef* bias = lb.find(BlobRole::kBias);
  const BlobRef* weights = lb.find(BlobRole::kWeights);
  const BlobRef* scale = lb.find(BlobRole::kScale);
  const BlobRef* mean = lb.find(BlobRole::kMean);
  const BlobRef* var = lb.find(BlobRole::kVariance);
  const uint64_t n = static_cast<uint64_t>(layer.bias_count());
  const uint64_t wc = static_cast<uint64_t>(layer.weight_count());
  // The index was built from the same network; a mismatch means a different NetworkDesc was passed.
  const bool bn = layer.conv().batch_normalize;
  if (!bias || !weights || bias->count != n || weights->count != wc || bn != (scale != nullptr) ||
      (bn && (!mean || !var || scale->count != n || mean->count != n || var->count != n))) {
    return invalid_argument(where + " (cfg line " + std::to_string(layer.cfg_line) +
                            "): blobs in the weights index do not match the layer (expected bias " +
                            std::to_string(n) + (bn ? ", scale/mean/variance" : "") + ", weights " +
                            std::to_string(wc) + "): index built from another cfg?");
  }
  fold_batchnorm(layer, file.data(*bias), bn ? file.data(*scale) : nullptr, bn ? file.data(*mean) : nullptr,
                 bn ? file.data(*var) : nullptr, file.data(*weights), weights_out, bias_out);
  return Status();
}

}  // namespace dlr
