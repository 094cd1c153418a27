// Synthetic Darknet .weights: seeded, machine-independent values of the right
// shapes for any cfg (the large pretrained files are not available here), and a
// small writer for hand-made files in tests.
//
// Why these values (the contract a test or benchmark can rely on):
//  - Determinism: every blob (layer, role) has its own splitmix64 stream keyed by
//    (seed, layer index, role). Gaussian-like values are an Irwin-Hall sum of four
//    16-bit uniforms rescaled to unit variance (integer sums plus one rounding
//    multiply), uniforms use 53-bit integers times 2^-53. No libm transcendental
//    and no std::*_distribution is involved, so the bytes are identical on every
//    IEEE-754 machine and compiler. Same seed -> same bytes; changing one layer of
//    a cfg leaves the blobs of the other layers unchanged.
//  - BN parameters that make folding matter: scale ~ U(0.5, 1.5), variance ~
//    U(0.5, 1.5), bias ~ N(0, 0.1^2); the BN mean is the filter's expected raw
//    output plus N(0, 0.1^2)/k_f (see below), as a trained BN's running mean is.
//  - Sensitivity to the input through every layer. Plain He init (std
//    gain/sqrt(fan_in)) fails here, measured with a reference forward pass on two
//    different images: (1) magnitudes drift: residual adds, SPP max pools and the BN
//    multiplier k = scale/sqrt(var) (E[k^2] ~ 1.19) grow the signal, and yolov3/yolov4
//    reach 1e3..1e6 at the heads, every [yolo] logistic saturated; (2) with random BN
//    means nothing removes the positive mean of leaky/mish outputs, each conv turns it
//    into a per-channel constant, and at the heads ~90% of the signal no longer
//    depends on the image. The generator therefore:
//      * propagates through the graph an estimate of each layer's per-channel output
//        means and channel-averaged variance V (conv: mean/variance of act(z) for
//        z ~ N(0, target); route: concatenation; shortcut: sums; maxpool of size s:
//        mean + 0.5*sqrt(s-1)*sqrt(V), V*(1 + 0.25*sqrt(s-1)); upsample: x scale,
//        x scale^2; network input: input_mean, input_variance);
//      * draws each filter as zero-sum N(0, target / (fan_in * V_in)) / k_f values,
//        fan_in = (c/groups)*k*k, k_f = scale_f/sqrt(var_f + 1e-5) (1 without BN):
//        folded pre-activations then have variance ~target (1 for hidden layers, the
//        variance-preserving regime with the activation gain, sqrt(2) for relu/leaky,
//        built in through V; head_variance for convs feeding a [yolo], so raw yolo
//        outputs are O(1) and do not saturate). Zero-sum filters respond to contrast,
//        not to the common level of their inputs, which also makes the scheme robust
//        to errors of the mean estimates (mostly common to all channels);
//      * puts the filter's expected raw output D_f = sum w * mean_in into the BN mean
//        (without BN: -D_f into the bias), so pre-activations are ~N(small, target).
//    The weights of a conv are generated twice (once for D_f, which the file stores
//    before them, once to write them); per-blob streams make that cheap.
//    Measured with a reference forward pass (seed 1, 320x320, two smooth random
//    images) on all 7 shared cfgs: every layer's E[x^2] is within 0.35..1.95x of its
//    estimate (no drift with depth); hidden convs keep 30-80% of their variance
//    spatial (SPP max pools over 10x10 maps less) and differ between the two images
//    by about their own RMS; raw heads are ~N(0, 1) and logistic heads vary by
//    +-0.15 around 0.5 (never saturated).
//  - Few detections: the objectness channels of the head convs get
//    objectness_bias (default -3.5) added to their bias, so only ~0.1-1% of the
//    candidates pass a 0.25 threshold (0-60 boxes per image at 320x320), which keeps
//    NMS and output sizes in the range real weights produce. Raise it for more boxes.
//  - Speed: streamed in 4 MB chunks; yolov4 (258 MB) takes < 1 s plus disk time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/core/status.h"

namespace dlr {

struct SyntheticOptions {
  uint64_t seed = 1;
  WeightsHeader header;           // default 0.2.5 with seen 0 (20-byte header)
  double input_mean = 0.45;       // assumed per-channel mean of the network input (RGB in [0,1])
  double input_variance = 0.05;   // and its variance (natural images: std ~0.22)
  double hidden_variance = 1.0;   // target variance of conv pre-activations (after folding)
  double head_variance = 1.0;     // the same for convs that feed a [yolo] layer
  float objectness_bias = -3.5f;  // added to the bias of each head's objectness channels
};

// Writes a complete .weights file for `net` to `path` (size == index.payload_end).
// Streams in chunks (a few MB of memory for any cfg); writes `path`.tmp and renames
// it, so a failed run leaves no partial file at `path`.
Status write_synthetic_weights(const NetworkDesc& net, const std::string& path, const SyntheticOptions& options);

// Writes `header` then every vector of `per_layer_floats` in order (raw float32,
// little-endian): a hand-made file for tests. No check against any network.
Status write_weights_file(const std::string& path, const WeightsHeader& header,
                          const std::vector<std::vector<float>>& per_layer_floats);

// The moment estimates used by the generator for one layer's output.
struct SyntheticMoments {
  std::vector<double> mean;  // per channel
  double variance = 0;       // averaged over channels
};
// One entry per layer (exposed for tests and diagnostics).
std::vector<SyntheticMoments> synthetic_moment_estimates(const NetworkDesc& net, const SyntheticOptions& options);

}  // namespace dlr
