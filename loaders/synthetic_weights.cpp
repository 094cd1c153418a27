// Synthetic .weights generator; the value model is explained in synthetic_weights.h.

#include "loaders/synthetic_weights.h"

#include "loaders/layer_table.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace dlr {
namespace {

// ---- deterministic random numbers -------------------------------------------

uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// splitmix64 stream; one per (seed, layer, blob role).
class Stream {
 public:
  Stream(uint64_t seed, int layer, BlobRole role)
      : m_state(mix64(seed ^ mix64((static_cast<uint64_t>(layer) << 3 | static_cast<uint64_t>(role)) + 1))) {}
  uint64_t next() {
    m_state += 0x9E3779B97F4A7C15ull;
    return mix64(m_state);
  }
  // Unit-variance, zero-mean, bounded (|z| < 3.47) approximately normal value:
  // Irwin-Hall sum of four 16-bit uniforms. Exact integer sum, one rounding multiply.
  double normal() {
    const uint64_t r = next();
    const int64_t s = int64_t(r & 0xFFFF) + int64_t((r >> 16) & 0xFFFF) + int64_t((r >> 32) & 0xFFFF) +
                      int64_t(r >> 48) - 131070;  // 4 * 65535 / 2
    return static_cast<double>(s) * kInvStd;
  }
  // Uniform in [lo, hi).
  double uniform(double lo, double hi) {
    const double u = static_cast<double>(next() >> 11) * 0x1p-53;
    const double span = (hi - lo) * u;  // separate statement: no fused multiply-add
    return lo + span;
  }

 private:
  // 1 / sqrt(Var(sum)), Var = 4 * (65536^2 - 1) / 12. sqrt is correctly rounded (IEEE).
  static inline const double kInvStd = 1.0 / std::sqrt(4.0 * (65536.0 * 65536.0 - 1.0) / 12.0);
  uint64_t m_state;
};

// Head info for a conv that feeds a network output ([yolo], [region], [Gaussian_yolo]).
struct HeadInfo {
  bool is_head = false;
  int entries = 0;    // entries per anchor (5 + classes, 9 + classes for Gaussian); 0 when the channel count differs
  int obj_entry = 4;  // objectness entry within an anchor's entries
};

std::vector<HeadInfo> find_heads(const NetworkDesc& net) {
  std::vector<HeadInfo> heads(net.layers.size());
  for (const LayerDesc& l : net.layers) {
    HeadLayout (*const head)(const LayerDesc&) = layer_row(l.kind).head;
    if (!is_output_kind(l.kind) || head == nullptr) continue;
    const int src = l.inputs.empty() ? l.index - 1 : l.inputs[0];
    if (src < 0 || static_cast<size_t>(src) >= net.layers.size()) continue;
    const LayerDesc& conv = net.layers[static_cast<size_t>(src)];
    if (conv.kind != LayerKind::kConv) continue;
    HeadInfo& h = heads[static_cast<size_t>(src)];
    h.is_head = true;
    const HeadLayout hl = head(l);
    h.entries = hl.entries;
    h.obj_entry = hl.obj_entry;
    if (conv.conv().filters != hl.anchors * h.entries) h.entries = 0;
  }
  return heads;
}

// Buffered float writer (chunks of kChunk floats).
class ChunkWriter {
 public:
  static constexpr size_t kChunk = size_t(1) << 20;  // 4 MB
  explicit ChunkWriter(std::FILE* f) : m_file(f) { m_buf.reserve(kChunk); }
  bool push(float v) {
    m_buf.push_back(v);
    return m_buf.size() < kChunk || flush();
  }
  bool flush() {
    if (m_buf.empty()) return true;
    const bool ok = std::fwrite(m_buf.data(), sizeof(float), m_buf.size(), m_file) == m_buf.size();
    m_buf.clear();
    return ok;
  }

 private:
  std::FILE* m_file;
  std::vector<float> m_buf;
};

// Opens path.tmp for writing; commit() renames it to `path`, the destructor removes
// it when commit() was not reached.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path) : m_path(std::move(path)), m_tmp(m_path + ".tmp") {}
  ~AtomicFile() {
    if (m_file) std::fclose(m_file);
    if (!m_committed) std::remove(m_tmp.c_str());
  }
  Status open() {
    m_file = std::fopen(m_tmp.c_str(), "wb");
    if (!m_file) return io_error(m_tmp + ": cannot create: " + std::strerror(errno));
    return Status();
  }
  std::FILE* file() const { return m_file; }
  Status write_error() const { return io_error(m_tmp + ": write failed: " + std::strerror(errno)); }
  Status commit() {
    const int rc = std::fclose(m_file);
    m_file = nullptr;
    if (rc != 0) return io_error(m_tmp + ": close failed: " + std::strerror(errno));
    if (std::rename(m_tmp.c_str(), m_path.c_str()) != 0)
      return io_error(m_path + ": cannot rename " + m_tmp + " to it: " + std::strerror(errno));
    m_committed = true;
    return Status();
  }

 private:
  std::string m_path;
  std::string m_tmp;
  std::FILE* m_file = nullptr;
  bool m_committed = false;
};

// One filter's raw weights: fan_in = z->size() values of standard deviation `sigma`
// that sum to zero (when fan_in > 1), so a filter responds to contrast between its
// inputs, not to their common level. The common level of a layer's input (the mean
// of leaky/mish outputs, the image brightness) is what an untrained network would
// otherwise turn into input-independent constants; and since most estimation error
// of those means is common to all channels, zero-sum filters make the generator
// robust to it. Deterministic: sums in a fixed order, no fused multiply-add.
void draw_filter(Stream& rng, double sigma, std::vector<double>* z, std::vector<float>* out) {
  const size_t n = z->size();
  double sum = 0;
  for (double& v : *z) {
    v = rng.normal();
    sum += v;
  }
  double mean = 0, scale = sigma;
  if (n > 1) {
    mean = sum / static_cast<double>(n);
    scale = sigma * std::sqrt(static_cast<double>(n) / static_cast<double>(n - 1));
  }
  for (size_t j = 0; j < n; ++j) (*out)[j] = static_cast<float>(((*z)[j] - mean) * scale);
}

SyntheticMoments input_moments(const NetworkDesc& net, const SyntheticOptions& o) {
  SyntheticMoments in;
  in.mean.assign(static_cast<size_t>(net.net.channels > 0 ? net.net.channels : 0), o.input_mean);
  in.variance = o.input_variance;
  return in;
}

int first_input(const LayerDesc& l) { return l.inputs.empty() ? l.index - 1 : l.inputs[0]; }

}  // namespace

// Mean and variance of act(z) for z ~ N(0, 1) (numerical integration, 4 digits).
ActMoments activation_moments(Activation a) {
  switch (a) {
    case Activation::kLinear: return {0.0, 1.0};
    case Activation::kLeaky: return {0.359, 0.3761};
    case Activation::kLogistic: return {0.5, 0.0434};
    case Activation::kRelu: return {0.3989, 0.3408};
    case Activation::kRelu6: return {0.3989, 0.3408};
    case Activation::kElu: return {0.1605, 0.6192};
    case Activation::kSelu: return {0.0, 1.0};
    case Activation::kGelu: return {0.282, 0.3456};
    case Activation::kTanh: return {0.0, 0.3943};
    case Activation::kSwish: return {0.2066, 0.3131};
    case Activation::kMish: return {0.2404, 0.3945};
    case Activation::kHardMish: return {0.2386, 0.5074};
  }
  return {0.0, 1.0};
}

std::vector<SyntheticMoments> synthetic_moment_estimates(const NetworkDesc& net, const SyntheticOptions& options) {
  const std::vector<HeadInfo> heads = find_heads(net);
  const SyntheticMoments input = input_moments(net, options);
  std::vector<SyntheticMoments> m(net.layers.size());
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const LayerDesc& l = net.layers[i];
    const SyntheticMoments& in = synthetic_moments_of(m, input, first_input(l));
    const double target = heads[i].is_head ? options.head_variance : options.hidden_variance;
    SyntheticMoments out = layer_row(l.kind).moments(MomentsIn{l, in, target, m, input});
    if (out.mean.size() != static_cast<size_t>(l.out.c)) out.mean.resize(static_cast<size_t>(l.out.c), 0.0);
    if (!(out.variance > 1e-6)) out.variance = 1e-6;  // keeps the next conv's scale finite
    m[i] = std::move(out);
  }
  return m;
}

Status write_synthetic_weights(const NetworkDesc& net, const std::string& path, const SyntheticOptions& options) {
  if (!(options.input_variance > 0 && options.hidden_variance > 0 && options.head_variance > 0)) {
    return invalid_argument(path + ": synthetic weights need positive input/hidden/head variances");
  }
  const std::vector<HeadInfo> heads = find_heads(net);
  const std::vector<SyntheticMoments> moments = synthetic_moment_estimates(net, options);
  const SyntheticMoments input = input_moments(net, options);

  AtomicFile out(path);
  DLR_RETURN_IF_ERROR(out.open());
  if (!write_weights_header(out.file(), options.header).ok()) return out.write_error();
  ChunkWriter writer(out.file());

  std::vector<float> bias, scale, mean, var;
  std::vector<double> k, sigma, dc, zbuf;
  std::vector<float> wbuf;
  for (size_t i = 0; i < net.layers.size(); ++i) {
    const LayerDesc& l = net.layers[i];
    if (l.kind != LayerKind::kConv) continue;
    const int layer = static_cast<int>(i);
    const ConvParams& cp = l.conv();
    const int64_t n = l.bias_count();
    const int64_t total = l.weight_count();
    const SyntheticMoments& in = synthetic_moments_of(moments, input, first_input(l));
    const int64_t groups = cp.groups;
    const int64_t cg = groups > 0 ? l.in.c / groups : 0;  // input channels per group
    const int64_t kk = int64_t(cp.size) * cp.size;
    if (n <= 0 || groups <= 0 || n % groups != 0 || total != n * cg * kk || in.mean.size() < size_t(cg * groups)) {
      return invalid_argument(path + ": layer " + std::to_string(i) + " (conv, cfg line " + std::to_string(l.cfg_line) +
                              "): inconsistent shape (" + std::to_string(n) + " filters, " + std::to_string(l.in.c) +
                              " input channels, groups " + std::to_string(groups) + ", " + std::to_string(total) +
                              " weights)");
    }
    const int64_t fan_in = cg * kk;
    const int64_t per_group = n / groups;
    const size_t un = static_cast<size_t>(n);

    // BN multipliers first: they set the raw weight scale of each filter.
    k.assign(un, 1.0);
    if (cp.batch_normalize) {
      scale.resize(un);
      var.resize(un);
      Stream scale_rng(options.seed, layer, BlobRole::kScale);
      Stream var_rng(options.seed, layer, BlobRole::kVariance);
      for (size_t f = 0; f < un; ++f) {
        scale[f] = static_cast<float>(scale_rng.uniform(0.5, 1.5));
        var[f] = static_cast<float>(var_rng.uniform(0.5, 1.5));
        k[f] = scale[f] / std::sqrt(static_cast<double>(var[f]) + .00001);
      }
    }
    const double target = heads[i].is_head ? options.head_variance : options.hidden_variance;
    const double std_folded = std::sqrt(target / (static_cast<double>(fan_in) * in.variance));
    sigma.resize(un);
    for (size_t f = 0; f < un; ++f) sigma[f] = std_folded / k[f];
    zbuf.resize(static_cast<size_t>(fan_in));
    wbuf.resize(static_cast<size_t>(fan_in));

    // Pass 1: expected raw output of each filter, D_f = sum_ci,k w * mean_in[ci].
    dc.assign(un, 0.0);
    {
      Stream w_rng(options.seed, layer, BlobRole::kWeights);
      for (size_t f = 0; f < un; ++f) {
        draw_filter(w_rng, sigma[f], &zbuf, &wbuf);
        const size_t c0 = static_cast<size_t>((static_cast<int64_t>(f) / per_group) * cg);
        double acc = 0;
        for (int64_t ci = 0; ci < cg; ++ci) {
          double wsum = 0;
          for (int64_t j = 0; j < kk; ++j) wsum += wbuf[static_cast<size_t>(ci * kk + j)];
          acc += wsum * in.mean[c0 + static_cast<size_t>(ci)];
        }
        dc[f] = acc;
      }
    }

    bias.resize(un);
    Stream bias_rng(options.seed, layer, BlobRole::kBias);
    for (size_t f = 0; f < un; ++f) {
      const double b = 0.1 * bias_rng.normal();
      bias[f] = static_cast<float>(cp.batch_normalize ? b : b - dc[f]);
    }
    if (heads[i].entries > 0) {
      for (size_t f = 0; f < un; ++f)
        if (f % static_cast<size_t>(heads[i].entries) == size_t(heads[i].obj_entry)) bias[f] += options.objectness_bias;
    }
    for (float v : bias)
      if (!writer.push(v)) return out.write_error();

    if (cp.batch_normalize) {
      mean.resize(un);
      Stream mean_rng(options.seed, layer, BlobRole::kMean);
      for (size_t f = 0; f < un; ++f) {
        const double jitter = 0.1 * mean_rng.normal() / k[f];
        mean[f] = static_cast<float>(dc[f] + jitter);
      }
      for (const std::vector<float>* blob : {&scale, &mean, &var})
        for (float v : *blob)
          if (!writer.push(v)) return out.write_error();
    }

    // Pass 2: the same weights again, written.
    Stream w_rng(options.seed, layer, BlobRole::kWeights);
    for (size_t f = 0; f < un; ++f) {
      draw_filter(w_rng, sigma[f], &zbuf, &wbuf);
      for (float v : wbuf)
        if (!writer.push(v)) return out.write_error();
    }
  }
  if (!writer.flush()) return out.write_error();
  return out.commit();
}

Status write_weights_file(const std::string& path, const WeightsHeader& header,
                          const std::vector<std::vector<float>>& per_layer_floats) {
  AtomicFile out(path);
  DLR_RETURN_IF_ERROR(out.open());
  if (!write_weights_header(out.file(), header).ok()) return out.write_error();
  for (const std::vector<float>& v : per_layer_floats) {
    if (!v.empty() && std::fwrite(v.data(), sizeof(float), v.size(), out.file()) != v.size())
      return out.write_error();
  }
  return out.commit();
}

}  // namespace dlr
