// dlbench --models (models.h): each model's own preload session first (latency and
// device memory), then, for every runtime budget, all models on one Runtime: round
// robin (each model in turn, single thread), optionally one thread per model
// (concurrent) and a soak of several threads checking every output against the
// single runs, with device memory and RSS before and after. Each model's preload is also
// measured in a process of its own (isolate.h), the honest "alone" baseline.
#include "tools/dlbench/models.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <random>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "loaders/synthetic_weights.h"
#include "runtime/multi/runtime.h"
#include "runtime/session.h"
#include "tools/common/model_specs.h"
#include "tools/common/progress.h"
#include "tools/common/tool_support.h"
#include "tools/dlbench/isolate.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace dlr::tools {
namespace {

using Clock = std::chrono::steady_clock;

double mib(int64_t b) { return double(b) / 1048576.0; }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// Synthetic weights written for the run, removed at the end.
struct TempFiles {
  std::vector<std::string> paths;
  ~TempFiles() {
    for (const std::string& p : paths) std::remove(p.c_str());
  }
};

ImageU8 bench_image(std::vector<uint8_t>* pixels, int seed) {
  const int w = 640, h = 480;
  pixels->resize(size_t(w) * h * 3);
  std::mt19937 rng{uint32_t(seed)};
  for (uint8_t& p : *pixels) p = uint8_t(rng() & 0xFF);
  ImageU8 img;
  img.data = pixels->data();
  img.width = w;
  img.height = h;
  img.row_stride = w * 3;
  return img;
}

bool same(const std::vector<Detection>& a, const std::vector<Detection>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i].box, &b[i].box, sizeof(Box)) != 0 || a[i].class_id != b[i].class_id ||
        a[i].prob != b[i].prob)
      return false;
  return true;
}

struct Timed {
  std::vector<double> total_ms, network_ms;
  std::vector<double> ready_mib;  // prefetched bytes landed when run() began (prefetched inferences only)
  std::vector<double> input_ms;   // host time of the upload (set_input or set_images)
};

// One model's inputs: f32 NCHW tensors at the network size (set_input), or 8-bit 640x480
// images (set_images, what detect() does). Inference k uses frame k % frames, so with
// several frames each upload reads memory no other upload touched lately, as a camera's
// new frame is (one frame: the same memory every time, likely in the CPU's cache).
struct BenchInput {
  std::vector<std::vector<float>> tensors;
  std::vector<std::vector<uint8_t>> pixels;
  std::vector<ImageU8> images;  // point into pixels; none: tensors
  size_t next = 0;               // the frame of the next inference
};

// One inference: the input's upload (set_input or set_images), then run(). Timed from
// run() on, or from the upload on with time_input (then the upload, during which another
// model's prefetch may go on, counts in the latency of the preload sessions and the
// runtime alike).
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

// "%.3f" of `v`, or "-" when it is not positive (not measured).
std::string ms_or_dash(double v) {
  if (!(v > 0)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", v);
  return text;
}

nlohmann::json ms_or_null(double v) { return v > 0 ? nlohmann::json(v) : nlohmann::json(nullptr); }

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

int64_t device_free(const SessionOptions& o) {
#ifdef DLR_HAVE_CUDA
  if (o.device == DeviceKind::kCUDA) {
    int64_t f = 0, t = 0;
    if (cuda_memory_info(o.cuda_device, &f, &t).ok()) return f;
  }
#endif
  return -1;
}

}  // namespace

int run_models_bench(const ModelsBenchArgs& a) {
  auto specs_or = parse_model_specs(a.models, "--models");
  if (!specs_or.ok()) return fail("dlbench", specs_or.status());
  std::vector<ModelSpec> specs = *specs_or;
  make_names_unique(&specs);
  // Every option checked before any work: the split, and the budgets' percentages.
  SplitObjective objective = SplitObjective::kSum;
  if (a.split == "max-slowdown") {
    objective = SplitObjective::kMaxSlowdown;
  } else if (a.split != "sum") {
    return fail("dlbench", invalid_argument("--split " + a.split + ": expected sum or max-slowdown"));
  }
  for (const std::string& ring : split(a.ring, ','))
    if (ring != "shared" && ring != "per-model")
      return fail("dlbench", invalid_argument("--ring " + ring + ": expected shared or per-model"));
  for (const std::string& alone : split(a.alone, ',')) {
    if (alone != "none" && alone != "own")
      return fail("dlbench", invalid_argument("--alone " + alone + ": expected none or own"));
    if (alone == "own" && !a.isolate_baselines)
      return fail("dlbench", invalid_argument("--alone own needs the baselines measured in processes of their own "
                                              "(drop --no-isolate-baselines)"));
  }
  for (const std::string& st : split(a.arena_staging, ','))
    if (st != "on" && st != "off")
      return fail("dlbench", invalid_argument("--arena-staging " + st + ": expected on or off"));
  for (const std::string& depth : split(a.prefetch_depths, ','))
    if (depth != "1" && depth != "2")
      return fail("dlbench", invalid_argument("--prefetch-depth " + depth + ": expected 1 or 2"));
  std::map<std::string, int64_t> workspace_limits;  // --workspace-limit entries -> bytes
  for (const std::string& w : split(a.workspace_limits, ',')) {
    if (w == "default" || w == "0") {
      workspace_limits[w] = w == "0" ? 0 : SessionOptions{}.workspace_limit;
      continue;
    }
    const Expected<WeightBudget> size = WeightBudget::parse(w);  // the sizes --weight-budget takes
    if (!size.ok() || size->kind != WeightBudget::Kind::kBytes)
      return fail("dlbench", invalid_argument("--workspace-limit " + w + ": expected default, 0 or a size (2MiB, bytes)"));
    workspace_limits[w] = size->bytes;
  }
  std::map<std::string, double> percents;  // "NN%" budgets -> NN (of the separate sessions' memory)
  for (const std::string& budget : split(a.budgets, ',')) {
    if (budget.empty() || budget.back() != '%') continue;
    char* end = nullptr;
    const double p = std::strtod(budget.c_str(), &end);
    if (end != budget.c_str() + budget.size() - 1 || !(p > 0) || p > 100)
      return fail("dlbench", invalid_argument("--runtime-budget " + budget + ": expected NN% in (0, 100]"));
    percents[budget] = p;
  }
  SessionOptions base;
  if (a.device == "cpu") {
    base.device = DeviceKind::kCPU;
  } else if (a.device == "cuda") {
    base.device = DeviceKind::kCUDA;
  } else {
    return fail("dlbench", invalid_argument("--models: --device must be cpu or cuda (one of them)"));
  }
  if (!parse_precision(a.precision, &base.precision))
    return fail("dlbench", invalid_argument("--precision " + a.precision + ": expected fp32, tf32 or fp16"));
  if (base.device == DeviceKind::kCPU) base.precision = Precision::kFP32;
  base.thresh = 0.5f;
  base.threads = a.threads;
  base.max_image_width = 640;
  base.max_image_height = 480;
  base.cache_kernel_times = true;
  TempFiles temps;
  for (size_t i = 0; i < specs.size(); ++i) {
    ModelSpec& s = specs[i];
    auto net = parse_network_cfg(s.cfg, CfgOptions{s.size, s.size});
    if (!net.ok()) return fail("dlbench", net.status());
    if (!s.size) s.size = net->net.width;
    if (s.synthetic) {
      s.weights = "/tmp/dlbench-models-" + std::to_string(::getpid()) + "-" + std::to_string(i) + ".weights";
      SyntheticOptions so;
      so.seed = a.seed + i;
      temps.paths.push_back(s.weights);
      const Status st = write_synthetic_weights(*net, s.weights, so);
      if (!st.ok()) return fail("dlbench", st);
    }
  }
  auto options_of = [&](const ModelSpec& s) {
    SessionOptions o = base;
    o.width = o.height = s.size;
    return o;
  };
  // --input and --frames are checked by the command line (tensor or image; 1-256).
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
  // Each model's preload in a process of its own first, while this process has run no
  // CUDA session (the synthetic weights written above are the children's too).
  bool own_failed = false;
  const std::vector<double> own_ms = a.isolate_baselines && !a.baseline_only
                                         ? baselines_in_own_processes(a, specs, &own_failed)
                                         : std::vector<double>(specs.size(), -1.0);
  std::vector<std::vector<uint8_t>> pixels(3);
  std::vector<ImageU8> images;
  for (int k = 0; k < 3; ++k) images.push_back(bench_image(&pixels[size_t(k)], int(a.seed) + k));

  nlohmann::json out;
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
  out["precision"] = precision_name(base.precision);
#ifdef DLR_HAVE_CUDA
  if (base.device == DeviceKind::kCUDA) out["gpu"] = cuda_device_description(base.cuda_device);
#endif

  // 1. Each model alone, preload: latency, device memory, and the reference detections.
  std::printf("%-22s %12s %12s %10s %10s %10s %10s %12s %14s\n", "model alone (preload)", "latency ms", "network ms",
              "weights", "activ.", "workspace", "MiB total", "input ms", "own process ms");
  int64_t separate = 0;
  std::vector<double> preload_ms;
  std::vector<double> input_ms;  // per model: its upload's host time (set_input/set_images), the gap before its run() in a round
  std::vector<std::vector<std::vector<Detection>>> reference(specs.size());  // [model][image]
  for (size_t i = 0; i < specs.size(); ++i) {
    const ModelSpec& s = specs[i];
    auto session = Session::open(s.cfg, s.weights, options_of(s));
    if (!session.ok()) return fail("dlbench", session.status());
    Timed t;
    for (int k = 0; k < a.warmup + a.iters; ++k) {
      const Status st = infer(**session, inputs[i], k < a.warmup ? nullptr : &t, a.time_input);
      if (!st.ok()) return fail("dlbench", st);
    }
    for (size_t k = 0; k < (a.baseline_only ? 0 : images.size()); ++k) {  // the soak's reference outputs
      auto d = (*session)->detect(images[k]);
      if (!d.ok()) return fail("dlbench", d.status());
      reference[i].push_back(*d);
    }
    const MemoryReport m = (*session)->engine().memory();
    const int64_t bytes = m.weights + m.activations + m.workspace;
    separate += bytes;
    preload_ms.push_back(median(t.total_ms));
    input_ms.push_back(median(t.input_ms));
    std::printf("%-22s %12.3f %12.3f %10.2f %10.2f %10.2f %10.2f %12.3f %14s\n", s.name.c_str(), median(t.total_ms),
                median(t.network_ms), mib(m.weights), mib(m.activations), mib(m.workspace), mib(bytes),
                input_ms.back(), ms_or_dash(own_ms[i]).c_str());
    out["separate"].push_back({{"model", s.name},
                               {"cfg", s.cfg},
                               {"weights", s.synthetic ? std::string("synthetic") : s.weights},
                               {"size", s.size},
                               {"latency_ms", median(t.total_ms)},
                               {"latency_own_process_ms", ms_or_null(own_ms[i])},
                               {"network_ms", median(t.network_ms)},
                               {"input_ms", input_ms.back()},
                               {"memory", {{"weights", m.weights}, {"activations", m.activations},
                                           {"workspace", m.workspace}, {"other", m.other}}},
                               {"device_bytes", bytes}});
  }
  out["separate_device_bytes"] = separate;
  std::printf("%-22s %51.2f MiB (weights + activations + workspace)\n", "separate, summed", mib(separate));
  auto write_json = [&]() -> Status {
    if (a.json.empty()) return Status();
    std::ofstream f(a.json);
    f << out.dump(2) << "\n";
    return f ? Status() : io_error(a.json + ": cannot write the JSON results");
  };
  if (a.baseline_only) {  // the child of baselines_in_own_processes: its rows are its result
    const Status st = write_json();
    return st.ok() ? kExitOk : fail("dlbench", st);
  }
  out["baselines_in_own_process"] = a.isolate_baselines;
  if (a.isolate_baselines) {
    std::printf("preload in a process of its own (ms):");
    for (size_t i = 0; i < specs.size(); ++i)
      std::printf(" %s %s", specs[i].name.c_str(), ms_or_dash(own_ms[i]).c_str());
    std::printf("\n");
  } else {
    std::printf("preload in a process of its own: not measured (--no-isolate-baselines)\n");
  }
  // Each preload session once more, now that other sessions of this process have run
  // their networks: on the H100 every session after that runs ~5 % slower for good
  // (docs/streaming.md section 6), which the first pass spares its first model and the
  // runtime's models never are.
  std::vector<double> again_ms;
  std::printf("preload again, after the others (ms):");
  for (size_t i = 0; i < specs.size(); ++i) {
    auto session = Session::open(specs[i].cfg, specs[i].weights, options_of(specs[i]));
    if (!session.ok()) return fail("dlbench", session.status());
    Timed t;
    for (int k = 0; k < a.warmup + a.iters; ++k) {
      const Status st = infer(**session, inputs[i], k < a.warmup ? nullptr : &t, a.time_input);
      if (!st.ok()) return fail("dlbench", st);
    }
    again_ms.push_back(median(t.total_ms));
    out["separate"][i]["latency_again_ms"] = again_ms.back();
    std::printf(" %s %.3f", specs[i].name.c_str(), again_ms.back());
  }
  std::printf("\n");

  // 2. All models on one runtime, for every budget.
  int rc = own_failed ? kExitError : kExitOk;  // a failed child's columns are "-"; the run goes on
  for (const std::string& staging_text : split(a.arena_staging, ','))
  for (const std::string& depth_text : split(a.prefetch_depths, ','))
  for (const std::string& alone : split(a.alone, ','))
  for (const std::string& workspace_text : split(a.workspace_limits, ','))
  for (const std::string& ring : split(a.ring, ','))
  for (const std::string& budget_text : split(a.budgets, ',')) {
    RuntimeOptions ro;
    ro.shared_ring = ring == "shared";
    ro.device = base.device;
    ro.copy_profile = a.copy_profile;
    ro.prefetch_next = !a.no_prefetch;
    ro.prefetch_depth = std::stoi(depth_text);
    ro.objective = objective;
    const double p = percents[budget_text];
    ro.budget = p > 0 ? std::to_string(int64_t(double(separate) * p / 100.0)) : budget_text;
    const HostMemory host_before = host_memory();
    auto rt = Runtime::create(ro);
    if (!rt.ok()) return fail("dlbench", rt.status());
    std::vector<std::unique_ptr<RuntimeModel>> models;
    const auto t_open = Clock::now();
    for (const ModelSpec& s : specs) {
      SessionOptions o = options_of(s);
      o.workspace_limit = workspace_limits[workspace_text];
      o.prefetch_lead_ms = a.prefetch_lead_ms;
      o.arena_staging = staging_text == "on";
      const size_t k = models.size();
      o.alone_ms = alone == "own" && own_ms[k] > 0 ? own_ms[k] : 0.0;
      auto m = (*rt)->open(s.cfg, s.weights, o);
      if (!m.ok()) return fail("dlbench", Status(m.status().code(), s.name + ": " + m.status().message()));
      models.push_back(std::move(m).value());
    }
    const double open_s = std::chrono::duration<double>(Clock::now() - t_open).count();
    const RuntimeMemory mem = (*rt)->memory();
    std::printf("\nruntime budget %s, %s ring, workspace limit %s, prefetch lead %g ms, prefetch depth %s, arena staging %s, slowdowns "
                "against %s (%.2f MiB, %.1f %% of the separate sessions), opened in %.2f s\n%s\n",
                budget_text.c_str(), ring.c_str(), workspace_text.c_str(), a.prefetch_lead_ms, depth_text.c_str(), staging_text.c_str(),
                alone == "own" ? "the latency alone" : "the all-resident prediction", mib((*rt)->budget_bytes()),
                separate > 0 ? 100.0 * double(mem.total()) / double(separate) : 0.0, open_s, mem.to_text().c_str());
    // Round robin.
    std::vector<Timed> rr(specs.size());
    for (int k = 0; k < a.warmup + a.iters; ++k)
      for (size_t i = 0; i < models.size(); ++i) {
        const Status st = infer(models[i]->session(), inputs[i], k < a.warmup ? nullptr : &rr[i], a.time_input);
        if (!st.ok()) return fail("dlbench", st);
      }
    nlohmann::json run;
    run["budget"] = budget_text;
    run["split"] = a.split;
    run["ring"] = ring;
    run["workspace_limit"] = workspace_text;
    run["prefetch_lead_ms"] = a.prefetch_lead_ms;
    run["prefetch_depth"] = ro.prefetch_depth;
    run["arena_staging"] = staging_text == "on";
    run["alone"] = alone;
    run["workspace_limit_bytes"] = workspace_limits[workspace_text];
    run["budget_bytes"] = (*rt)->budget_bytes();
    run["open_s"] = open_s;
    run["memory"] = {{"total", mem.total()}, {"arena", mem.arena}, {"workspace", mem.workspace},
                     {"weights", mem.weights}, {"ring", mem.ring}, {"other", mem.other}, {"host_weights", mem.host_weights},
                     {"fraction_of_separate", separate > 0 ? double(mem.total()) / double(separate) : 0.0}};
    run["plan"] = (*rt)->plan_text();
    std::printf("%-22s %10s %10s %10s %10s %10s %10s %12s %12s %10s %10s %10s\n", "model", "resident", "pool",
                "streamed", "prefetch", "landed", "predicted", "round robin", "x preload", "x again", "input ms",
                "x own");
    for (size_t i = 0; i < models.size(); ++i) {
      const RuntimeMemory::Model& m = mem.models[i];
      const double ms = median(rr[i].total_ms);
      const double landed = rr[i].ready_mib.empty() ? 0.0 : median(rr[i].ready_mib);
      const double x_own = own_ms[i] > 0 ? ms / own_ms[i] : -1.0;
      std::printf("%-22s %10.2f %10.2f %10.2f %10.2f %10.2f %10.3f %12.3f %12.3f %10.3f %10.3f %10s\n",
                  specs[i].name.c_str(), mib(m.resident), mib(m.pool), mib(m.streamed), mib(m.prefetched), landed,
                  m.predicted_ms, ms, ms / preload_ms[i], ms / again_ms[i], median(rr[i].input_ms),
                  ms_or_dash(x_own).c_str());
      run["models"].push_back({{"model", specs[i].name},
                               {"weight_budget", m.weight_budget},
                               {"resident", m.resident},
                               {"pool", m.pool},
                               {"streamed", m.streamed},
                               {"prefetched", m.prefetched},
                               {"prefetch_landed_mib_median", landed},
                               {"input_ms", median(rr[i].input_ms)},
                               {"prefetched_inferences", rr[i].ready_mib.size()},
                               {"arena_need", m.arena_need},
                               {"workspace_need", m.workspace_need},
                               {"other", m.other},
                               {"host_weights", m.host_weights},
                               {"predicted_ms", m.predicted_ms},
                               {"round_robin_ms", ms},
                               {"round_robin_network_ms", median(rr[i].network_ms)},
                               {"preload_ms", preload_ms[i]},
                               {"x_preload", ms / preload_ms[i]},
                               {"x_preload_again", ms / again_ms[i]},
                               {"preload_own_process_ms", ms_or_null(own_ms[i])},
                               {"x_preload_own_process", ms_or_null(x_own)}});
    }
    // Concurrent: one thread per model, detect() on images.
    if (a.concurrent_iters > 0) {
      std::vector<std::vector<double>> lat(models.size());
      std::atomic<int> failures{0};
      std::vector<std::thread> threads;
      const auto t0 = Clock::now();
      for (size_t i = 0; i < models.size(); ++i)
        threads.emplace_back([&, i] {
          for (int k = 0; k < a.concurrent_iters; ++k) {
            const auto c0 = Clock::now();
            if (!models[i]->detect(images[size_t(k) % images.size()]).ok()) ++failures;
            lat[i].push_back(std::chrono::duration<double, std::milli>(Clock::now() - c0).count());
          }
        });
      for (std::thread& th : threads) th.join();
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      std::printf("concurrent (one thread per model, detect() with pre/post-processing): %.1f inferences/s in all, "
                  "%d failures\n",
                  double(models.size()) * a.concurrent_iters / wall, failures.load());
      for (size_t i = 0; i < models.size(); ++i) {
        std::printf("  %-22s %10.3f ms median per detect()\n", specs[i].name.c_str(), median(lat[i]));
        run["concurrent"]["models"].push_back({{"model", specs[i].name}, {"detect_ms", median(lat[i])}});
      }
      run["concurrent"]["inferences_per_s"] = double(models.size()) * a.concurrent_iters / wall;
      run["concurrent"]["failures"] = failures.load();
      if (failures.load() > 0) rc = kExitError;
    }
    // Soak: threads x inferences across the models, every output against the single runs.
    if (a.soak > 0) {
      for (size_t i = 0; i < models.size(); ++i)  // reach steady state before measuring memory
        for (const ImageU8& img : images) (void)models[i]->detect(img);
      const int64_t free_before = device_free(base);
      const HostMemory rss_before = host_memory();
      std::atomic<int> mismatches{0}, failures{0};
      std::vector<std::thread> threads;
      const auto t0 = Clock::now();
      for (int t = 0; t < a.soak_threads; ++t)
        threads.emplace_back([&, t] {
          for (int k = 0; k < a.soak; ++k) {
            const size_t m = size_t(t + k) % models.size();
            const size_t img = size_t(t * 7 + k) % images.size();
            auto d = models[m]->detect(images[img]);
            if (!d.ok()) ++failures;
            else if (!same(*d, reference[m][img])) ++mismatches;
          }
        });
      for (std::thread& th : threads) th.join();
      const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
      const int64_t free_after = device_free(base);
      const HostMemory rss_after = host_memory();
      std::printf("soak: %d threads x %d inferences in %.1f s: %d outputs differ from the single runs, %d failures; "
                  "device free %+.2f MiB, RSS %+.2f MiB\n",
                  a.soak_threads, a.soak, wall, mismatches.load(), failures.load(),
                  free_before >= 0 ? mib(free_after - free_before) : 0.0, mib(rss_after.rss - rss_before.rss));
      run["soak"] = {{"threads", a.soak_threads},       {"inferences_per_thread", a.soak},
                     {"seconds", wall},                 {"mismatches", mismatches.load()},
                     {"failures", failures.load()},     {"device_free_before", free_before},
                     {"device_free_after", free_after}, {"rss_before", rss_before.rss},
                     {"rss_after", rss_after.rss}};
      if (mismatches.load() > 0 || failures.load() > 0) rc = kExitError;
    }
    run["host_rss_before_open"] = host_before.rss;
    run["host_rss_after"] = host_memory().rss;
    out["runs"].push_back(run);
    models.clear();  // before the runtime
  }
  const Status written = write_json();
  if (!written.ok()) return fail("dlbench", written);
  return rc;
}

}  // namespace dlr::tools
