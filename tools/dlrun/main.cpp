// dlrun: run a Darknet YOLO detector on images and print detections the way
// Darknet does. Results on stdout, logs and errors on stderr.
// Exit: 0 ok, 1 error (one line on stderr), 2 usage error.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/session.h"
#include "tools/common/report.h"
#include "tools/common/tool_support.h"

namespace {

using namespace dlr;
using namespace dlr::tools;

struct Args {
  std::string cfg, weights;
  std::vector<std::string> images;
  std::string names_file;
  float thresh = 0.25f;
  float nms = 0.45f;
  bool letterbox = false;
  bool no_letterbox = false;
  bool ext_output = false;
  bool json = false;
  std::string out;
  std::string device = "cpu";
  std::string precision = "fp32";
  int width = 0, height = 0;
  bool print_plan = false;
  std::string report;
  std::string trace;
  std::string mode = "preload";
  std::string weight_budget = "min";
  std::string copy_profile = "h100";
  std::string weight_pool = "auto";
  std::string units = "search";
  bool no_graph = false;
  std::string log_level = "warn";
};

std::string out_name(const std::string& out, size_t index) {
  if (index == 0) return out;
  const size_t dot = out.find_last_of('.');
  const size_t slash = out.find_last_of('/');
  const std::string suffix = "_" + std::to_string(index);
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return out + suffix;
  return out.substr(0, dot) + suffix + out.substr(dot);
}

int run(const Args& a) {
  SessionOptions opt;
  if (a.device == "cpu") {
    opt.device = DeviceKind::kCPU;
  } else if (a.device == "cuda") {
    opt.device = DeviceKind::kCUDA;
  }
  parse_precision(a.precision, &opt.precision);
  parse_weight_mode(a.mode, &opt.mode);
  opt.weight_budget = a.weight_budget;
  opt.copy_profile = a.copy_profile;
  opt.weight_pool = a.weight_pool;
  opt.unit_search = a.units == "search";
  opt.cuda_graph = !a.no_graph;
  opt.profile_layers = !a.report.empty() || !a.trace.empty();
  opt.thresh = a.thresh;
  opt.nms = a.nms;
  opt.width = a.width;
  opt.height = a.height;
  if (a.letterbox) opt.letterbox = 1;
  if (a.no_letterbox) opt.letterbox = 0;

  std::vector<std::string> names = coco_names();
  if (!a.names_file.empty()) {
    auto n = read_names(a.names_file);
    if (!n.ok()) return fail("dlrun", n.status());
    names = std::move(n).value();
  }
  auto session = Session::open(a.cfg, a.weights, opt);
  if (!session.ok()) return fail("dlrun", session.status());
  Session& s = **session;
  for (int y : s.network().output_layers()) {
    const LayerDesc& out_layer = s.network().layers[size_t(y)];
    const int classes = out_layer.kind == LayerKind::kRegion ? out_layer.region().classes
                        : out_layer.kind == LayerKind::kGaussianYolo ? out_layer.gaussian_yolo().yolo.classes
                                                                     : out_layer.yolo().classes;
    if (classes > int(names.size()))
      return fail("dlrun", (a.names_file.empty() ? std::string("default COCO names") : a.names_file) + " has " +
                               std::to_string(names.size()) + " names but the cfg's output layer " +
                               std::to_string(y) + " has classes=" + std::to_string(classes) + " (use --names)");
  }
  if (a.print_plan) {
    std::fputs(s.plan_text().c_str(), stdout);
    std::fputs(s.engine().weight_plan_text().c_str(), stdout);
  }

  for (size_t i = 0; i < a.images.size(); ++i) {
    const std::string& path = a.images[i];
    auto img = load_image(path);
    if (!img.ok()) return fail("dlrun", img.status());
    auto dets = s.detect(img->view());
    if (!dets.ok()) return fail("dlrun", dets.status());
    const InferTiming& t = s.last_timing();
    DLR_LOG_INFO("{}: pre {:.2f} ms, network {:.2f} ms, post {:.2f} ms", path, t.preprocess_ms, t.network_ms,
                 t.postprocess_ms);
    if (a.json) {
      std::printf("%s\n", detections_json(path, img->width, img->height, *dets, names).dump().c_str());
    } else {
      std::printf("%s: Predicted in %f milli-seconds.\n", path.c_str(),
                  t.preprocess_ms + t.network_ms + t.postprocess_ms);
      std::fputs(format_darknet(*dets, names, img->width, img->height, a.ext_output).c_str(), stdout);
    }
    if (!a.report.empty()) std::fputs(layer_report(s.network(), s.engine(), a.report).c_str(), stdout);
    if (!a.trace.empty()) {
      const std::string path = out_name(a.trace, i);
      std::FILE* f = std::fopen(path.c_str(), "w");
      if (!f) return fail("dlrun", path + ": cannot write the trace");
      const std::string text = chrome_trace(s.network(), s.engine()).dump();
      const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
      if (std::fclose(f) != 0 || !ok) return fail("dlrun", path + ": write failed");
    }
    if (!a.out.empty()) {
      Status st = save_annotated(out_name(a.out, i), *img, *dets, names);
      if (!st.ok()) return fail("dlrun", st);
    }
    std::fflush(stdout);
  }
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  dlr::init_logging();
  Args a;
  CLI::App app{"dlrun: Darknet YOLO detection (CPU reference or CUDA)", "dlrun"};
  app.add_option("cfg", a.cfg, "Darknet .cfg file")->required();
  app.add_option("weights", a.weights, "Darknet .weights file")->required();
  app.add_option("images", a.images, "image files (OpenCV formats; .ppm without OpenCV)")->required();
  app.add_option("--names", a.names_file, "class names file, one per line (default: the 80 COCO names)");
  app.add_option("--thresh", a.thresh, "detection threshold, strict (default 0.25)")->check(CLI::Range(0.0, 0.9999));
  app.add_option("--nms", a.nms, "NMS threshold (default 0.45)")->check(CLI::Range(0.01, 1.0));
  auto* lb = app.add_flag("--letterbox", a.letterbox, "letterbox the input (default: as the cfg's letter_box)");
  app.add_flag("--no-letterbox", a.no_letterbox, "stretch the input even if the cfg asks for letterbox")->excludes(lb);
  app.add_flag("--ext-output", a.ext_output, "print box coordinates (Darknet -ext_output)");
  app.add_flag("--json", a.json, "one JSON object per image on stdout instead of text");
  app.add_option("--out", a.out, "write the annotated image here (image i>0 gets _i before the extension)");
  app.add_option("--device", a.device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--precision", a.precision, "fp32, tf32 or fp16 (cuda only; cpu runs fp32)")
      ->check(CLI::IsMember({"fp32", "tf32", "fp16"}));
  app.add_option("--width", a.width, "override the cfg's network width (multiple of 32)")->check(CLI::Range(32, 8192));
  app.add_option("--height", a.height, "override the cfg's network height (multiple of 32)")
      ->check(CLI::Range(32, 8192));
  app.add_flag("--print-plan", a.print_plan, "print the execution plan (order, buffers, weights) before running");
  app.add_option("--report", a.report,
                 "per-layer timing after each image (copy/kernel start and end, stall, bytes; totals): table, csv or "
                 "json")
      ->check(CLI::IsMember({"table", "csv", "json"}));
  app.add_option("--trace", a.trace, "write a Chrome/Perfetto trace (compute and copy lanes) of each image's inference");
  app.add_option("--mode", a.mode, "cuda: preload (all weights resident) or stream (demand layering)")
      ->check(CLI::IsMember({"preload", "stream"}));
  app.add_option("--weight-budget", a.weight_budget,
                 "stream mode: device weight pool: min (about two of the largest layer), all, NN%, NNMiB, NNMB or "
                 "bytes (default min)");
  app.add_option("--weight-pool", a.weight_pool,
                 "stream mode: auto (ring where the GPU can map it), ring (one buffer mapped twice: exact byte "
                 "lookahead), slots (K slots of the largest layer)")
      ->check(CLI::IsMember({"auto", "ring", "slots"}));
  app.add_option("--units", a.units,
                 "stream mode, ring pool: search (copy units chosen by simulating the plan with kernel times "
                 "measured at open; default) or chunks (equal chunks of the copy profile's size)")
      ->check(CLI::IsMember({"search", "chunks"}));
  app.add_option("--copy-profile", a.copy_profile,
                 "stream mode: copy-engine profile: a dlprobe JSON file or h100, discrete, jetson-xavier "
                 "(default h100)");
  app.add_flag("--no-graph", a.no_graph, "cuda: do not capture the inference in a CUDA graph");
  app.add_option("--log-level", a.log_level, "trace, debug, info, warn, error or off (stderr)")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? dlr::tools::kExitOk : dlr::tools::kExitUsage;
  }
  dlr::set_log_level(a.log_level);
  return run(a);
}
