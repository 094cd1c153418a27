// Small value types shared by loaders, runtime and kernels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dlr {

// Per-image tensor shape, channels x height x width. Batch is carried separately.
struct Shape3 {
  int c = 0;
  int h = 0;
  int w = 0;
  int64_t count() const { return int64_t(c) * h * w; }
  bool operator==(const Shape3& o) const { return c == o.c && h == o.h && w == o.w; }
  bool operator!=(const Shape3& o) const { return !(*this == o); }
  std::string to_string() const;  // "CxHxW"
};

enum class DType : uint8_t { kF32, kF16 };
inline size_t dtype_size(DType t) { return t == DType::kF16 ? 2 : 4; }
const char* dtype_name(DType t);

// How conv weights are stored and streamed: fp (in the run's precision, DType) or int8
// (symmetric, one f32 scale per output channel; computed in the run's precision after
// the GPU or CPU expands them as each conv runs: docs/streaming.md, "Compressed weights").
enum class WeightFormat : uint8_t { kFp, kInt8 };
const char* weight_format_name(WeightFormat f);  // "fp", "int8"
// What a CUDA convolution's epilogue takes in (docs/architecture.md, "Fused steps"):
// kOff: conv, bias + activation pass, shortcut pass; kEpilogue: a shortcut after a conv
// folded into the conv's bias + activation pass; kCudnn: also conv + bias + activation
// (+ the folded shortcut) as one cuDNN graph where cuDNN runs it, the epilogue pass
// elsewhere; kAuto: kCudnn where a measurement at open finds it faster (fp16 and tf32
// NHWC; strict fp32 never runs graphs).
enum class Fusion : uint8_t { kAuto, kOff, kEpilogue, kCudnn };
const char* fusion_name(Fusion f);  // "auto", "off", "epilogue", "cudnn"
// Where a CUDA run picks its [yolo] heads' candidates (docs/architecture.md, "Outputs
// picked on the GPU"): kGpu on the device, only their rows downloaded; kCpu every output
// downloaded whole; kAuto the GPU for batches of more than one image, else the CPU.
enum class Decode : uint8_t { kAuto, kCpu, kGpu };
const char* decode_name(Decode d);  // "auto", "cpu", "gpu"

// Memory order of an activation tensor. NCHW: per image, channel planes.
// NHWC: per image, pixels with channels innermost.
enum class Layout : uint8_t { kNCHW, kNHWC };
const char* layout_name(Layout l);

// Numeric mode of a run (the CUDA issue adds tf32/fp16; the CPU runs fp32).
enum class Precision : uint8_t { kFP32, kTF32, kFP16 };
const char* precision_name(Precision p);
bool parse_precision(const std::string& s, Precision* out);

enum class DeviceKind : uint8_t { kCPU, kCUDA };
const char* device_name(DeviceKind d);

// Where streamed weights live on the device (runtime/streaming/stream_plan.h).
enum class PoolLayout : uint8_t { kAuto, kSlots, kRing };
const char* pool_layout_name(PoolLayout l);
bool parse_pool_layout(const std::string& s, PoolLayout* out);  // "auto", "slots", "ring"

// How weights are read from storage (runtime/storage/block_reader.h): io_uring, a pool
// of pread threads, or auto (io_uring where the kernel allows it).
enum class ReaderKind : uint8_t { kAuto, kUring, kThreads };
const char* reader_kind_name(ReaderKind k);  // "auto", "uring", "threads"
bool parse_reader_kind(const std::string& s, ReaderKind* out);

// Darknet activations. All are elementwise; see kernels/cpu/activation.cpp for
// the exact formulas (Darknet src/activations.h).
enum class Activation : uint8_t {
  kLinear,
  kLeaky,     // x > 0 ? x : 0.1f * x
  kLogistic,  // 1 / (1 + expf(-x))
  kRelu,
  kRelu6,
  kElu,
  kSelu,
  kGelu,
  kTanh,
  kSwish,     // x * logistic(x)
  kMish,      // x * tanh(softplus(x)), softplus threshold 20
  kHardMish,
};
const char* activation_name(Activation a);
// Darknet cfg spelling -> Activation; false when unknown.
bool parse_activation(const std::string& s, Activation* out);

inline int64_t align_up(int64_t v, int64_t a) { return (v + a - 1) / a * a; }

}  // namespace dlr
