// dlbench --models (models.h): each model's own preload session first (latency and
// device memory), then, for every runtime budget, all models on one Runtime
// (models_runtime.cpp). Each model's preload is also measured in a process of its own
// (isolate.h), the honest "alone" baseline.
#include "tools/dlbench/models.h"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "loaders/synthetic_weights.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/detect_timing.h"
#include "tools/dlbench/isolate.h"
#include "tools/dlbench/models_bench.h"
#include "tools/common/session_flags.h"
#include "tools/dlbench/stats.h"
#include "tools/dlbench/temp_files.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr::tools {
namespace {

using Clock = std::chrono::steady_clock;

// The command line of the process that measures the preload of model `s` (the
// `index`th) alone: --baseline-only, the same weights (the parent's synthetic file when
// the spec has none), size, device, precision, threads, rounds and input (the child's
// only model gets seed + index, the parent's seed for that model's input).
std::vector<std::string> baseline_child_args(const ModelsBenchArgs& a, const ModelSpec& s, size_t index) {
  std::vector<std::string> args = {"dlbench",
                                   "--models", s.cfg + ":" + s.weights + "@" + std::to_string(s.size),
                                   "--baseline-only",
                                   "--device", a.device,
                                   "--precision", a.precision,
                                   "--threads", std::to_string(a.threads),
                                   "--iters", std::to_string(a.iters),
                                   "--warmup", std::to_string(a.warmup),
                                   "--seed", std::to_string(a.seed + index)};
  if (a.time_input) args.push_back("--time-input");
  if (a.input != "tensor") args.insert(args.end(), {"--input", a.input});
  if (a.frames != 1) args.insert(args.end(), {"--frames", std::to_string(a.frames)});
  return args;
}

// Each model's preload latency measured in a process of its own, ms; -1 where not
// measured. A child that fails is one line on stderr naming the model and how it
// ended; *failed is then set and the others go on.
std::vector<double> baselines_in_own_processes(const ModelsBenchArgs& a, const std::vector<ModelSpec>& specs,
                                               bool* failed) {
  std::vector<double> own(specs.size(), -1.0);
  for (size_t i = 0; i < specs.size(); ++i) {
    const Expected<nlohmann::json> r = run_self_in_child(baseline_child_args(a, specs[i], i), "separate");
    std::string why;
    if (!r.ok()) {
      why = r.status().message();
    } else {
      const auto ms = r->find("latency_ms");
      if (ms != r->end() && ms->is_number() && ms->get<double>() > 0) {
        own[i] = ms->get<double>();
        continue;
      }
      why = "its result has no latency_ms";
    }
    *failed = true;
    std::fprintf(stderr, "dlbench: %s: preload in a process of its own: %s; its \"own process ms\" and \"x own\" "
                 "are -\n", specs[i].name.c_str(), why.c_str());
  }
  return own;
}

// The lists of --split, --ring, --alone, --arena-staging and --prefetch-depth.
Status check_lists(const ModelsBenchArgs& a, SplitObjective* objective) {
  if (a.split == "max-slowdown") {
    *objective = SplitObjective::kMaxSlowdown;
  } else if (a.split != "sum") {
    return invalid_argument("--split " + a.split + ": expected sum or max-slowdown");
  }
  for (const std::string& ring : split(a.ring))
    if (ring != "shared" && ring != "per-model") return invalid_argument("--ring " + ring + ": expected shared or per-model");
  for (const std::string& alone : split(a.alone)) {
    if (alone != "none" && alone != "own") return invalid_argument("--alone " + alone + ": expected none or own");
    if (alone == "own" && !a.isolate_baselines)
      return invalid_argument("--alone own needs the baselines measured in processes of their own (drop "
                              "--no-isolate-baselines)");
  }
  for (const std::string& st : split(a.arena_staging))
    if (st != "on" && st != "off") return invalid_argument("--arena-staging " + st + ": expected on or off");
  for (const std::string& depth : split(a.prefetch_depths))
    if (depth != "1" && depth != "2") return invalid_argument("--prefetch-depth " + depth + ": expected 1 or 2");
  return Status();
}

// --workspace-limit's entries and the "NN%" budgets of --runtime-budget.
Status check_sizes(const ModelsBenchArgs& a, ModelsBench* b) {
  for (const std::string& w : split(a.workspace_limits)) {
    if (w == "default" || w == "0") {
      b->workspace_limits[w] = w == "0" ? 0 : SessionOptions{}.workspace_limit;
      continue;
    }
    const Expected<WeightBudget> size = WeightBudget::parse(w);  // the sizes --weight-budget takes
    if (!size.ok() || size->kind != WeightBudget::Kind::kBytes)
      return invalid_argument("--workspace-limit " + w + ": expected default, 0 or a size (2MiB, bytes)");
    b->workspace_limits[w] = size->bytes;
  }
  for (const std::string& budget : split(a.budgets)) {
    if (budget.empty() || budget.back() != '%') continue;
    char* end = nullptr;
    const double p = std::strtod(budget.c_str(), &end);
    if (end != budget.c_str() + budget.size() - 1 || !(p > 0) || p > 100)
      return invalid_argument("--runtime-budget " + budget + ": expected NN% in (0, 100]");
    b->percents[budget] = p;
  }
  return Status();
}

// The options every session shares.
Status base_options(const ModelsBenchArgs& a, SessionOptions* base) {
  if (a.device != "cpu" && a.device != "cuda")
    return invalid_argument("--models: --device must be cpu or cuda (one of them)");
  DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "device", a.device, base));
  DLR_RETURN_IF_ERROR(set_session_flag(FlagTool::kDlbench, "precision", a.precision, base));
  if (base->device == DeviceKind::kCPU) base->precision = Precision::kFP32;
  base->thresh = 0.5f;
  base->threads = a.threads;
  base->max_image_width = 640;
  base->max_image_height = 480;
  base->cache_kernel_times = true;
  return Status();
}

// Every cfg parsed (a spec without @SIZE takes the cfg's) and synthetic weights written.
Status prepare_models(const ModelsBenchArgs& a, std::vector<ModelSpec>* specs, TempFiles* temps) {
  for (size_t i = 0; i < specs->size(); ++i) {
    ModelSpec& s = (*specs)[i];
    DLR_ASSIGN_OR_RETURN(const NetworkDesc net, parse_network_cfg(s.cfg, CfgOptions{s.size, s.size}));
    if (!s.size) s.size = net.net.width;
    if (s.synthetic) {
      s.weights = "/tmp/dlbench-models-" + std::to_string(::getpid()) + "-" + std::to_string(i) + ".weights";
      SyntheticOptions so;
      so.seed = a.seed + i;
      temps->paths.push_back(s.weights);
      DLR_RETURN_IF_ERROR(write_synthetic_weights(net, s.weights, so));
    }
  }
  return Status();
}

// Each model's --frames inputs (--input and --frames are checked by the command line).
std::vector<BenchInput> bench_inputs(const ModelsBenchArgs& a, const std::vector<ModelSpec>& specs) {
  const bool image_input = a.input == "image";
  std::vector<BenchInput> inputs(specs.size());
  for (size_t i = 0; i < specs.size(); ++i) {
    BenchInput& in = inputs[i];
    std::mt19937 rng(uint32_t(a.seed + i));
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    for (int f = 0; f < a.frames; ++f) {
      const int seed = int(a.seed + i) + 1000 * f;  // frame 0: the seed of a single frame
      if (image_input) {
        in.pixels.emplace_back();
        in.images.push_back(bench_image(&in.pixels.back(), seed));  // the pixels' buffer stays where it is
        continue;
      }
      in.tensors.emplace_back(size_t(3) * size_t(specs[i].size) * size_t(specs[i].size));
      for (float& v : in.tensors.back()) v = u(rng);
    }
  }
  return inputs;
}

// What an inference's latency covers, and the device, in out and on stdout.
void describe_run(ModelsBench& b) {
  const ModelsBenchArgs& a = b.a;
  const bool image_input = a.input == "image";
  nlohmann::json& out = b.out;
  out["mode"] = "models";
  const std::string upload = image_input ? "set_images" : "set_input";
  const std::string upload_what = image_input ? "the image's staging, upload and resize" : "the input's upload";
  out["input"] = image_input ? "image 640x480 u8 (set_images)" : "tensor f32 NCHW (set_input)";
  out["frames"] = a.frames;
  out["latency_from"] = a.time_input ? upload : "run";
  const std::string from = a.time_input ? upload + " (" + upload_what + ") + run()" : "run() (" + upload + " before it, untimed)";
  std::printf("latency: %s, median of %d rounds after %d; input: %s\n", from.c_str(), a.iters, a.warmup,
              out["input"].get<std::string>().c_str());
  if (a.frames > 1) std::printf("each model's inputs: %d frames in turn\n", a.frames);
  out["device"] = a.device;
  out["precision"] = precision_name(b.base.precision);
#ifdef DLR_HAVE_CUDA
  if (b.base.device == DeviceKind::kCUDA) out["gpu"] = cuda_device_description(b.base.cuda_device);
#endif
}

// Opens model i's own preload session and times --warmup then --iters inferences.
Expected<std::unique_ptr<Session>> timed_session(ModelsBench& b, size_t i, Timed* t) {
  const ModelSpec& s = b.specs[i];
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Session::open(s.cfg, s.weights, session_options(b, s)));
  for (int k = 0; k < b.a.warmup + b.a.iters; ++k)
    DLR_RETURN_IF_ERROR(infer(*session, b.inputs[i], k < b.a.warmup ? nullptr : t, b.a.time_input));
  return session;
}

// Model i alone, preload: latency, device memory, and the reference detections.
Status measure_alone(ModelsBench& b, size_t i) {
  const ModelSpec& s = b.specs[i];
  Timed t;
  DLR_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, timed_session(b, i, &t));
  for (size_t k = 0; k < (b.a.baseline_only ? 0 : b.images.size()); ++k) {  // the soak's reference outputs
    DLR_ASSIGN_OR_RETURN(std::vector<Detection> d, session->detect(b.images[k]));
    b.reference[i].push_back(std::move(d));
  }
  const MemoryReport m = session->engine().memory();
  const int64_t bytes = m.weights + m.activations + m.workspace;
  b.separate += bytes;
  b.preload_ms.push_back(median(t.total_ms));
  b.input_ms.push_back(median(t.input_ms));
  std::printf("%-22s %12.3f %12.3f %10.2f %10.2f %10.2f %10.2f %12.3f %14s\n", s.name.c_str(), median(t.total_ms),
              median(t.network_ms), mib(m.weights), mib(m.activations), mib(m.workspace), mib(bytes),
              b.input_ms.back(), ms_or_dash(b.own_ms[i]).c_str());
  b.out["separate"].push_back({{"model", s.name},
                               {"cfg", s.cfg},
                               {"weights", s.synthetic ? std::string("synthetic") : s.weights},
                               {"size", s.size},
                               {"latency_ms", median(t.total_ms)},
                               {"latency_own_process_ms", ms_or_null(b.own_ms[i])},
                               {"network_ms", median(t.network_ms)},
                               {"input_ms", b.input_ms.back()},
                               {"memory", {{"weights", m.weights}, {"activations", m.activations},
                                           {"workspace", m.workspace}, {"other", m.other}}},
                               {"device_bytes", bytes}});
  return Status();
}

Status measure_separate(ModelsBench& b) {
  std::printf("%-22s %12s %12s %10s %10s %10s %10s %12s %14s\n", "model alone (preload)", "latency ms", "network ms",
              "weights", "activ.", "workspace", "MiB total", "input ms", "own process ms");
  b.reference.resize(b.specs.size());
  for (size_t i = 0; i < b.specs.size(); ++i) DLR_RETURN_IF_ERROR(measure_alone(b, i));
  b.out["separate_device_bytes"] = b.separate;
  std::printf("%-22s %51.2f MiB (weights + activations + workspace)\n", "separate, summed", mib(b.separate));
  return Status();
}

void print_own_baselines(const ModelsBench& b) {
  if (!b.a.isolate_baselines) {
    std::printf("preload in a process of its own: not measured (--no-isolate-baselines)\n");
    return;
  }
  std::printf("preload in a process of its own (ms):");
  for (size_t i = 0; i < b.specs.size(); ++i)
    std::printf(" %s %s", b.specs[i].name.c_str(), ms_or_dash(b.own_ms[i]).c_str());
  std::printf("\n");
}

// Each preload session once more, now that other sessions of this process have run
// their networks: where a CUDA session after the first of its process runs slower
// (docs/streaming.md section 6, "Position in the process"), the first pass spares its
// first model, and the runtime's models never are; this row shows whether it does.
Status measure_again(ModelsBench& b) {
  std::printf("preload again, after the others (ms):");
  for (size_t i = 0; i < b.specs.size(); ++i) {
    Timed t;
    DLR_RETURN_IF_ERROR(timed_session(b, i, &t).status());
    b.again_ms.push_back(median(t.total_ms));
    b.out["separate"][i]["latency_again_ms"] = b.again_ms.back();
    std::printf(" %s %.3f", b.specs[i].name.c_str(), b.again_ms.back());
  }
  std::printf("\n");
  return Status();
}

Status write_results(const ModelsBench& b) {
  if (b.a.json.empty() || write_json(b.a.json, b.out)) return Status();
  return io_error(b.a.json + ": cannot write the JSON results");
}

// The options checked, the models prepared and their inputs made.
Status prepare(ModelsBench& b, TempFiles* temps) {
  DLR_ASSIGN_OR_RETURN(b.specs, parse_model_specs(b.a.models, "--models"));
  make_names_unique(&b.specs);
  DLR_RETURN_IF_ERROR(check_lists(b.a, &b.objective));
  DLR_RETURN_IF_ERROR(check_sizes(b.a, &b));
  DLR_RETURN_IF_ERROR(base_options(b.a, &b.base));
  DLR_RETURN_IF_ERROR(prepare_models(b.a, &b.specs, temps));
  b.inputs = bench_inputs(b.a, b.specs);
  return Status();
}

// The whole run; *rc: an error that let the run go on (a failed own-process baseline,
// failures or differing outputs in the concurrent and soak runs).
Status run(ModelsBench& b, TempFiles* temps, int* rc) {
  DLR_RETURN_IF_ERROR(prepare(b, temps));
  // Each model's preload in a process of its own first, while this process has run no
  // CUDA session (the synthetic weights written above are the children's too).
  bool own_failed = false;
  b.own_ms = b.a.isolate_baselines && !b.a.baseline_only ? baselines_in_own_processes(b.a, b.specs, &own_failed)
                                                         : std::vector<double>(b.specs.size(), -1.0);
  b.pixels.resize(3);
  for (int k = 0; k < 3; ++k) b.images.push_back(bench_image(&b.pixels[size_t(k)], int(b.a.seed) + k));
  describe_run(b);
  DLR_RETURN_IF_ERROR(measure_separate(b));
  if (b.a.baseline_only) return write_results(b);  // the child of baselines_in_own_processes: its rows are its result
  b.out["baselines_in_own_process"] = b.a.isolate_baselines;
  print_own_baselines(b);
  DLR_RETURN_IF_ERROR(measure_again(b));
  *rc = own_failed ? kExitError : kExitOk;  // a failed child's columns are "-"; the run goes on
  DLR_RETURN_IF_ERROR(run_on_runtimes(b, rc));
  return write_results(b);
}

}  // namespace

SessionOptions session_options(const ModelsBench& b, const ModelSpec& s) {
  SessionOptions o = b.base;
  o.width = o.height = s.size;
  return o;
}

Status infer(Session& s, BenchInput& input, Timed* t, bool time_input) {
  const auto t_in = Clock::now();
  const bool image = !input.images.empty();
  const size_t frame = input.next++ % (image ? input.images.size() : input.tensors.size());
  DLR_RETURN_IF_ERROR(image ? s.engine().set_images(&input.images[frame], 1, s.letterbox())
                            : s.engine().set_input(input.tensors[frame].data(), 1));
  const auto t_run = Clock::now();
  const auto t0 = time_input ? t_in : t_run;
  DLR_RETURN_IF_ERROR(s.engine().run());
  if (t) {
    t->input_ms.push_back(std::chrono::duration<double, std::milli>(t_run - t_in).count());
    t->total_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    const RunTiming rt = s.engine().last_run_timing();
    t->network_ms.push_back(rt.network_ms);
    if (rt.prefetch_ready_bytes >= 0) t->ready_mib.push_back(double(rt.prefetch_ready_bytes) / 1048576.0);
  }
  return Status();
}

std::string ms_or_dash(double v) {
  if (!(v > 0)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

nlohmann::json ms_or_null(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

int run_models_bench(const ModelsBenchArgs& a) {
  ModelsBench b(a);
  TempFiles temps;  // synthetic weights, removed at the end
  int rc = kExitOk;
  const Status st = run(b, &temps, &rc);
  return st.ok() ? rc : fail("dlbench", st);
}

}  // namespace dlr::tools
