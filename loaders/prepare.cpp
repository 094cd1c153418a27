// Conv preparation: raw Darknet blobs -> fused fp32 weights + bias.
//
// Folding follows network.c:fuse_conv_batchnorm bit for bit:
//   b[f] = bias[f] - (double)scale[f]*mean[f] / sqrt((double)var[f] + .00001)
//   k    = scale[f] / sqrt((double)var[f] + .00001)        (double)
//   w[f][i] = (float)(w[f][i] * k)                         (float <- float*double)
// so prepared weights equal what Darknet runs after fusion.

#include "loaders/prepare.h"

#include <cfloat>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "runtime/core/log.h"

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

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

// "FILE: layer N (conv, cfg line L)"
std::string layer_where(const std::string& file, const LayerDesc& layer) {
  return file + ": layer " + std::to_string(layer.index) + " (conv, cfg line " + std::to_string(layer.cfg_line) + ")";
}

// Names the raw value behind a non-finite prepared value of filter f (element i of
// the filter's weights, or its bias when i < 0). Only runs on the error path.
std::string blame(const float* bias, const float* scale, const float* mean, const float* var, const float* weights,
                  int64_t per_filter, int64_t f, int64_t i) {
  auto bad = [](float v) { return !std::isfinite(v); };
  auto at = [](const char* role, int64_t k, float v) {
    return std::string(role) + "[" + std::to_string(k) + "] is " + num(v);
  };
  if (i >= 0 && bad(weights[f * per_filter + i])) return at("weights", f * per_filter + i, weights[f * per_filter + i]);
  if (bad(bias[f])) return at("biases", f, bias[f]);
  if (scale != nullptr) {
    if (bad(scale[f])) return at("batch-norm scales", f, scale[f]);
    if (bad(mean[f])) return at("batch-norm means", f, mean[f]);
    if (bad(var[f])) return at("batch-norm variances", f, var[f]);
    if (i >= 0)
      for (int64_t k = 0; k < per_filter; ++k)
        if (bad(weights[f * per_filter + k])) return at("weights", f * per_filter + k, weights[f * per_filter + k]);
    return std::string("the batch-norm fold of filter ") + std::to_string(f) + " overflows float (scale " +
           num(scale[f]) + ", mean " + num(mean[f]) + ", variance " + num(var[f]) + ")";
  }
  return "a prepared value is not finite";
}

}  // namespace

Status prepare_conv(const LayerDesc& layer, const WeightsFile& file, float* weights_out, float* bias_out,
                    std::vector<std::string>* warnings) {
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
  const float* raw_bias = file.data(*bias);
  const float* raw_scale = bn ? file.data(*scale) : nullptr;
  const float* raw_mean = bn ? file.data(*mean) : nullptr;
  const float* raw_var = bn ? file.data(*var) : nullptr;
  const float* raw_weights = file.data(*weights);
  fold_batchnorm(layer, raw_bias, raw_scale, raw_mean, raw_var, raw_weights, weights_out, bias_out);

  // Checks: one pass over the prepared values (a non-finite raw value stays non-finite
  // through the fold), plus the variances, which the fold hides.
  const std::string at = layer_where(file.path(), layer);
  std::vector<std::string> found;
  if (bn) {
    for (uint64_t f = 0; f < n; ++f) {
      const float v = raw_var[f];
      if (!std::isfinite(v))  // Inf would fold to zero weights and pass the scan below
        return parse_error(at + ": batch-norm variances[" + std::to_string(f) + "] is " + num(v) +
                           "; expected finite values");
      if (double(v) + .00001 <= 0.0)
        return parse_error(at + ": batch-norm variances[" + std::to_string(f) + "] is " + num(v) +
                           ": the fold takes sqrt(variance + 0.00001); expected variance >= 0");
      if (v < 0.0f && found.empty())
        found.push_back(at + ": batch-norm variances[" + std::to_string(f) + "] is " + num(v) +
                        " (negative; Darknet's fold still computes with it)");
    }
  }
  const int64_t per_filter = int64_t(wc / n);
  float max_abs = 0.0f;
  const char* max_role = "weights";
  for (int64_t f = 0; f < int64_t(n); ++f) {
    const float b = bias_out[f];
    if (!std::isfinite(b))
      return parse_error(at + ": " + blame(raw_bias, raw_scale, raw_mean, raw_var, raw_weights, per_filter, f, -1) +
                         "; expected finite values");
    if (std::fabs(b) > max_abs) {
      max_abs = std::fabs(b);
      max_role = "biases";
    }
    const float* w = weights_out + f * per_filter;
    float m = 0.0f;
    for (int64_t i = 0; i < per_filter; ++i) {
      const float a = std::fabs(w[i]);
      if (!(a <= FLT_MAX))  // NaN or Inf
        return parse_error(at + ": " + blame(raw_bias, raw_scale, raw_mean, raw_var, raw_weights, per_filter, f, i) +
                           "; expected finite values");
      m = a > m ? a : m;
    }
    if (m > max_abs) {
      max_abs = m;
      max_role = "weights";
    }
  }
  if (max_abs > kWarnWeightMagnitude)
    found.push_back(at + ": prepared " + std::string(max_role) + " reach " + num(max_abs) + " in magnitude (above " +
                    num(kWarnWeightMagnitude) + "; real models stay far below): outputs may overflow");
  for (std::string& w : found) {
    if (warnings != nullptr)
      warnings->push_back(std::move(w));
    else
      DLR_LOG_WARN("{}", w);
  }
  return Status();
}

Status check_fp16_range(const LayerDesc& layer, const std::string& file, const float* weights) {
  const int64_t count = layer.weight_count();
  for (int64_t i = 0; i < count; ++i) {
    if (std::fabs(weights[i]) > kMaxHalf)
      return unsupported(layer_where(file, layer) + ": prepared weights[" + std::to_string(i) + "] is " +
                         num(weights[i]) + ", beyond fp16's largest value 65504; expected fp32 or tf32 precision "
                         "for these weights");
  }
  return Status();
}

}  // namespace dlr
