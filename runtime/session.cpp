#include "runtime/session.h"

#include <chrono>
#include <fstream>

#include "runtime/core/log.h"
#include "runtime/cpu_engine.h"
#include "runtime/streaming/stream_plan.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr {
namespace {

double ms_between(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

const char* weight_mode_name(WeightMode m) { return m == WeightMode::kStream ? "stream" : "preload"; }

bool parse_weight_mode(const std::string& s, WeightMode* out) {
  if (s == "preload") *out = WeightMode::kPreload;
  else if (s == "stream") *out = WeightMode::kStream;
  else return false;
  return true;
}

Session::~Session() = default;

Expected<std::unique_ptr<Session>> Session::open(const std::string& cfg_path, const std::string& weights_path,
                                                 const SessionOptions& options) {
  if (options.batch < 1 || options.batch > 64)
    return invalid_argument("batch " + std::to_string(options.batch) + " is out of range (1..64)");
  if (!(options.thresh >= 0.0f && options.thresh < 1.0f))
    return invalid_argument("thresh must be in [0, 1)");
  if (!(options.nms > 0.0f && options.nms <= 1.0f)) return invalid_argument("nms must be in (0, 1]");
  PoolLayout pool = PoolLayout::kAuto;
  if (!parse_pool_layout(options.weight_pool, &pool))
    return invalid_argument("weight pool \"" + options.weight_pool + "\": expected auto, ring or slots");
  if (!(options.unit_search_min_gain >= 0.0 && options.unit_search_min_gain < 1.0))
    return invalid_argument("unit search minimum gain " + std::to_string(options.unit_search_min_gain) +
                            " must be in [0, 1)");
  std::unique_ptr<Session> s(new Session());
  s->m_options = options;
  CfgOptions cfg_opt;
  cfg_opt.width = options.width;
  cfg_opt.height = options.height;
  DLR_ASSIGN_OR_RETURN(s->m_net, parse_network_cfg(cfg_path, cfg_opt));
  DLR_ASSIGN_OR_RETURN(WeightsFile wf, WeightsFile::open(weights_path, s->m_net));
  s->m_weights = std::make_unique<WeightsFile>(std::move(wf));
  s->m_letterbox = options.letterbox < 0 ? s->m_net.net.letter_box : options.letterbox != 0;
  if (s->m_net.output_layers().empty())
    return unsupported(cfg_path + ": the network has no detection output layer (expected [yolo], [region] or "
                                  "[Gaussian_yolo])");

  PlannerOptions popt;
  popt.batch = options.batch;
  popt.concat_in_place = options.concat_in_place;
  popt.keep_all_outputs = options.keep_all_outputs;
  if (options.device == DeviceKind::kCPU) {
    if (options.mode != WeightMode::kPreload)
      return invalid_argument("the CPU backend keeps every weight in host memory (--mode stream needs --device cuda)");
    if (options.precision != Precision::kFP32)
      return invalid_argument(std::string("the CPU backend runs fp32 only (asked for ") +
                              precision_name(options.precision) + ")");
    DLR_ASSIGN_OR_RETURN(ExecutionPlan plan, build_plan(s->m_net, popt));
    DLR_ASSIGN_OR_RETURN(s->m_engine, CpuEngine::create(s->m_net, std::move(plan), *s->m_weights));
  } else {
#ifdef DLR_HAVE_CUDA
    DLR_ASSIGN_OR_RETURN(s->m_engine, create_cuda_engine(s->m_net, *s->m_weights, options));
#else
    return unsupported("this dlrun was built without the CUDA backend (rebuild with -DDLR_CUDA=ON)");
#endif
  }
  DLR_LOG_INFO("opened {} ({} layers, {:.3f} GFLOPs @{}x{}) on {}", cfg_path, s->m_net.layers.size(),
               s->m_net.total_gflops(), s->m_net.net.width, s->m_net.net.height, device_name(options.device));
  return s;
}

Expected<std::vector<std::vector<Detection>>> Session::detect_batch(const ImageView* images, int n) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  DLR_RETURN_IF_ERROR(m_engine->set_images(images, n, m_letterbox));
  const auto t1 = Clock::now();
  DLR_RETURN_IF_ERROR(m_engine->run());
  const auto t2 = Clock::now();
  PostprocessOptions post;
  post.thresh = m_options.thresh;
  post.nms = m_options.nms;
  post.letterbox = m_letterbox;
  std::vector<std::vector<Detection>> all;
  for (int i = 0; i < n; ++i) {
    std::vector<HeadOutput> heads;
    for (int y : m_net.output_layers()) heads.push_back(head_output(m_net.layers[size_t(y)], m_engine->output(y, i)));
    all.push_back(postprocess(heads, m_net.net.width, m_net.net.height, images[i].width, images[i].height, post));
  }
  const auto t3 = Clock::now();
  m_timing = InferTiming{ms_between(t0, t1), ms_between(t1, t2), ms_between(t2, t3)};
  return all;
}

Expected<std::vector<Detection>> Session::detect(const ImageView& image) {
  DLR_ASSIGN_OR_RETURN(auto all, detect_batch(&image, 1));
  return std::move(all[0]);
}

Expected<std::vector<std::string>> read_names(const std::string& path) {
  std::ifstream f(path);
  if (!f) return io_error(path + ": cannot open names file");
  std::vector<std::string> names;
  std::string line;
  while (std::getline(f, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    names.push_back(line);
  }
  while (!names.empty() && names.back().empty()) names.pop_back();
  if (names.empty()) return parse_error(path + ": names file is empty");
  return names;
}

}  // namespace dlr
