// Preparation: raw Darknet blobs of one conv layer -> inference weights.
// Batch norm is folded in double precision with eps 1e-5 exactly as Darknet's
// fuse_conv_batchnorm does (DARKNET.md section 3). Works per layer so that the
// streaming engine can prepare layer by layer.
#pragma once

#include <cstdint>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"

namespace dlr {

// Prepared conv layer in fp32: weights OIHW [filters][c/groups][k][k], then bias [filters].
struct PreparedSizes {
  int64_t weights = 0;
  int64_t bias = 0;
  int64_t total() const { return weights + bias; }
};
PreparedSizes prepared_sizes(const LayerDesc& layer);  // zeros for non-conv layers

// Fills weights_out (PreparedSizes::weights floats) and bias_out (::bias floats)
// from the raw blobs of `layer` in `file`. Non-conv layers: error.
Status prepare_conv(const LayerDesc& layer, const WeightsFile& file, float* weights_out, float* bias_out);

// The same from raw arrays (bias, optional scale/mean/var, weights), for tests
// and for weight sources other than a mapped file. scale/mean/var may be null
// when the layer has no batch norm.
void fold_batchnorm(const LayerDesc& layer, const float* bias, const float* scale, const float* mean,
                    const float* var, const float* weights, float* weights_out, float* bias_out);

}  // namespace dlr
