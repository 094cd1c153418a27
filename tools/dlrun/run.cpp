#include "tools/dlrun/run.h"

#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <iostream>

#include "runtime/core/log.h"
#include "runtime/backend.h"
#include "runtime/compile/compile.h"
#include "runtime/session.h"
#include "runtime/prepare.h"
#include "tools/common/class_names.h"
#include "tools/common/frames.h"
#include "tools/common/inputs.h"
#include "tools/common/process_exit.h"
#include "tools/common/progress.h"
#include "tools/common/report.h"
#include "tools/common/session_flags.h"
#include "tools/common/tool_support.h"
#include "tools/common/video.h"
#include "tools/dlrun/cache_command.h"
#include "tools/dlrun/models.h"
#include "tools/dlrun/result_writer.h"
#include "tools/dlrun/show_window.h"

namespace dlr::tools {
namespace {

volatile std::sig_atomic_t g_stop = 0;
extern "C" void on_sigint(int) { g_stop = 1; }

constexpr const char* kTool = "dlrun";

// Typed options from the command line, checked before any file or device work
// (errors are usage errors): the shared flags through session_flags.h, which refuses the
// ones given where they mean nothing, then dlrun's own.
Expected<SessionOptions> session_options(const Args& a) {
  SessionOptions opt;
  SessionFlagTexts flags = a.session;
  // --model on the GPU: the runtime streams every model (--mode is refused there), so
  // the flags that apply to streaming apply to them.
  if (!a.models.empty() && flags.text("device") == "cuda") flags.set("mode", "stream");
  DLR_RETURN_IF_ERROR(apply_session_flags(flags, &opt));
  const std::pair<const char*, bool> stream_only[] = {{"--latency-target", a.latency_target_ms != 0},
                                                      {"--no-arena-staging", a.no_arena_staging}};
  for (const auto& [name, given] : stream_only)
    if (given && !flag_applies(FlagApplies::kCudaStream, opt)) return flag_refused(name, FlagApplies::kCudaStream);
  opt.latency_target_ms = a.latency_target_ms;
  opt.arena_staging = !a.no_arena_staging;
  opt.profile_layers = !a.report.empty() || !a.trace.empty();
  opt.thresh = a.thresh;
  opt.nms = a.nms;
  opt.width = a.width;
  opt.height = a.height;
  if (a.letterbox) opt.letterbox = 1;
  if (a.no_letterbox) opt.letterbox = 0;
  return opt;
}

Expected<std::vector<InputItem>> all_inputs(const Args& a) {
  std::vector<std::string> args = a.inputs;
  for (const std::string& l : a.lists) args.push_back("@" + l);
  std::vector<InputItem> items;
  if (!args.empty()) {
    InputOptions io;
    io.recursive = a.recursive;
    DLR_ASSIGN_OR_RETURN(items, expand_inputs(args, io, std::cin));
  }
  if (a.camera >= 0) {
    InputItem cam;
    cam.kind = InputKind::kCamera;
    cam.camera = a.camera;
    cam.path = "camera " + std::to_string(a.camera);
    items.push_back(cam);
  }
  return items;
}

// Where --report text goes: --report-file, else stderr.
class ReportSink {
 public:
  Status open(const std::string& path) {
    if (path.empty()) return Status();
    m_file = std::fopen(path.c_str(), "w");
    if (!m_file) return io_error(path + ": cannot create the report file");
    m_path = path;
    return Status();
  }
  Status write(const std::string& text) {
    std::FILE* f = m_file ? m_file : stderr;
    if (std::fwrite(text.data(), 1, text.size(), f) != text.size())
      return io_error((m_file ? m_path : std::string("stderr")) + ": write failed");
    return Status();
  }
  Status close() {
    if (!m_file) return Status();
    const bool ok = std::fclose(m_file) == 0;
    m_file = nullptr;
    return ok ? Status() : io_error(m_path + ": write failed");
  }
  ~ReportSink() {
    if (m_file) std::fclose(m_file);
  }

 private:
  std::FILE* m_file = nullptr;
  std::string m_path;
};

Status write_trace(const std::string& path, Session& s) {
  const std::string text = chrome_trace(s.network(), s.engine()).dump();
  return write_text_file(path, text);
}

// The most classes of a network's output layers; an error when `names` (read from
// `names_file`, or none: classes labelled by index) has fewer.
Expected<int> output_classes(const NetworkDesc& net, const std::vector<std::string>& names,
                             const std::string& names_file) {
  int classes = 0;
  for (int y : net.output_layers()) {
    const LayerDesc& out_layer = net.layers[size_t(y)];
    const int c = out_layer.kind == LayerKind::kRegion         ? out_layer.region().classes
                  : out_layer.kind == LayerKind::kGaussianYolo ? out_layer.gaussian_yolo().yolo.classes
                                                               : out_layer.yolo().classes;
    classes = std::max(classes, c);
    if (!names.empty() && c > int(names.size()))
      return invalid_argument((names_file.empty() ? std::string("default COCO names") : names_file) + " has " +
                              std::to_string(names.size()) + " names but the cfg's output layer " +
                              std::to_string(y) + " has classes=" + std::to_string(c) + " (use --names)");
  }
  return classes;
}

// Opens the models; CUDA: the drop of the device's free memory across the open into
// summary->device_used_bytes.
Expected<std::unique_ptr<DlrunModels>> open_measured(const Args& a, const SessionOptions& opt, RunSummary* summary) {
  int64_t free_before = -1, free_after = -1, total_bytes = 0;
  if (opt.device == DeviceKind::kCUDA && !device_memory_info(opt.device, opt.cuda_device, &free_before, &total_bytes).ok())
    free_before = -1;
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<DlrunModels> models, open_models(a, opt));
  if (free_before >= 0 && !device_memory_info(opt.device, opt.cuda_device, &free_after, &total_bytes).ok())
    free_after = -1;
  if (free_before >= 0 && free_after >= 0) summary->device_used_bytes = free_before - free_after;
  return models;
}

// Each model's name and classes; an error when `names` has too few for one.
Expected<std::vector<ModelTag>> model_tags(const DlrunModels& models, const std::vector<std::string>& names,
                                           const std::string& names_file) {
  std::vector<ModelTag> tags;
  for (size_t m = 0; m < models.sessions.size(); ++m) {
    DLR_ASSIGN_OR_RETURN(const int classes, output_classes(models.sessions[m]->network(), names, names_file));
    tags.push_back({models.names[m], classes});
  }
  return tags;
}

// Without --names: the COCO names when every model has 80 classes (Darknet's default
// model), else none (classes labelled by index) and one warning.
std::vector<std::string> default_names(const std::vector<ModelTag>& tags) {
  for (const ModelTag& t : tags) {
    if (t.classes == 80) continue;
    DLR_LOG_WARN("{} has {} classes and no names were given: classes are labelled by index (give --names FILE, a "
                 "names file or a Darknet .data file)",
                 t.name.empty() ? std::string("the model") : t.name, t.classes);
    return {};
  }
  return coco_names();
}

// --print-plan and --save-plan.
Status show_plans(const Args& a, const DlrunModels& models) {
  for (size_t m = 0; m < models.sessions.size(); ++m) {
    const std::string& name = models.names[m];
    if (a.print_plan) {
      if (!name.empty()) std::printf("== model %s ==\n", name.c_str());
      std::fputs(models.sessions[m]->plan_text().c_str(), stdout);
    }
    if (!a.save_plan.empty())
      DLR_RETURN_IF_ERROR(
          write_text_file(model_file_name(a.save_plan, name), compiled_model_to_json(models.sessions[m]->model())));
  }
  if (a.print_plan && models.runtime) std::printf("== runtime ==\n%s\n", models.runtime->plan_text().c_str());
  return Status();
}

// The frames of the inputs, a batch at a time, through every model to the outputs.
struct FrameLoop {
  FrameLoop(const Args& args, const DlrunModels& m, FrameReader& r, ResultWriter& w, ReportSink& rep, ProgressBar& p)
      : a(args), models(m), reader(r), writer(w), report(rep), progress(p),
        batch_size(m.sessions.front()->options().batch),
        batch(size_t(batch_size)), views(size_t(batch_size)), dets(m.sessions.size()), frame_dets(m.sessions.size()),
        ms(m.sessions.size()) {}

  // Until the inputs end, --max-frames, an error or SIGINT; each batch's time into *latency_ms.
  // An input that fails to read is reported and skipped (failed_input), not an error.
  Status run(std::vector<double>* latency_ms);

  const Args& a;
  const DlrunModels& models;
  FrameReader& reader;
  ResultWriter& writer;
  ReportSink& report;
  ProgressBar& progress;
  const int batch_size;  // --batch: every session's
  std::vector<Frame> batch;
  std::vector<ImageView> views;
  std::vector<std::vector<std::vector<Detection>>> dets;  // [model][frame of the batch]
  std::vector<std::vector<Detection>> frame_dets;         // [model] of one frame
  std::vector<double> ms;                                 // [model] inference time
  int64_t done = 0, inferences = 0;
  int failed = 0;  // inputs that failed to read
  bool stdout_on_terminal = false;

 private:
  // Up to --batch frames into `batch` (fewer at the end or at --max-frames); *end once
  // no frame is left.
  Expected<int> read_batch(bool* end);
  // Every model on the batch's n frames; returns the batch's time, summed over the models.
  Expected<double> detect(int n);
  // The batch's frames to the outputs, then each model's --report and --trace.
  Status write(int n);
  // An input that failed to read: its error line on stderr, and in the --json output.
  Status failed_input(const Status& error);
};

Expected<int> FrameLoop::read_batch(bool* end) {
  int n = 0;
  while (n < batch_size && !(a.max_frames > 0 && done + n >= a.max_frames)) {
    const Expected<bool> got = reader.next(&batch[size_t(n)]);
    if (!got.ok()) {
      DLR_RETURN_IF_ERROR(failed_input(got.status()));
      continue;
    }
    if (!*got) {
      *end = true;
      break;
    }
    ++n;
  }
  if (a.max_frames > 0 && done + n >= a.max_frames) *end = true;
  return n;
}

Status FrameLoop::failed_input(const Status& error) {
  ++failed;
  progress.hide();
  std::fprintf(stderr, "%s: %s\n", kTool, error.message().c_str());
  std::fflush(stderr);
  DLR_RETURN_IF_ERROR(writer.write_failure(reader.failed_path(), error.message()));
  progress.update(done + failed);
  return Status();
}

Expected<double> FrameLoop::detect(int n) {
  for (int i = 0; i < n; ++i) views[size_t(i)] = batch[size_t(i)].image.view();
  double batch_ms = 0;
  for (size_t m = 0; m < models.sessions.size(); ++m) {
    Session& s = *models.sessions[m];
    DLR_ASSIGN_OR_RETURN(dets[m], s.detect_batch(views.data(), n));
    const InferTiming& t = s.last_timing();
    ms[m] = t.preprocess_ms + t.network_ms + t.postprocess_ms;
    batch_ms += ms[m];
    DLR_LOG_INFO("inference {}{}: {} frame(s), pre {:.2f} ms, network {:.2f} ms, post {:.2f} ms", inferences,
                 models.names[m].empty() ? std::string() : " of " + models.names[m], n, t.preprocess_ms,
                 t.network_ms, t.postprocess_ms);
  }
  return batch_ms;
}

Status FrameLoop::write(int n) {
  for (int i = 0; i < n; ++i) {
    for (size_t m = 0; m < models.sessions.size(); ++m) frame_dets[m] = std::move(dets[m][size_t(i)]);
    DLR_RETURN_IF_ERROR(writer.write(batch[size_t(i)], frame_dets, ms));
  }
  for (size_t m = 0; m < models.sessions.size(); ++m) {  // each engine keeps its last inference's profile
    Session& s = *models.sessions[m];
    if (!a.report.empty()) DLR_RETURN_IF_ERROR(report.write(layer_report(s.network(), s.engine(), a.report)));
    if (!a.trace.empty())
      DLR_RETURN_IF_ERROR(write_trace(indexed_name(model_file_name(a.trace, models.names[m]), inferences), s));
  }
  return Status();
}

Status FrameLoop::run(std::vector<double>* latency_ms) {
  Status st;
  bool end = false;
  while (!end && st.ok() && !g_stop && !writer.stop_requested()) {
    const Expected<int> n = read_batch(&end);
    if (!n.ok()) return n.status();
    if (*n == 0) break;
    const Expected<double> batch_ms = detect(*n);
    if (!batch_ms.ok()) return batch_ms.status();
    latency_ms->push_back(*batch_ms);
    if (stdout_on_terminal) progress.hide();  // the detection lines go above the bar
    st = write(*n);
    ++inferences;
    done += *n;
    progress.update(done + failed);
  }
  return st;
}

// The frame loop with its outputs: the progress bar, SIGINT ending the loop, and the
// outputs closed even after an error, so that the files written so far are valid.
Status run_frames(const Args& a, const DlrunModels& models, const std::vector<std::string>& names,
                  const std::vector<ModelTag>& tags, FrameReader& reader, RunSummary* summary) {
  ResultWriter writer(a, names, tags, reader.first_fps());
  DLR_RETURN_IF_ERROR(writer.open());
  ReportSink report;
  if (!a.report.empty()) DLR_RETURN_IF_ERROR(report.open(a.report_file));

  const bool bar = a.progress == "always" || (a.progress == "auto" && ::isatty(STDERR_FILENO));
  int64_t total = reader.total();
  if (a.max_frames > 0 && (total < 0 || total > a.max_frames)) total = a.max_frames;
  ProgressBar progress(stderr, bar, total);
  g_stop = 0;
  auto* old_handler = std::signal(SIGINT, on_sigint);
  ReconnectOptions reconnect;
  reconnect.reconnect = a.reconnect;
  reconnect.delay_s = a.reconnect_delay_s;
  reconnect.stop = &g_stop;
  reader.set_reconnect(reconnect, [&progress](const std::string& line) {
    progress.hide();
    std::fprintf(stderr, "%s: %s\n", kTool, line.c_str());
    std::fflush(stderr);
  });

  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  FrameLoop loop(a, models, reader, writer, report, progress);
  loop.stdout_on_terminal = bar && ::isatty(STDOUT_FILENO);
  const Status st = loop.run(&summary->latency_ms);
  std::signal(SIGINT, old_handler);
  progress.finish();
  if (g_stop) std::fprintf(stderr, "dlrun: interrupted after %lld frames; outputs closed\n", (long long)loop.done);
  if (writer.stop_requested() && !g_stop)
    std::fprintf(stderr, "dlrun: stopped from the --show window after %lld frames; outputs closed\n",
                 (long long)loop.done);
  Status closed = writer.close();
  Status rclosed = report.close();
  DLR_RETURN_IF_ERROR(st);
  DLR_RETURN_IF_ERROR(closed);
  DLR_RETURN_IF_ERROR(rclosed);
  summary->frames = loop.done;
  summary->inferences = loop.inferences;
  summary->failed = loop.failed;
  summary->interrupted = g_stop != 0;
  summary->wall_s = std::chrono::duration<double>(Clock::now() - t0).count();
  return Status();
}

// The memory the models hold, and the process's peak RSS.
void memory_summary(const SessionOptions& opt, const DlrunModels& models, RunSummary* summary) {
  summary->peak_rss_bytes = peak_host_rss_bytes();
  summary->device = device_name(opt.device);
  if (models.runtime) {
    const RuntimeMemory m = models.runtime->memory();
    summary->device_bytes = m.total() + m.other;
    summary->weight_bytes = m.weights;
    summary->runtime_memory = m.to_text();
  } else {
    const MemoryReport m = models.sessions[0]->engine().memory();
    summary->device_bytes = m.weights + m.activations + m.workspace + m.other;
    summary->weight_bytes = m.weights;
  }
}

// A run of one image is one inference: on CUDA it runs without a graph, whose capture
// at open costs more than its one replay saves (docs/dlrun-io.md, "One image").
SessionOptions options_for_inputs(SessionOptions opt, const std::vector<InputItem>& items) {
  if (opt.device == DeviceKind::kCUDA && opt.cuda_graph && items.size() == 1 && items[0].kind == InputKind::kImage) {
    opt.cuda_graph = false;
    DLR_LOG_DEBUG("one image: no CUDA graph (one inference does not repay its capture)");
  }
  return opt;
}

// The whole run; errors are values, the exit code is chosen by the caller.
Status run_all(const Args& a, const SessionOptions& opt, RunSummary* summary, bool* show_summary) {
  std::vector<std::string> names;  // empty until the models' classes are known, without --names
  if (!a.names_file.empty()) {
    DLR_ASSIGN_OR_RETURN(names, read_class_names(a.names_file));
  }
  const bool plan_only = a.inputs.empty() && a.lists.empty() && a.camera < 0;  // --print-plan / --save-plan alone
  std::vector<InputItem> items;
  if (!plan_only) {
    DLR_ASSIGN_OR_RETURN(items, all_inputs(a));
  }
  DLR_RETURN_IF_ERROR(check_image_only_outputs(a, items));
  DLR_RETURN_IF_ERROR(create_output_folders(a));
  if (a.show && !plan_only) DLR_RETURN_IF_ERROR(ShowWindows::check_display());
  FrameReader reader(items);
  if (!plan_only) DLR_RETURN_IF_ERROR(reader.probe());
  bool streams = false;
  for (const InputItem& it : items) streams = streams || it.kind != InputKind::kImage;

  DLR_ASSIGN_OR_RETURN(std::unique_ptr<DlrunModels> models, open_measured(a, options_for_inputs(opt, items), summary));
  DLR_ASSIGN_OR_RETURN(const std::vector<ModelTag> tags, model_tags(*models, names, a.names_file));
  if (a.names_file.empty() && !plan_only) names = default_names(tags);
  DLR_RETURN_IF_ERROR(show_plans(a, *models));
  if (plan_only) return Status();
  DLR_RETURN_IF_ERROR(run_frames(a, *models, names, tags, reader, summary));
  summary->inputs = int(items.size());
  summary->batch = opt.batch;
  summary->models = int(models->sessions.size());
  memory_summary(opt, *models, summary);
  *show_summary = a.summary == "always" || (a.summary == "auto" && (summary->frames > 1 || streams));
  if (opt.device == DeviceKind::kCUDA && exit_without_teardown()) {
    hold_until_exit(std::move(models));  // the process's end reclaims them (process_exit.h)
    DLR_LOG_DEBUG("models left to the process's exit");
    return Status();
  }
  const auto t_release = std::chrono::steady_clock::now();
  models.reset();  // the sessions' device memory, graphs, handles and pinned stores
  DLR_LOG_DEBUG("models released in {:.1f} ms",
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_release).count());
  return Status();
}

}  // namespace

int run_dlrun(const Args& a) {
  if (const int rc = run_cache_command(a); rc >= 0) return rc;  // dlrun --cache list|clear
  Status usage = check_args(a);
  Expected<SessionOptions> opt = usage.ok() ? session_options(a) : Expected<SessionOptions>(usage);
  if (opt.ok()) usage = validate_options(*opt);
  if (!usage.ok() || !opt.ok()) {
    std::fprintf(stderr, "%s: %s\n", kTool, (opt.ok() ? usage : opt.status()).message().c_str());
    return kExitUsage;
  }
  if (!a.prepare.empty()) {  // dlrun --prepare OUT: no device, no inputs
    Expected<PrepareReport> r = prepare_weights(a.cfg, a.weights, *opt, a.prepare);
    if (!r.ok()) return fail(kTool, r.status());
    std::printf("prepared %s: %.2f MiB, %d blobs, %s %s, %.2f s\n", r->path.c_str(), double(r->file_bytes) / (1 << 20),
                r->blobs, dtype_name(r->dtype), layout_name(r->layout), r->seconds);
    return kExitOk;
  }
  // This thread runs the inferences; the threads the sessions start inherit its placement.
  if (const Status placed = apply_thread_options(*opt); !placed.ok()) {
    std::fprintf(stderr, "%s: %s\n", kTool, placed.message().c_str());
    return kExitUsage;
  }
  // OpenCV's warnings would add lines to our one-line errors; --log-level debug/trace keeps them.
  set_opencv_logs_quiet(a.log_level != "debug" && a.log_level != "trace");
  RunSummary summary;
  bool show = false;
  Status st = run_all(a, *opt, &summary, &show);
  if (!st.ok()) return fail(kTool, st);
  if (show) std::fputs(summary_text(summary).c_str(), stderr);
  if (summary.failed > 0 && summary.inputs > 1)
    std::fprintf(stderr, "%s: %d of %d inputs failed (their errors above); exit code 1\n", kTool, summary.failed,
                 summary.inputs);
  if (summary.interrupted) return kExitInterrupted;
  return summary.failed > 0 ? kExitError : kExitOk;
}

}  // namespace dlr::tools
