#include "tools/dlbench/cli.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

namespace dlr::tools {
namespace {

// --models and the options of its own-process baselines and of its inputs.
CLI::Option* add_models_options(CLI::App& app, ModelsBenchArgs* mb, bool* no_isolate_baselines) {
  CLI::Option* models = app.add_option(
      "--models", mb->models,
      "several models on one runtime (one budget, shared arena and workspace): CFG[:WEIGHTS][@SIZE],... (no "
      "WEIGHTS: synthetic); each model's own preload session is measured first (also in a process of its own: "
      "\"own process ms\", \"x own\"), then round robin per --runtime-budget (docs/streaming.md section 8)");
  app.add_flag("--no-isolate-baselines", *no_isolate_baselines,
               "--models: do not measure each model's preload in a process of its own (by default this executable "
               "runs once more per model, first: on the H100 of 2026-11-26 every CUDA session after the first of a "
               "process ran ~5 % slower; docs/streaming.md section 6, \"Position in the process\")");
  app.add_flag("--baseline-only", mb->baseline_only,
               "internal (the processes of --models' own-process baselines): measure the models' preload sessions "
               "only, write --json")
      ->group("");
  app.add_option("--runtime-budget", mb->budgets,
                 "--models: comma-separated budgets for all the models' device memory: NN% of their separate "
                 "preload sessions' weights + activations + workspace, a size, or all (default 40%)");
  app.add_flag("--no-prefetch", mb->no_prefetch, "--models: no prefetch of a model's first weights across inferences");
  app.add_option("--ring", mb->ring,
                 "--models: where streamed weights pass, comma-separated to compare in one run: shared (one ring "
                 "for every model, the default) or per-model (a ring of its own each)");
  app.add_flag("--time-input", mb->time_input,
               "--models: time each inference from its upload (set_input, or set_images with --input image) instead of from run(), for the "
               "preload sessions and the runtime alike (a wait of the upload for the copy engine then counts)");
  app.add_option("--input", mb->input,
                 "--models: each inference's input: tensor (an f32 NCHW tensor through set_input, pageable memory; "
                 "the default) or image (a 640x480 8-bit image through set_images, as detect() does)")
      ->check(CLI::IsMember({"tensor", "image"}));
  app.add_option("--frames", mb->frames,
                 "--models: distinct inputs per model, used in turn (default 1: the same input every time; more: "
                 "each upload reads memory no upload touched lately, as a new camera frame is)")
      ->check(CLI::Range(1, 256));
  return models;
}

// --models: the runtime's options, and the concurrent and soak runs.
void add_models_runtime_options(CLI::App& app, ModelsBenchArgs* mb) {
  app.add_option("--prefetch-lead", mb->prefetch_lead_ms,
                 "--models: ms of host time without copies before each model's inference that its prefetch may count "
                 "in the runtime's joint plan (SessionOptions::prefetch_lead_ms; default 0; the bench's own gap, "
                 "set_input, is an upload and does not count)")->check(CLI::Range(0.0, 1000.0));
  app.add_option("--prefetch-depth", mb->prefetch_depths,
                 "--models, shared ring: how far ahead a model's prefetch may begin, comma-separated to compare in "
                 "one run: 1 (default: only while its predecessor runs) or 2 (from two models ahead, while the "
                 "model before its predecessor runs) (RuntimeOptions::prefetch_depth)");
  app.add_option("--arena-staging", mb->arena_staging,
                 "--models: whether the runtime's models may copy streamed blobs into idle activation bytes "
                 "(SessionOptions::arena_staging), comma-separated to compare in one run: on (default) or off");
  app.add_option("--alone", mb->alone,
                 "--models --split max-slowdown: what each model's slowdown is planned against, comma-separated to "
                 "compare in one run: none (the runtime's all-resident prediction, default) or own (the model's preload "
                 "measured in a process of its own, passed as SessionOptions::alone_ms)");
  app.add_option("--workspace-limit", mb->workspace_limits,
                 "--models: the cuDNN workspace limit per convolution of the runtime's models (their shared "
                 "workspace is the largest a conv needs), comma-separated to compare in one run: default (as a "
                 "session's), 0 or a size (2MiB, 1.5MB, bytes); the separate preload sessions keep the default");
  app.add_option("--split", mb->split,
                 "--models: what the runtime's joint plan minimises: sum (the weighted sum of predicted latencies, "
                 "default) or max-slowdown (the largest predicted slowdown against each model's own preload)");
  app.add_option("--concurrent", mb->concurrent_iters,
                 "--models: also one thread per model, N detect() calls each")->check(CLI::Range(0, 1000000));
  app.add_option("--soak", mb->soak,
                 "--models: also --soak-threads threads x N detect() calls across the models, every output checked "
                 "against the single runs, device memory and RSS before and after")->check(CLI::Range(0, 10000000));
  app.add_option("--soak-threads", mb->soak_threads, "--models --soak: threads (default 4)")->check(CLI::Range(1, 64));
}

// The network's weights, its input and the batches.
void add_network_options(CLI::App& app, Args* a) {
  auto* w = app.add_option("--weights", a->weights, "Darknet .weights file");
  app.add_flag("--synthetic", a->synthetic, "generate shape-correct synthetic weights (seeded)")->excludes(w);
  app.add_option("--seed", a->seed, "seed of synthetic weights and input (default 1)");
  add_session_flags(app, &a->session, {"--threads"});
  app.add_option("--size", a->size, "network input size (square; default: the cfg's)")->check(CLI::Range(32, 8192));
  add_session_flags(app, &a->session, {"--batch"});
}

// The lists of configurations on CUDA: precisions, modes and the stream-mode plans.
void add_cuda_config_options(CLI::App& app, Args* a) {
  add_session_flags(app, &a->session, {"--precision", "--mode", "--weight-budget", "--weight-pool", "--units",
                                       "--max-slowdown", "--residency", "--copy-profile"});
  app.add_flag("--simulate", a->simulate,
               "also predict stream-mode latency with the simulator from the profiled preload kernel times "
               "(list preload before stream)");
  app.add_option("--budget-curve", a->budget_curve,
                 "measure N budgets from the minimal pool to all the weights, and the budget auto picks "
                 "(--max-slowdown; its row has the picked budget and the predicted and measured slowdown) (ring, "
                 "preload in the same run; N >= 12 for the curve of docs/streaming.md section 6, \"The budget curve\"); each row has the planner's "
                 "prediction and the lower bound; plot with scripts/plot_budget_curve.py")
      ->check(CLI::Range(2, 200));
}

// --isolate and --simulate-only.
void add_isolate_and_simulate_options(CLI::App& app, Args* a) {
  app.add_flag("--isolate", a->isolate,
               "measure every configuration in a process of its own (the default with --budget-curve), so that no "
               "row depends on the ones before it (on the H100 of 2026-11-26 every CUDA session after the first of "
               "a process ran ~5 % slower; docs/streaming.md section 6, \"Position in the process\")");
  app.add_flag("--no-isolate", a->no_isolate, "--budget-curve: every configuration in this process, one after another");
  app.add_option("--config-index", a->config_index, "internal (the processes of --isolate): measure configuration K only")
      ->check(CLI::NonNegativeNumber)
      ->group("");
  app.add_flag("--simulate-only", a->simulate_only,
               "no GPU: predict the budget curve (--budget-curve N, default 16) with the planner and the lower bound "
               "from the kernel times of --layer-ms-from and a named --copy-profile, for one --weight-format");
  app.add_option("--layer-ms-from", a->layer_ms_from,
                 "--simulate-only: a dlbench JSON file with kernel_ms_at_open (or a profiled run) for the precision");
  app.add_option("--layer-ms-config", a->layer_ms_config,
                 "--simulate-only: take the kernel times of the first result whose config contains this text");
  app.add_option("--scale-preload-ms", a->scale_preload_ms,
                 "--simulate-only: scale the kernel times so that they sum to this many ms (e.g. 160.8: the "
                 "paper's YOLOv4 on Jetson AGX Xavier)")
      ->check(CLI::PositiveNumber);
  app.add_flag("--profile-from-row", a->profile_from_row,
               "--simulate-only: plan with the copy profile the --layer-ms-from row was planned with on its GPU (its "
               "stream.copy_profile: calibrated in an inference unless that run said otherwise) instead of "
               "--copy-profile");
}

// The devices, and the weights read from storage.
void add_device_and_storage_options(CLI::App& app, Args* a) {
  add_session_flags(app, &a->session, {"--device", "--weights-from", "--zero-copy", "--host-budget", "--read-depth",
                                       "--read-block", "--reader", "--prepared", "--prefetch-reads", "--cache-hits"});
  app.add_flag("--cold", a->cold, "storage: drop the prepared file from the page cache after open");
}

// Iterations, outputs, and what a CUDA open does.
void add_run_options(CLI::App& app, Args* a) {
  app.add_option("--iters", a->iters, "timed iterations (default 50)")->check(CLI::Range(1, 100000));
  app.add_option("--detect", a->detect,
                 "also time N whole detections per configuration, as an application runs them (Session::detect_batch "
                 "on --batch 640x480 8-bit images: resize or letterbox and upload, the network, decode and NMS), "
                 "with their parts (default 0: none)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--period-ms", a->period_ms,
                 "begin the timed inferences this many ms apart, like a camera's frames (default 0: back to back; "
                 "the gaps let weights from storage be read ahead; --models: each round-robin inference, the models "
                 "in turn, the next model's prefetch running in the gaps; pair with --prefetch-lead)")
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--warmup", a->warmup, "untimed iterations first (default 10), after the first inference (timed alone: the startup line)")->check(CLI::Range(0, 100000));
  app.add_option("--json", a->json, "write all results to this JSON file");
  app.add_flag("--opencv", a->opencv, "also time OpenCV DNN (CPU backend) on the same input (batch 1)");
  app.add_option("--report", a->report,
                 "after each configuration, one profiled run (CUDA events per layer inside the graph); print the top layers")
      ->check(CLI::IsMember({"table"}));
  add_session_flags(app, &a->session, {"--no-graph"});
  app.add_flag("--warm-up-at-open", a->warm_up_at_open,
               "without a CUDA graph (--no-graph), run the network once at open so that "
               "the first inference finds its kernels loaded (default: none; the first inference loads them while "
               "its reads run, measured sooner to the first result on the H100; the startup line compares the two)");
  add_session_flags(app, &a->session, {"--no-calibrate"});
  app.add_flag("--find", a->find, "choose cuDNN algorithms with cudnnFind (timed) instead of heuristics");
  add_session_flags(app, &a->session, {"--cache"});
  app.add_option("--startup", a->startup,
                 "N: time to the first result instead of the inference: every configuration in N fresh processes (one "
                 "inference each, after one more that fills the caches), timed from spawn to exit, beside N of "
                 "--startup-floor on a CUDA device; medians of each open part, of the process's start (spawn to main) and "
                 "of its end (last output to exit) (JSON startup_report)")
      ->check(CLI::Range(1, 1000));
  app.add_option("--startup-gpu", a->startup_gpu,
                 "with --startup on a CUDA device: idle (no other process holds the GPU while each child runs: its "
                 "context is the only one on the GPU, slower to make and to end even in persistence mode), held (a process of "
                 "--hold-gpu keeps a CUDA context on it: another detector, a daemon), or idle,held (both, each round "
                 "running idle then held) (default idle)");
  app.add_flag("--hold-gpu", a->hold_gpu,
               "make a CUDA context on GPU 0, print 'held' and keep the context until standard input ends (what "
               "--startup-gpu held runs beside its children); no configuration runs");
  app.add_flag("--startup-floor", a->startup_floor,
               "time only the smallest CUDA open on this GPU (context, cuDNN handle, one 1x1 convolution), as the "
               "process's first CUDA work; no configuration runs");
}

}  // namespace

void add_options(CLI::App& app, Args* a, ModelsBenchArgs* mb, bool* no_isolate_baselines) {
  auto* cfg_opt = app.add_option("cfg", a->cfg, "Darknet .cfg file (required, except with --models or --startup-floor)");
  add_models_options(app, mb, no_isolate_baselines)->excludes(cfg_opt);
  add_models_runtime_options(app, mb);
  add_network_options(app, a);
  add_cuda_config_options(app, a);
  add_isolate_and_simulate_options(app, a);
  add_device_and_storage_options(app, a);
  add_run_options(app, a);
  add_other_session_flags(app, &a->session);  // a shared flag not placed above
}

namespace {

// The session flags --models reads itself (device, precision, copy profile, threads; the
// kernel cache is always on) and those it hands to the runtime's models.
constexpr const char* kModelsReads[] = {"device", "precision", "copy_profile", "threads", "cache_kernel_times"};
constexpr const char* kModelsHands[] = {"slot_bytes", "slice_by", "stage_whole"};

// *m's model_flags from the session flags given; any other session flag given is refused
// (--models would not use it).
Status models_session_flags(const SessionFlagTexts& t, ModelsBenchArgs* m) {
  // The runtime's models: on the GPU they stream. A bad --device is the bench's own error
  // (run_models_bench), so it leaves the default here.
  SessionOptions models;
  (void)set_session_flag(FlagTool::kDlbench, "device", t.text("device"), &models);
  models.mode = WeightMode::kStream;
  for (const SessionFlag& row : session_flags()) {
    const std::string option = row.option;
    if (!t.changed(option)) continue;
    const auto is = [&](const char* o) { return option == o; };
    if (std::any_of(std::begin(kModelsReads), std::end(kModelsReads), is)) continue;
    const std::string flag = flag_name(row, FlagTool::kDlbench);
    if (std::none_of(std::begin(kModelsHands), std::end(kModelsHands), is))
      return invalid_argument(flag + " is not used by --models (its models take --slot-size, --slice-by and "
                              "--stage-whole; the runtime decides the rest)");
    if (!flag_applies(row.applies, models)) return flag_refused(flag, row.applies);
    const std::string text = t.text(option);
    if (text.find(',') != std::string::npos)
      return invalid_argument(flag + " with --models takes one value, got '" + text + "'");
    SessionOptions check;  // its text is checked before any model opens
    DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, option, text, &check));
    m->model_flags.emplace_back(option, text);
  }
  return Status();
}

}  // namespace

Expected<ModelsBenchArgs> models_args(const CLI::App& app, const Args& a, const ModelsBenchArgs& mb,
                                      bool no_isolate_baselines) {
  ModelsBenchArgs m = mb;
  m.device = a.session.text("device");
  // --models on the GPU: fp16 unless --precision is given (the configuration).
  m.precision = app.count("--precision") == 0 && m.device == "cuda" ? std::string("fp16") : a.session.text("precision");
  m.copy_profile = a.session.text("copy_profile");
  m.iters = a.iters;
  m.warmup = a.warmup;
  m.period_ms = a.period_ms;
  m.seed = a.seed;
  m.threads = std::atoi(a.session.text("threads").c_str());
  m.json = a.json;
  m.isolate_baselines = !no_isolate_baselines;
  DLR_RETURN_IF_ERROR(models_session_flags(a.session, &m));
  return m;
}

}  // namespace dlr::tools
