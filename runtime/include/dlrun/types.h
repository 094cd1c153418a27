// dlrun public API: the plain data that crosses it (images in, detections and the
// per-layer report out). No dlrun internals, no third-party headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dlrun {

// An 8-bit, 3-channel interleaved image the caller owns and keeps alive for the
// call (a view: nothing is copied until pre-processing). `stride` is the bytes
// between rows (0: width * 3). BGR is OpenCV's order (cv::Mat CV_8UC3); it is
// converted to RGB like Darknet's OpenCV loader. Images of any size are accepted;
// Options::max_image_width/height only pre-size the staging buffers.
struct ImageView {
  const uint8_t* data = nullptr;
  int width = 0;
  int height = 0;
  int64_t stride = 0;
  enum class Order : uint8_t { kBGR, kRGB };
  Order order = Order::kBGR;
};

// Centre and size relative to the image: x, y, w, h in [0, 1] when inside it
// (multiply by the image width/height for pixels).
struct Box {
  float x = 0, y = 0, w = 0, h = 0;
};

struct ClassProb {
  int class_id = -1;
  float prob = 0;
};

// One detection as Darknet reports it: the best class, and every other class whose
// probability is above the threshold (class order). Detections come sorted by the
// box's left edge (Darknet's order).
struct Detection {
  int class_id = -1;
  float prob = 0;  // objectness * class probability, in (thresh, 1]
  Box box;
  std::vector<ClassProb> others;
};

// Per-layer timing of the last detect(), ms from the start of the network.
// start_ms: the layer's turn; ready_ms: its weights are on the device (stream mode;
// == start_ms otherwise); end_ms: its kernels are done.
struct LayerTiming {
  int layer = 0;
  std::string type;          // the cfg section: "convolutional", "yolo", ...
  double start_ms = 0;
  double ready_ms = 0;
  double end_ms = 0;
  int64_t weight_bytes = 0;  // weight bytes copied for this layer in this run (stream mode)
  int slice = -1;            // >= 0: one slice of a layer run in slices (Options::slot_bytes), a row each
  double kernel_ms() const { return end_ms - ready_ms; }
  double stall_ms() const { return ready_ms - start_ms; }
};

// One host-to-device weight copy of the last detect() (stream mode).
struct CopyTiming {
  int unit = 0;
  int first_layer = 0;
  int64_t bytes = 0;
  double start_ms = 0;
  double end_ms = 0;
  bool next_inference = false;  // copied for the next detect(), under this one's last layers (tail copies)
};

// Bytes the session holds, by purpose.
struct MemoryReport {
  int64_t weights = 0;       // weights on the device that runs the network (resident + pool)
  int64_t activations = 0;   // activation arena
  int64_t workspace = 0;     // scratch (im2col, cuDNN workspace)
  int64_t other = 0;         // staging, outputs
  int64_t host_weights = 0;  // host copy of prepared weights for streaming, 0 if none
};

// What the last detect() did: timing of its phases, per layer and per weight copy
// (CUDA: per-layer times need Options::profile_layers), and the session's memory.
struct Report {
  double preprocess_ms = 0;
  double network_ms = 0;
  double postprocess_ms = 0;
  int threads = 0;  // OpenMP team the CPU conv kernels ran with (0: none ran on the CPU)
  std::vector<LayerTiming> layers;
  std::vector<CopyTiming> copies;
  MemoryReport memory;
};

// What open() built.
struct NetworkInfo {
  int input_width = 0;   // network input, pixels
  int input_height = 0;
  int batch = 1;
  int classes = 0;
  int layers = 0;
  double gflops = 0;     // per image
  bool letterbox = false;
};

}  // namespace dlrun
