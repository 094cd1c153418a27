// Conv preparation: raw Darknet blobs -> fused fp32 weights + bias.
//
// Folding follows network.c:fuse_conv_batchnorm bit for bit:
//   b[f] = bias[f] - (double)scale[f]*mean[f] / sqrt((double)var[f] + .00001)
//   k    = scale[f] / sqrt((double)var[f] + .00001)        (double)
//   w[f][i] = (float)(w[f][i] * k)                         (float <- float*double)
// so prepared weights equal what Darknet runs after fusion.

#include "loaders/prepare.h"

#include <algorithm>
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

// The raw blobs of a conv layer in a mapped file (scale, mean and var null without
// batch norm), checked against the layer.
struct RawConv {
  const float* bias = nullptr;
  const float* scale = nullptr;
  const float* mean = nullptr;
  const float* var = nullptr;
  const float* weights = nullptr;
  int64_t filters = 0;
  int64_t per_filter = 0;  // (c/groups)*k*k
};

Expected<RawConv> raw_conv(const LayerDesc& layer, const WeightsFile& file) {
  const std::string where = file.path() + ": layer " + std::to_string(layer.index);
  if (layer.kind != LayerKind::kConv) {
    return invalid_argument(where + " (" + layer_kind_name(layer.kind) + ") has no weights to prepare");
  }
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
  RawConv r;
  r.bias = file.data(*bias);
  r.scale = bn ? file.data(*scale) : nullptr;
  r.mean = bn ? file.data(*mean) : nullptr;
  r.var = bn ? file.data(*var) : nullptr;
  r.weights = file.data(*weights);
  r.filters = int64_t(n);
  r.per_filter = int64_t(wc / n);
  return r;
}

// The largest |v| of n floats as its bit pattern: above 0x7f7fffff (FLT_MAX) means a
// NaN or an Inf among them. Branch-free, so that the compiler vectorises it.
uint32_t max_abs_bits(const float* v, int64_t n) {
  uint32_t m = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, v + i, 4);
    b &= 0x7fffffffu;
    m = b > m ? b : m;
  }
  return m;
}

float bits_float(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

// The variances of the range's filters: refused at or below -0.00001 (the fold takes
// sqrt(variance + 0.00001)) or non-finite; the first negative one noted for a warning.
Status check_variances(const LayerDesc& layer, const std::string& file, const RawConv& raw, const FilterRange& r,
                       FoldCheck* check) {
  for (int64_t f = r.first; f < r.first + r.count; ++f) {
    const float v = raw.var[f];
    if (!std::isfinite(v))  // Inf would fold to zero weights and pass the scan below
      return parse_error(layer_where(file, layer) + ": batch-norm variances[" + std::to_string(f) + "] is " + num(v) +
                         "; expected finite values");
    if (double(v) + .00001 <= 0.0)
      return parse_error(layer_where(file, layer) + ": batch-norm variances[" + std::to_string(f) + "] is " + num(v) +
                         ": the fold takes sqrt(variance + 0.00001); expected variance >= 0");
    if (v < 0.0f && check->negative_variance < 0) {
      check->negative_variance = f;
      check->negative_value = v;
    }
  }
  return Status();
}

}  // namespace

Status fold_conv_range(const LayerDesc& layer, const WeightsFile& file, const FilterRange& r, float* weights_out,
                       float* bias_out, FoldCheck* check) {
  DLR_ASSIGN_OR_RETURN(const RawConv raw, raw_conv(layer, file));
  const ConvParams& p = layer.conv();
  const int64_t kk = int64_t(p.size) * p.size, cin = layer.in.c / p.groups;
  if (weights_out == nullptr || r.first < 0 || r.count < 0 || r.first + r.count > raw.filters || r.channel < 0 ||
      r.channels <= 0 || r.channel + r.channels > cin)
    return invalid_argument(file.path() + ": layer " + std::to_string(layer.index) + ": filters [" +
                            std::to_string(r.first) + ", +" + std::to_string(r.count) + ") channels [" +
                            std::to_string(r.channel) + ", +" + std::to_string(r.channels) +
                            ") are not a part of the layer, or no output buffer");
  if (raw.scale != nullptr) DLR_RETURN_IF_ERROR(check_variances(layer, file.path(), raw, r, check));
  const int64_t row = r.channels * kk, skip = r.channel * kk;
  for (int64_t f = r.first; f < r.first + r.count; ++f) {
    const float* src = raw.weights + f * raw.per_filter + skip;
    float* dst = weights_out + (f - r.first) * row;
    float b = raw.bias[f];
    if (raw.scale == nullptr) {
      std::memcpy(dst, src, size_t(row) * sizeof(float));
    } else {  // fold_batchnorm's arithmetic, bit for bit
      const double denom = std::sqrt(static_cast<double>(raw.var[f]) + .00001);
      b = static_cast<float>(raw.bias[f] - static_cast<double>(raw.scale[f]) * raw.mean[f] / denom);
      const double k = raw.scale[f] / denom;
      for (int64_t i = 0; i < row; ++i) dst[i] = static_cast<float>(src[i] * k);
    }
    if (bias_out != nullptr) {
      if (!std::isfinite(b))
        return parse_error(layer_where(file.path(), layer) + ": " +
                           blame(raw.bias, raw.scale, raw.mean, raw.var, raw.weights, raw.per_filter, f, -1) +
                           "; expected finite values");
      bias_out[f - r.first] = b;
      if (std::fabs(b) > check->max_abs) {
        check->max_abs = std::fabs(b);
        check->max_role = "biases";
      }
    }
    const uint32_t bits = max_abs_bits(dst, row);
    if (bits > 0x7f7fffffu) {  // NaN or Inf: name the first
      int64_t i = 0;
      while (std::isfinite(dst[i])) ++i;
      return parse_error(layer_where(file.path(), layer) + ": " +
                         blame(raw.bias, raw.scale, raw.mean, raw.var, raw.weights, raw.per_filter, f, skip + i) +
                         "; expected finite values");
    }
    const float m = bits_float(bits);
    check->max_weight = std::max(check->max_weight, m);
    if (m > check->max_abs) {
      check->max_abs = m;
      check->max_role = "weights";
    }
  }
  return Status();
}

std::vector<std::string> fold_warnings(const LayerDesc& layer, const std::string& file, const FoldCheck& check) {
  std::vector<std::string> found;
  const std::string at = layer_where(file, layer);
  if (check.negative_variance >= 0)
    found.push_back(at + ": batch-norm variances[" + std::to_string(check.negative_variance) + "] is " +
                    num(check.negative_value) + " (negative; Darknet's fold still computes with it)");
  if (check.max_abs > kWarnWeightMagnitude)
    found.push_back(at + ": prepared " + std::string(check.max_role) + " reach " + num(check.max_abs) +
                    " in magnitude (above " + num(kWarnWeightMagnitude) + "; real models stay far below): outputs may "
                    "overflow");
  return found;
}

Status prepare_conv(const LayerDesc& layer, const WeightsFile& file, float* weights_out, float* bias_out,
                    std::vector<std::string>* warnings) {
  if (layer.kind != LayerKind::kConv)
    return invalid_argument(file.path() + ": layer " + std::to_string(layer.index) + " (" +
                            layer_kind_name(layer.kind) + ") has no weights to prepare");
  if (weights_out == nullptr || bias_out == nullptr)
    return invalid_argument(file.path() + ": layer " + std::to_string(layer.index) + ": null output buffer");
  FilterRange all;
  all.count = layer.bias_count();
  all.channels = layer.in.c / layer.conv().groups;
  FoldCheck check;
  DLR_RETURN_IF_ERROR(fold_conv_range(layer, file, all, weights_out, bias_out, &check));
  for (std::string& w : fold_warnings(layer, file.path(), check)) {
    if (warnings != nullptr)
      warnings->push_back(std::move(w));
    else
      DLR_LOG_WARN("{}", w);
  }
  return Status();
}

Status check_fp16_rows(const LayerDesc& layer, const std::string& file, const FilterRange& range, const float* rows) {
  const int64_t kk = int64_t(layer.conv().size) * layer.conv().size;
  const int64_t per_filter = layer.weight_count() / std::max<int64_t>(1, layer.bias_count());
  const int64_t row = range.channels * kk;
  for (int64_t f = 0; f < range.count; ++f)
    for (int64_t j = 0; j < row; ++j) {
      const float v = rows[f * row + j];
      if (std::fabs(v) > kMaxHalf)
        return unsupported(layer_where(file, layer) + ": prepared weights[" +
                           std::to_string((range.first + f) * per_filter + range.channel * kk + j) + "] is " + num(v) +
                           ", beyond fp16's largest value 65504; expected fp32 or tf32 precision for these weights");
    }
  return Status();
}

Status check_fp16_range(const LayerDesc& layer, const std::string& file, const float* weights) {
  FilterRange all;
  all.count = layer.bias_count();
  all.channels = layer.in.c / layer.conv().groups;
  return check_fp16_rows(layer, file, all, weights);
}

}  // namespace dlr
