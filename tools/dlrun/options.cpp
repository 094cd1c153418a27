#include "tools/dlrun/options.h"

#include <utility>

#include "runtime/options.h"
#include "tools/common/class_names.h"
#include "tools/common/model_specs.h"
#include "tools/common/version_info.h"

namespace dlr::tools {
namespace {

void add_inputs(CLI::App& app, Args* a) {
  const char* g = "Inputs";
  app.add_option("cfg", a->cfg, "Darknet .cfg file (not with --model)")->group(g);
  app.add_option("weights", a->weights, "Darknet .weights file (not with --model)")->group(g);
  app.add_option("--model", a->models,
                 "instead of CFG WEIGHTS, repeatable (@SIZE: that model's network size): every model runs on every "
                 "input, all on one runtime; output tagged [NAME], files get _NAME (docs/dlrun-io.md, \"Several "
                 "models\")")
      ->type_name("CFG:WEIGHTS[@SIZE]")
      ->allow_extra_args(false)  // each --model takes one spec; the next words are inputs
      ->group(g);
  app.add_option("--runtime-budget", a->runtime_budget,
                 "--model: device memory for all the models: all, NN% of the GPU's memory or a size (CPU: the host "
                 "memory they hold, all or a size)")
      ->group(g);
  app.add_option("inputs", a->inputs,
                 "images, videos (.mp4 .avi .mkv ...), streams (a URL: rtsp://, http://, udp://, ...; or a quoted "
                 "GStreamer pipeline ending in appsink: 'videotestsrc ! videoconvert ! appsink'), directories, "
                 "quoted globs ('shots/*.jpg'), @LIST (a file of paths) or - (paths on stdin)")
      ->group(g);
  app.add_option("--list", a->lists, "a file of image/video paths, one per line (same as @FILE)")->group(g);
  app.add_flag("--recursive,-r", a->recursive, "directories: also the image files in their sub-directories")->group(g);
  app.add_option("--camera", a->camera, "read camera N (OpenCV VideoCapture, /dev/videoN) after the other inputs (-1: none)")
      ->check(CLI::Range(0, 255))
      ->group(g);
  app.add_option("--reconnect", a->reconnect,
                 "a live stream (a URL of unknown length) that stops delivering frames is opened again up to N "
                 "times per outage, one stderr line each, before its input ends; a URL of known length (a video "
                 "file over http) and a pipeline end at their end")
      ->check(CLI::Range(0, 1000000))
      ->group(g);
  app.add_option("--reconnect-delay", a->reconnect_delay_s, "seconds to wait before each --reconnect attempt")
      ->check(CLI::Range(0.0, 3600.0))
      ->group(g);
  app.add_option("--frames", a->max_frames, "stop after N frames in all (0: every frame; Ctrl-C also stops cleanly)")
      ->check(CLI::NonNegativeNumber)
      ->group(g);
  add_session_flags(app, &a->session, {"--batch"}, g);
}

void add_detection(CLI::App& app, Args* a) {
  const char* g = "Detection";
  app.add_option("--names", a->names_file,
                 "class names: a names file (one per line) or a Darknet .data file (its names= key); "
                 "empty: the 80 COCO names for an 80-class model, else class indexes")
      ->group(g);
  app.add_option("--thresh", a->thresh, "detection threshold (strict >)")->check(CLI::Range(0.0, 0.9999))->group(g);
  app.add_option("--nms", a->nms, "NMS threshold")->check(CLI::Range(0.01, 1.0))->group(g);
  auto* lb = app.add_flag("--letterbox", a->letterbox, "letterbox the input (default: as the cfg's letter_box)")
                 ->group(g);
  app.add_flag("--no-letterbox", a->no_letterbox, "stretch the input even if the cfg asks for letterbox")
      ->excludes(lb)
      ->group(g);
  app.add_option("--width", a->width, "override the cfg's network width, multiple of 32 (0: the cfg's)")
      ->check(CLI::Range(0, 8192))
      ->group(g);
  app.add_option("--height", a->height, "override the cfg's network height, multiple of 32 (0: the cfg's)")
      ->check(CLI::Range(0, 8192))
      ->group(g);
}

void add_outputs(CLI::App& app, Args* a) {
  const char* g = "Outputs (detections on stdout; progress, summary and reports on stderr)";
  app.add_flag("--ext-output", a->ext_output, "print box coordinates (Darknet -ext_output)")->group(g);
  app.add_flag("--json", a->json, "one JSON object per frame on stdout instead of text")->group(g);
  app.add_option("--out", a->out,
                 "write annotated images here (.jpg, .png, ...; image i>0 gets _i before the extension), or into "
                 "a folder DIR/ under their source names; image inputs only")
      ->group(g);
  app.add_option("--out-video", a->out_video,
                 "write every annotated frame into one video (.avi/.mkv: MJPG, .mp4/.m4v/.mov: mp4v) at the first "
                 "frame's size, frames of other sizes letterboxed")
      ->group(g);
  app.add_option("--darknet-json", a->darknet_json,
                 "write Darknet's -out JSON (frame_id, filename, objects with relative_coordinates) to FILE")
      ->group(g);
  app.add_option("--coco-json", a->coco_json,
                 "write COCO detection results (image_id, category_id, bbox [x,y,w,h] px, score) to FILE")
      ->group(g);
  app.add_flag("--save-labels", a->save_labels,
               "write YOLO labels 'class cx cy w h' for each image beside it (name.txt), image inputs only")
      ->group(g);
  app.add_option("--labels-dir", a->labels_dir, "with --save-labels: write the label files into DIR instead")
      ->group(g);
  app.add_flag("--show", a->show,
               "show each annotated frame in a window (one per model), as Darknet's detector demo; Esc or q (or "
               "closing it) ends the run; needs a display (DISPLAY)")
      ->group(g);
  app.add_option("--show-wait", a->show_wait_ms,
                 "--show: milliseconds to wait for a key after each frame; 0: until a key is pressed")
      ->check(CLI::Range(0, 3600000))
      ->group(g);
  app.add_option("--progress", a->progress, "progress bar on stderr: auto (when stderr is a terminal), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->group(g);
  app.add_option("--summary", a->summary,
                 "closing summary on stderr (frames, FPS, latency, memory): auto (several frames), always, never")
      ->check(CLI::IsMember({"auto", "always", "never"}))
      ->group(g);
}

// The device and its plan: the shared flags (session_flags.h) and dlrun's own.
void add_device(CLI::App& app, Args* a) {
  const char* g = "Device";
  add_session_flags(app, &a->session, {"--threads", "--thread-priority", "--cpu-affinity", "--device", "--precision",
                                       "--mode", "--weight-budget", "--max-slowdown"}, g);
  app.add_option("--latency-target", a->latency_target_ms,
                 "--weight-budget auto: the smallest budget predicted within this latency, ms (instead of "
                 "--max-slowdown)")
      ->check(CLI::Range(0.0, 1e6))
      ->group(g);
  add_session_flags(app, &a->session, {"--weight-pool", "--units", "--residency", "--stage-whole"}, g);
  app.add_flag("--no-arena-staging", a->no_arena_staging,
               "stream mode, ring pool: never stage streamed weights in idle activation bytes")
      ->group(g);
  add_session_flags(app, &a->session, {"--copy-profile", "--no-graph", "--no-kernel-cache", "--no-calibrate"}, g);
}

void add_storage(CLI::App& app, Args* a) {
  add_session_flags(app, &a->session, {"--weights-from", "--host-budget", "--zero-copy", "--read-depth", "--read-block",
                                       "--reader", "--prefetch-reads", "--cache-hits", "--prepared"},
                    "Weights from storage");
}

void add_plan_and_reports(CLI::App& app, Args* a) {
  const char* g = "Plan and reports";
  app.add_flag("--print-plan", a->print_plan,
               "print the compiled model (steps, buffers, weight placement, predictions) before running")
      ->group(g);
  app.add_option("--save-plan", a->save_plan, "write the compiled model as JSON to FILE (after open)")->group(g);
  app.add_option("--report", a->report,
                 "per-layer timing after each inference: table, csv or json; to --report-file, else stderr")
      ->check(CLI::IsMember({"table", "csv", "json"}))
      ->group(g);
  app.add_option("--report-file", a->report_file, "write the --report output to FILE instead of stderr")->group(g);
  app.add_option("--trace", a->trace,
                 "write a Chrome/Perfetto trace (compute and copy lanes) of each inference (inference i>0: _i "
                 "before the extension)")
      ->group(g);
  app.add_option("--prepare", a->prepare,
                 "write the prepared weight file of CFG WEIGHTS for --device and --precision to OUT and exit "
                 "(no inputs)")
      ->type_name("OUT")
      ->group(g);
  app.add_option("--cache", a->cache,
                 "the prepared weight cache (--weights-from storage), then exit: list (each file, size, last use, "
                 "model and precision) or clear (every file not in use, and temporaries of writers that died). "
                 "Bound: DLR_CACHE_MAX_BYTES (docs/dlrun-io.md)")
      ->type_name("list|clear")
      ->group(g);
  app.add_option("--log-level", a->log_level, "trace, debug, info, warn, error or off (stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}))
      ->group(g);
}

}  // namespace

void add_dlrun_options(CLI::App& app, Args* a) {
  app.option_defaults()->always_capture_default();
  app.set_version_flag("--version", [] { return version_text("dlrun"); },
                       "print the version, git commit, CUDA/cuDNN/OpenCV versions and the GPU, and exit");
  add_inputs(app, a);
  add_detection(app, a);
  add_outputs(app, a);
  add_device(app, a);
  add_storage(app, a);
  add_plan_and_reports(app, a);
  add_other_session_flags(app, &a->session, "Device");  // a shared flag not placed above
}

void resolve_model_args(Args* a) {
  if (a->models.empty()) return;
  std::vector<std::string> front;
  for (std::string* slot : {&a->cfg, &a->weights})
    if (!slot->empty()) front.push_back(std::move(*slot)), slot->clear();
  a->inputs.insert(a->inputs.begin(), front.begin(), front.end());
}

namespace {

bool ends_with(const std::string& s, const std::string& end) {
  return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0;
}

// Darknet's `detector test coco.data yolov4.cfg yolov4.weights` habit: a .data file where
// the cfg goes. The error names the --names that would take its class names.
Status data_file_as_cfg(const std::string& data) {
  const Expected<std::string> names = data_file_names_path(data);
  return invalid_argument(data + ": a Darknet .data file where the CFG goes: dlrun takes CFG WEIGHTS, and the class "
                          "names from --names (--names " + (names.ok() ? *names : data) + ")");
}

// --model: the options a runtime of several models does not support, and the
// positional CFG WEIGHTS (inputs ending in .cfg or .weights).
Status check_model_args(const Args& a) {
  if (a.models.empty()) {
    if (a.runtime_budget != Args().runtime_budget) return invalid_argument("--runtime-budget needs --model");
    if (ends_with(a.cfg, ".data")) return data_file_as_cfg(a.cfg);
    if (a.cfg.empty() || a.weights.empty())
      return invalid_argument("give CFG WEIGHTS (or --model CFG:WEIGHTS, repeated)");
    return Status();
  }
  const Expected<WeightBudget> budget = WeightBudget::parse(a.runtime_budget);
  if (!budget.ok() || budget->kind == WeightBudget::Kind::kMin || budget->kind == WeightBudget::Kind::kAuto)
    return invalid_argument("--runtime-budget " + a.runtime_budget + ": expected all, NN% or a size (NNMiB, NNMB, bytes)");
  for (const std::string& m : a.models) {
    DLR_ASSIGN_OR_RETURN(const ModelSpec spec, parse_model_spec(m, "--model"));
    if (spec.synthetic)
      return invalid_argument("--model " + m + ": no WEIGHTS: expected CFG:WEIGHTS[@SIZE] (dlgen writes synthetic "
                              "weights for a cfg)");
  }
  // On the GPU the runtime's joint plan gives each model its weight budget, pool and
  // resident weights, and plans every copy with the runtime's copy profile.
  const std::pair<const char*, const char*> runtime_decides[] = {
      {"weight_budget", "its weight budget"}, {"weight_pool", "its pool"},
      {"max_slowdown", "its weight budget"},  {"residency", "its resident weights"},
      {"calibrate_copies", "the copy profile every model is planned with, from --copy-profile"}};
  for (const SessionFlag& row : session_flags()) {
    if (!a.session.changed(row.option)) continue;
    for (const auto& [option, what] : runtime_decides)
      if (row.option == std::string(option))
        return invalid_argument(std::string(flag_name(row, FlagTool::kDlrun)) +
                                " is not used with --model (the runtime decides " + what + ")");
  }
  if (a.latency_target_ms != 0)
    return invalid_argument("--latency-target is not used with --model (the runtime decides its weight budget)");
  for (const std::string& in : a.inputs)
    if (ends_with(in, ".cfg") || ends_with(in, ".weights"))
      return invalid_argument("--model replaces the positional CFG WEIGHTS: give the models as --model "
                              "CFG:WEIGHTS only (" + in + ")");
  const std::pair<const char*, bool> refused[] = {{"--prepare", !a.prepare.empty()},
                                                  {"--prepared", a.session.changed("prepared_path")},
                                                  {"--save-labels", a.save_labels},
                                                  {"--report", !a.report.empty()},
                                                  {"--mode", a.session.changed("mode")}};
  for (const auto& [name, given] : refused)
    if (given)
      return invalid_argument(std::string(name) + " is not supported with --model (" +
                              (std::string(name) == "--mode"       ? "the runtime chooses each model's weight mode"
                               : std::string(name) == "--prepared" ? "one file is one model's; with --weights-from "
                                                                     "storage each model's is kept in the cache"
                                                                   : "one model at a time only") + ")");
  return Status();
}

}  // namespace

Status check_args(const Args& a) {
  DLR_RETURN_IF_ERROR(check_model_args(a));
  const bool has_inputs = !a.inputs.empty() || !a.lists.empty() || a.camera >= 0;
  if (!a.prepare.empty()) {
    if (has_inputs) return invalid_argument("--prepare writes the prepared weight file and exits: give no inputs");
    if (a.print_plan || !a.save_plan.empty())
      return invalid_argument("--prepare cannot be combined with --print-plan or --save-plan");
    return Status();
  }
  // Without inputs, dlrun may still compile the model and print or save the plan.
  if (a.inputs.empty() && a.lists.empty() && a.camera < 0 && !a.print_plan && a.save_plan.empty())
    return invalid_argument("no input: give images, videos, directories, @LIST, -, --list FILE or --camera N "
                            "(or --print-plan / --save-plan alone)");
  if (!a.labels_dir.empty() && !a.save_labels) return invalid_argument("--labels-dir needs --save-labels");
  if (!a.report_file.empty() && a.report.empty()) return invalid_argument("--report-file needs --report FORMAT");
  if (a.show_wait_ms != Args().show_wait_ms && !a.show) return invalid_argument("--show-wait needs --show");
  if ((a.width % 32) != 0 || (a.height % 32) != 0)
    return invalid_argument("--width and --height must be multiples of 32 (or 0 for the cfg's)");
  return Status();
}

}  // namespace dlr::tools
