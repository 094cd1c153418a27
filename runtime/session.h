// Session: the public API a robotics application embeds.
//
//   auto s = dlr::Session::open("yolov4.cfg", "yolov4.weights", options);   // Expected<unique_ptr<Session>>
//   auto dets = (*s)->detect(image);                                           // Expected<vector<Detection>>
//
// open() parses the cfg, checks the weights file against it, plans execution and
// allocates everything; detect() pre-processes, runs the network and post-
// processes like Darknet. Errors are values; a failed call leaves the session usable.
// No exception crosses this API: std::bad_alloc becomes kOutOfMemory, anything
// else kInternal. Parser warnings and suspicious weight values are logged
// (DLR_LOG_WARN, stderr) once at open.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/detect/detection.h"
#include "runtime/engine.h"
#include "runtime/plan.h"

namespace dlr {

using ImageView = cpu::ImageU8;

enum class WeightMode : uint8_t { kPreload, kStream };
const char* weight_mode_name(WeightMode m);
bool parse_weight_mode(const std::string& s, WeightMode* out);

struct SessionOptions {
  DeviceKind device = DeviceKind::kCPU;
  Precision precision = Precision::kFP32;
  int batch = 1;           // images per inference
  int width = 0;           // > 0: override the cfg's network width
  int height = 0;          // > 0: override the cfg's network height
  int letterbox = -1;      // -1: as the cfg's [net] letter_box; 0: stretch; 1: letterbox
  float thresh = 0.25f;    // detection threshold (strict >)
  float nms = 0.45f;       // NMS threshold
  bool concat_in_place = true;    // route buffers without copies
  bool keep_all_outputs = false;  // debugging: every layer output readable after a run (more memory)

  // ---- CUDA backend ----
  int cuda_device = 0;
  WeightMode mode = WeightMode::kPreload;  // preload: all weights resident; stream: demand layering
  std::string weight_budget = "min";       // stream mode: "min", "all", "NN%", "NNMiB", bytes (parse_weight_budget)
  std::string copy_profile = "h100";       // stream mode: a dlprobe JSON file or a built-in profile name
  int64_t chunk_bytes = 0;                 // stream mode: copy chunk size override (0 = the profile's)
  std::string weight_pool = "auto";        // stream mode: auto, ring (double-mapped ring), slots (stream_plan.h)
  bool unit_search = true;                 // stream mode, ring, no chunk_bytes: transfer units chosen by simulation
                                           // from kernel times measured at open (unit_search.h); false: equal chunks
  double unit_search_min_gain = 0.01;      // keep a searched cut only when predicted this fraction faster (0: always)
  int layout = -1;                // -1: auto (NHWC for fp16/tf32, NCHW for fp32); 0: NCHW; 1: NHWC
  bool cuda_graph = true;         // capture the network once and replay it
  bool profile_layers = false;    // per-layer CUDA event timing (event nodes inside the graph)
  bool find_algorithms = false;   // cudnnFind (timed) instead of heuristics
  int64_t workspace_limit = int64_t(256) << 20;  // cuDNN workspace per conv, bytes
  int max_image_width = 1920;     // host/device image staging sized at open (grows if exceeded)
  int max_image_height = 1080;
};

struct InferTiming {
  double preprocess_ms = 0;
  double network_ms = 0;
  double postprocess_ms = 0;
};

class Session {
 public:
  static Expected<std::unique_ptr<Session>> open(const std::string& cfg_path, const std::string& weights_path,
                                                 const SessionOptions& options = {});
  ~Session();

  // One image -> its detections (relative boxes; see Detection).
  Expected<std::vector<Detection>> detect(const ImageView& image);
  // n <= batch images in one inference.
  Expected<std::vector<std::vector<Detection>>> detect_batch(const ImageView* images, int n);

  const NetworkDesc& network() const { return m_net; }
  const ExecutionPlan& plan() const { return m_engine->plan(); }
  Engine& engine() { return *m_engine; }
  const SessionOptions& options() const { return m_options; }
  bool letterbox() const { return m_letterbox; }
  const InferTiming& last_timing() const { return m_timing; }
  std::string plan_text() const { return plan().to_text(m_net); }

 private:
  Session() = default;
  // The bodies of open() and detect_batch(), which turn any exception into a Status.
  static Expected<std::unique_ptr<Session>> open_impl(const std::string& cfg_path, const std::string& weights_path,
                                                      const SessionOptions& options);
  Expected<std::vector<std::vector<Detection>>> detect_batch_impl(const ImageView* images, int n);
  NetworkDesc m_net;
  std::unique_ptr<WeightsFile> m_weights;
  std::unique_ptr<Engine> m_engine;
  SessionOptions m_options;
  bool m_letterbox = false;
  InferTiming m_timing;
};

// Reads a names file (one class name per line); error names the file.
Expected<std::vector<std::string>> read_names(const std::string& path);

}  // namespace dlr
