// robot_loop: a robot's perception loop with two detectors on one video stream,
// written against dlrun's public API only (<dlrun/dlrun.h>). README.md here.
//
// Frames come from raw BGR24 (a file or "-" for stdin: pipe a camera or video
// through ffmpeg / GStreamer), or with OpenCV from a camera index, a video file, a
// URL (rtsp://, http://, ...: OpenCV's FFmpeg backend) or a GStreamer pipeline (an
// argument holding " ! ", ending in appsink: OpenCV's GStreamer backend). A live URL
// (no known length) that stops delivering frames is opened again up to --reconnect
// times, --reconnect-delay seconds apart, one stderr line each, before the input
// ends. Messages show a URL's user:password as ***.
// Detector A (e.g. a small obstacle detector) runs on every frame; detector B
// (e.g. a larger object detector) every --b-every frames. With --runtime BUDGET both
// detectors are opened on one dlrun::Runtime: one device-memory budget for the two,
// split by the runtime, with shared activations and workspace. Without it each is its
// own session with its own weight budget (--stream --budget-a/--budget-b). CPU threads:
// auto shares the CPUs among the sessions that detect at once, or pass --threads to
// pin each session's count.
#include <dlrun/dlrun.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#ifdef ROBOT_LOOP_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/videoio.hpp>
#endif

namespace {

std::atomic<bool> g_stop{false};
void on_signal(int) { g_stop = true; }

struct Args {
  std::string a_cfg, a_weights, b_cfg, b_weights;
  std::string raw;     // raw BGR24 file or "-"
  int raw_w = 0, raw_h = 0;
  std::string video;   // OpenCV: camera index, video path, URL or GStreamer pipeline
  int reconnect = 3;   // live URLs: attempts when the stream stops
  double reconnect_delay_s = 2.0;
  int b_every = 1;
  int frames = 0;      // 0: until the input ends (or Ctrl-C)
  int threads = 0;
  std::string device = "cpu";
  std::string budget_a = "min", budget_b = "min";  // stream mode weight budgets (cuda)
  std::string runtime;  // non-empty: one runtime with this budget for both detectors
  bool stream = false;
  bool quiet = false;
};

int usage() {
  std::fprintf(stderr,
               "usage: robot_loop --a CFG WEIGHTS --b CFG WEIGHTS (--raw FILE|- --size WxH |\n"
               "                  --video CAMERA|PATH|URL|'PIPELINE ! appsink' [--reconnect N] [--reconnect-delay S])\n"
               "                  [--b-every N] [--frames N] [--threads N] [--device cpu|cuda]\n"
               "                  [--runtime BUDGET | --stream --budget-a B --budget-b B] [--quiet]\n");
  return 2;
}

bool parse(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto need = [&](int n) { return i + n < argc; };
    if (k == "--a" && need(2)) { a->a_cfg = argv[++i]; a->a_weights = argv[++i]; }
    else if (k == "--b" && need(2)) { a->b_cfg = argv[++i]; a->b_weights = argv[++i]; }
    else if (k == "--raw" && need(1)) a->raw = argv[++i];
    else if (k == "--size" && need(1)) {
      if (std::sscanf(argv[++i], "%dx%d", &a->raw_w, &a->raw_h) != 2) return false;
    }
    else if (k == "--video" && need(1)) a->video = argv[++i];
    else if (k == "--reconnect" && need(1)) a->reconnect = std::max(0, std::atoi(argv[++i]));
    else if (k == "--reconnect-delay" && need(1)) a->reconnect_delay_s = std::max(0.0, std::atof(argv[++i]));
    else if (k == "--b-every" && need(1)) a->b_every = std::max(1, std::atoi(argv[++i]));
    else if (k == "--frames" && need(1)) a->frames = std::atoi(argv[++i]);
    else if (k == "--threads" && need(1)) a->threads = std::atoi(argv[++i]);
    else if (k == "--device" && need(1)) a->device = argv[++i];
    else if (k == "--stream") a->stream = true;
    else if (k == "--budget-a" && need(1)) a->budget_a = argv[++i];
    else if (k == "--budget-b" && need(1)) a->budget_b = argv[++i];
    else if (k == "--runtime" && need(1)) a->runtime = argv[++i];
    else if (k == "--quiet") a->quiet = true;
    else return false;
  }
  const bool raw_ok = !a->raw.empty() && a->raw_w > 0 && a->raw_h > 0 && a->raw_w <= 16384 && a->raw_h <= 16384;
  if (!a->runtime.empty() && a->stream) return false;  // the runtime chooses each model's weight budget
  return !a->a_cfg.empty() && !a->b_cfg.empty() && (raw_ok || !a->video.empty());
}

// One source of BGR frames.
class FrameSource {
 public:
  explicit FrameSource(const Args& a) : m_args(a) {}
  ~FrameSource() {
    if (m_file != nullptr && m_file != stdin) std::fclose(m_file);
  }
  bool open(std::string* error) {
    if (!m_args.raw.empty()) {
      m_file = m_args.raw == "-" ? stdin : std::fopen(m_args.raw.c_str(), "rb");
      if (m_file == nullptr) {
        *error = m_args.raw + ": " + std::strerror(errno);
        return false;
      }
      m_buffer.resize(size_t(m_args.raw_w) * size_t(m_args.raw_h) * 3);
      return true;
    }
#ifdef ROBOT_LOOP_OPENCV
    if (!open_video()) {
      *error = shown_name(m_args.video) + ": OpenCV cannot open this " + what_video() + " (" + backend() + " backend)";
      return false;
    }
    m_live = is_url(m_args.video) && !(m_cap.get(cv::CAP_PROP_FRAME_COUNT) >= 1);
    return true;
#else
    *error = "--video needs robot_loop built with OpenCV";
    return false;
#endif
  }
  // The next frame, or false at the end of the input (a raw input that ends inside a
  // frame: partial_bytes() says how much of it came).
  bool next(dlrun::ImageView* v) {
    if (m_file != nullptr) {
      const size_t got = std::fread(m_buffer.data(), 1, m_buffer.size(), m_file);
      if (got != m_buffer.size()) {
        m_partial = got;
        return false;
      }
      *v = dlrun::ImageView{m_buffer.data(), m_args.raw_w, m_args.raw_h, 0, dlrun::ImageView::Order::kBGR};
      return true;
    }
#ifdef ROBOT_LOOP_OPENCV
    while (!m_cap.read(m_frame) || m_frame.empty()) {
      if (!m_live || !reconnect()) return false;
    }
    if (m_frame.type() != CV_8UC3) return false;
    m_attempts = 0;  // frames flow: the next outage gets every attempt again
    ++m_frames;
    *v = dlrun::ImageView{m_frame.data, m_frame.cols, m_frame.rows, int64_t(m_frame.step),
                          dlrun::ImageView::Order::kBGR};
    return true;
#else
    return false;
#endif
  }
  size_t partial_bytes() const { return m_partial; }
  size_t frame_bytes() const { return m_buffer.size(); }

 private:
  static bool is_pipeline(const std::string& s) { return s.find(" ! ") != std::string::npos; }
  static bool is_url(const std::string& s) {
    const size_t p = s.find("://");
    return p != std::string::npos && p > 0 && s.find_first_of(" /") > p;
  }
  // `s` with a URL's user:password shown as ***.
  static std::string shown_name(std::string s) {
    for (size_t p = s.find("://"); p != std::string::npos; p = s.find("://", p + 3)) {
      const size_t end = s.find_first_of("/ ?#", p + 3), at = s.rfind('@', end == std::string::npos ? s.size() : end);
      if (at != std::string::npos && at > p + 3 && (end == std::string::npos || at < end))
        s.replace(p + 3, at - (p + 3), "***");
    }
    return s;
  }
#ifdef ROBOT_LOOP_OPENCV
  const char* backend() const {
    return is_pipeline(m_args.video) ? "GStreamer" : is_url(m_args.video) ? "FFmpeg" : "OpenCV's default";
  }
  std::string what_video() const {
    if (is_pipeline(m_args.video)) return "pipeline";
    if (is_url(m_args.video)) return "stream";
    return m_args.video.find_first_not_of("0123456789") == std::string::npos ? "camera" : "video";
  }
  bool open_video() {
    const std::string& v = m_args.video;
    if (v.find_first_not_of("0123456789") == std::string::npos) return m_cap.open(std::atoi(v.c_str()));
    if (is_pipeline(v)) return m_cap.open(v, cv::CAP_GSTREAMER);
    if (is_url(v))  // give up opening, and each read, after 10 s
      return m_cap.open(v, cv::CAP_FFMPEG,
                        {cv::CAP_PROP_OPEN_TIMEOUT_MSEC, 10000, cv::CAP_PROP_READ_TIMEOUT_MSEC, 10000});
    return m_cap.open(v);
  }
  // The live stream stopped: true once it is open again; false when the attempts are spent.
  bool reconnect() {
    const std::string name = shown_name(m_args.video);
    while (m_attempts < m_args.reconnect && !g_stop) {
      ++m_attempts;
      std::fprintf(stderr,
                   "robot_loop: %s: the stream stopped after %ld frames; reconnecting in %g s (attempt %d of %d)\n",
                   name.c_str(), m_frames, m_args.reconnect_delay_s, m_attempts, m_args.reconnect);
      std::this_thread::sleep_for(std::chrono::duration<double>(m_args.reconnect_delay_s));
      m_cap.release();
      if (!g_stop && open_video()) return true;
    }
    std::fprintf(stderr, "robot_loop: %s: the stream ended after %ld frames (%d reconnect attempts made)\n",
                 name.c_str(), m_frames, m_attempts);
    return false;
  }
#endif

  const Args& m_args;
  std::FILE* m_file = nullptr;
  size_t m_partial = 0;  // bytes of a last, incomplete raw frame
  std::vector<uint8_t> m_buffer;
#ifdef ROBOT_LOOP_OPENCV
  cv::VideoCapture m_cap;
  cv::Mat m_frame;
  bool m_live = false;  // a URL of unknown length: reconnects when it stops
  int m_attempts = 0;   // reconnect attempts since the last frame
  long m_frames = 0;
#endif
};

dlrun::Options detector_options(const Args& a, const std::string& budget) {
  dlrun::Options o;
  o.device = a.device == "cuda" ? dlrun::Device::kCUDA : dlrun::Device::kCPU;
  o.threads = a.threads;
  if (a.stream) {
    o.mode = dlrun::Mode::kStream;
    o.weight_budget = budget;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse(argc, argv, &args)) return usage();
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
  // The library's messages go to stderr; an application can route them elsewhere.
  dlrun::set_log_callback([](dlrun::LogLevel, const std::string& m) { std::fprintf(stderr, "[dlrun] %s\n", m.c_str()); });

  // Both detectors on one runtime (one budget), or each alone.
  dlrun::Result<dlrun::Runtime> runtime = dlrun::Error{dlrun::ErrorCode::kInvalidArgument, "no runtime"};
  if (!args.runtime.empty()) {
    dlrun::RuntimeOptions ro;
    ro.device = args.device == "cuda" ? dlrun::Device::kCUDA : dlrun::Device::kCPU;
    ro.budget = args.runtime;
    runtime = dlrun::Runtime::create(ro);
    if (!runtime) return std::fprintf(stderr, "robot_loop: runtime: %s\n", runtime.error().message.c_str()), 1;
  }
  auto open = [&](const std::string& cfg, const std::string& weights, const std::string& budget) {
    const dlrun::Options o = detector_options(args, budget);
    return runtime ? runtime->open(cfg, weights, o) : dlrun::Session::open(cfg, weights, o);
  };
  auto a = open(args.a_cfg, args.a_weights, args.budget_a);
  if (!a) return std::fprintf(stderr, "robot_loop: detector A: %s\n", a.error().message.c_str()), 1;
  auto b = open(args.b_cfg, args.b_weights, args.budget_b);
  if (!b) return std::fprintf(stderr, "robot_loop: detector B: %s\n", b.error().message.c_str()), 1;
  if (runtime) {
    const dlrun::RuntimeMemory m = runtime->memory();
    std::fprintf(stderr, "robot_loop: one runtime, budget %s: %.1f MiB in use (activations %.1f, workspace %.1f, "
                 "weights %.1f)\n", args.runtime.c_str(), double(m.total()) / 1048576.0,
                 double(m.activations) / 1048576.0, double(m.workspace) / 1048576.0, double(m.weights) / 1048576.0);
  }
  std::fprintf(stderr, "robot_loop: dlrun %s; A %dx%d, B %dx%d (B every %d frames)\n", dlrun::version(),
               a->info().input_width, a->info().input_height, b->info().input_width, b->info().input_height,
               args.b_every);

  FrameSource source(args);
  std::string error;
  if (!source.open(&error)) return std::fprintf(stderr, "robot_loop: %s\n", error.c_str()), 1;

  using Clock = std::chrono::steady_clock;
  long frames = 0, dets_a = 0, dets_b = 0;
  double worst_ms = 0, total_ms = 0;
  dlrun::ImageView frame;
  while (!g_stop && (args.frames == 0 || frames < args.frames) && source.next(&frame)) {
    const auto t0 = Clock::now();
    auto da = a->detect(frame);
    if (!da) return std::fprintf(stderr, "robot_loop: frame %ld: A: %s\n", frames, da.error().message.c_str()), 1;
    size_t nb = 0;
    if (frames % args.b_every == 0) {
      auto db = b->detect(frame);
      if (!db) return std::fprintf(stderr, "robot_loop: frame %ld: B: %s\n", frames, db.error().message.c_str()), 1;
      nb = db->size();
    }
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    worst_ms = std::max(worst_ms, ms);
    total_ms += ms;
    dets_a += long(da->size());
    dets_b += long(nb);
    // A robot would act here: the nearest obstacle from A, targets from B.
    if (!args.quiet) std::printf("frame %ld: A %zu, B %zu detections, %.1f ms\n", frames, da->size(), nb, ms);
    ++frames;
  }
  std::printf("robot_loop: %ld frames, %ld + %ld detections, mean %.1f ms, worst %.1f ms, A threads %d\n", frames,
              dets_a, dets_b, frames > 0 ? total_ms / double(frames) : 0.0, worst_ms, a->last_report().threads);
  if (source.partial_bytes() > 0) {  // a truncated stream is an error, not an end
    std::fprintf(stderr, "robot_loop: %s: the input ended %zu bytes into frame %ld (a %dx%d BGR frame is %zu bytes)\n",
                 args.raw.c_str(), source.partial_bytes(), frames, args.raw_w, args.raw_h, source.frame_bytes());
    return 1;
  }
  return 0;
}
