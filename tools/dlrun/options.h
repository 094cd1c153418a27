// dlrun's command line: every option in one struct, added to the parser by
// group (inputs, detection, outputs, device, plan and reports). A new option
// goes into Args and into the add_* function of its group; a session option's flag that
// dlbench has too is a row of tools/common/session_flags.cpp, its text in Args::session.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "runtime/core/status.h"
#include "tools/common/session_flags.h"

namespace dlr::tools {

struct Args {
  // ---- inputs ----
  std::string cfg, weights;  // the positional model; with --model, inputs (resolve_model_args moves them)
  std::vector<std::string> models;  // --model CFG:WEIGHTS[@SIZE], repeated: all on one runtime
  std::string runtime_budget = "all";
  std::vector<std::string> inputs;  // images, videos, directories, globs, @LIST, -
  std::vector<std::string> lists;   // --list FILE (same as @FILE)
  bool recursive = false;
  int camera = -1;                  // --camera N; -1: none
  long long max_frames = 0;         // --frames N; 0: all
  int reconnect = 3;                // --reconnect N: attempts when a live stream stops (streams.h)
  double reconnect_delay_s = 2.0;   // --reconnect-delay S: seconds before each attempt
  // ---- detection ----
  std::string names_file;
  float thresh = 0.25f;
  float nms = 0.45f;
  bool letterbox = false;
  bool no_letterbox = false;
  int width = 0, height = 0;
  // ---- outputs ----
  bool ext_output = false;
  bool json = false;
  std::string out;           // annotated images
  std::string out_video;     // annotated video
  std::string darknet_json;  // Darknet -out format
  std::string coco_json;
  bool save_labels = false;
  std::string labels_dir;
  std::string progress = "auto";
  std::string summary = "auto";
  bool show = false;      // --show: annotated frames in a window (show_window.h)
  int show_wait_ms = 1;   // --show-wait MS: the wait for a key after each frame; 0: until a key
  // ---- device and weights from storage ----
  // The flags dlbench shares (--batch, --threads, --device, ... --prepared; session_flags.h).
  SessionFlagTexts session{FlagTool::kDlrun};
  double latency_target_ms = 0;
  bool no_arena_staging = false;
  // ---- plan and reports ----
  bool print_plan = false;
  std::string save_plan;
  std::string report;
  std::string report_file;
  std::string trace;
  std::string log_level = "warn";
  // ---- prepare ----
  std::string prepare;  // --prepare OUT: write the prepared weight file and exit
  std::string cache;    // --cache list|clear: the prepared weight cache, then exit (cache_command.h)
};

// Adds every option of dlrun to `app`, writing into *a (which must outlive app).
void add_dlrun_options(CLI::App& app, Args* a);
// With --model, the positional CFG and WEIGHTS slots hold inputs: moves them to the
// front of the inputs. Without --model, nothing changes.
void resolve_model_args(Args* a);
// Checks what the parser cannot: inputs present, option combinations. Usage errors.
// Call after resolve_model_args.
Status check_args(const Args& a);

}  // namespace dlr::tools
