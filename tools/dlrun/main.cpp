// dlrun: run a Darknet YOLO detector on images, videos and cameras and print
// detections the way Darknet does. Detections on stdout; progress, summary,
// reports, logs and errors on stderr.
// Exit: 0 ok, 1 error (one line on stderr) or an input that failed to read (the
// others still ran), 2 usage error. No exception escapes.
#include <CLI/CLI.hpp>

#include <cstdio>
#include <exception>
#include <string>

#include "runtime/core/log.h"
#include "tools/common/command_line.h"
#include "tools/common/process_exit.h"
#include "tools/common/tool_support.h"
#include "tools/dlrun/options.h"
#include "tools/dlrun/run.h"

namespace {

int dlrun_main(int argc, char** argv) {
  dlr::init_logging();
  dlr::tools::Args a;
  CLI::App app{
      "dlrun: Darknet YOLO detection on the CPU (the default, the reference backend) or a CUDA GPU, on images, "
      "videos, cameras, directories and lists. Detections on stdout (Darknet's text, or --json); progress, "
      "summary and reports on stderr. Exit code: 0 ok; 1 an error, or an input that failed to read (the run "
      "goes on with the next); 2 a usage error; 130 interrupted (Ctrl-C; outputs closed).",
      "dlrun"};
  dlr::tools::add_dlrun_options(app, &a);
  app.footer(
      "Examples:\n"
      "  dlrun yolov4.cfg yolov4.weights dog.jpg --ext-output\n"
      "  dlrun yolov4.cfg yolov4.weights 'shots/*.jpg' --json > detections.jsonl\n"
      "  dlrun obj.cfg obj.weights video.mp4 --names obj.data --out-video annotated.mp4\n"
      "  dlrun yolov4.cfg yolov4.weights --camera 0 --device cuda --mode stream --weight-budget 64MiB\n"
      "\n"
      "Every option in detail, the inputs and the output formats: docs/dlrun-io.md");
  if (const int rc = dlr::tools::parse_command_line(app, argc, argv, "dlrun"); rc >= 0) return rc;
  dlr::tools::resolve_model_args(&a);
  dlr::set_log_level(a.log_level);
  const int rc = dlr::tools::run_dlrun(a);
  DLR_LOG_DEBUG("exit code {}", rc);
  return dlr::tools::finish_process(rc);  // ends here when the models were left to the exit
}

// An exception's text on one line (OpenCV's span several).
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return dlrun_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dlrun: internal error: %s\n", one_line(e.what()).c_str());
  } catch (...) {
    std::fprintf(stderr, "dlrun: internal error (unknown exception)\n");
  }
  return dlr::tools::kExitError;
}
