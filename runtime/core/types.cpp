#include "runtime/core/types.h"

namespace dlr {

std::string Shape3::to_string() const {
  return std::to_string(c) + "x" + std::to_string(h) + "x" + std::to_string(w);
}

const char* dtype_name(DType t) { return t == DType::kF16 ? "f16" : "f32"; }
const char* weight_format_name(WeightFormat f) { return f == WeightFormat::kInt8 ? "int8" : "fp"; }
const char* decode_name(Decode d) {
  switch (d) {
    case Decode::kAuto: return "auto";
    case Decode::kCpu: return "cpu";
    case Decode::kGpu: return "gpu";
  }
  return "?";
}

const char* fusion_name(Fusion f) {
  switch (f) {
    case Fusion::kAuto: return "auto";
    case Fusion::kOff: return "off";
    case Fusion::kEpilogue: return "epilogue";
    case Fusion::kCudnn: return "cudnn";
  }
  return "?";
}
const char* layout_name(Layout l) { return l == Layout::kNHWC ? "NHWC" : "NCHW"; }

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::kFP32: return "fp32";
    case Precision::kTF32: return "tf32";
    case Precision::kFP16: return "fp16";
  }
  return "?";
}

bool parse_precision(const std::string& s, Precision* out) {
  if (s == "fp32") *out = Precision::kFP32;
  else if (s == "tf32") *out = Precision::kTF32;
  else if (s == "fp16") *out = Precision::kFP16;
  else return false;
  return true;
}

const char* device_name(DeviceKind d) { return d == DeviceKind::kCUDA ? "cuda" : "cpu"; }

namespace {
struct ActName {
  Activation a;
  const char* name;
};
constexpr ActName kActNames[] = {
    {Activation::kLinear, "linear"}, {Activation::kLeaky, "leaky"},   {Activation::kLogistic, "logistic"},
    {Activation::kRelu, "relu"},     {Activation::kRelu6, "relu6"},   {Activation::kElu, "elu"},
    {Activation::kSelu, "selu"},     {Activation::kGelu, "gelu"},     {Activation::kTanh, "tanh"},
    {Activation::kSwish, "swish"},   {Activation::kMish, "mish"},     {Activation::kHardMish, "hard_mish"},
};
}  // namespace

const char* activation_name(Activation a) {
  for (const ActName& n : kActNames)
    if (n.a == a) return n.name;
  return "?";
}

bool parse_activation(const std::string& s, Activation* out) {
  for (const ActName& n : kActNames) {
    if (s == n.name) {
      *out = n.a;
      return true;
    }
  }
  return false;
}

const char* reader_kind_name(ReaderKind k) {
  switch (k) {
    case ReaderKind::kAuto: return "auto";
    case ReaderKind::kUring: return "uring";
    case ReaderKind::kThreads: return "threads";
  }
  return "?";
}

bool parse_reader_kind(const std::string& s, ReaderKind* out) {
  for (ReaderKind k : {ReaderKind::kAuto, ReaderKind::kUring, ReaderKind::kThreads})
    if (s == reader_kind_name(k)) {
      *out = k;
      return true;
    }
  return false;
}

const char* pool_layout_name(PoolLayout l) {
  switch (l) {
    case PoolLayout::kAuto: return "auto";
    case PoolLayout::kSlots: return "slots";
    case PoolLayout::kRing: return "ring";
  }
  return "?";
}

bool parse_pool_layout(const std::string& s, PoolLayout* out) {
  for (PoolLayout l : {PoolLayout::kAuto, PoolLayout::kSlots, PoolLayout::kRing})
    if (s == pool_layout_name(l)) {
      *out = l;
      return true;
    }
  return false;
}

}  // namespace dlr
