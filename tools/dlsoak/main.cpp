// dlsoak: long runs and concurrency, as a benchmark-style tool (not a unit test).
//
//  1. soak: one session runs --iters inferences on one input; every output must be
//     bit-identical to the first run's; RSS and used device memory are sampled; the
//     growth that fails the run is from a tenth of the run to its end (the first
//     inferences warm up allocators and the driver; the JSON keeps every sample).
//  2. concurrency: --sessions sessions of the same model and options, --threads host
//     threads; each thread runs --thread-iters inferences, taking session (t + i) % S
//     under that session's lock; every output must equal that session's single run.
//     A first round of a tenth of that warms up; growth is measured over the second.
// Prints a summary and writes --json. Exit 0 when every output matched and nothing
// grew beyond --max-growth-mib; 1 otherwise (or on any error; one line on stderr).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "loaders/synthetic_weights.h"
#include "runtime/core/log.h"
#include "runtime/session.h"
#include "tools/common/progress.h"
#include "tools/common/tool_support.h"
#ifdef DLR_HAVE_CUDA
#include "runtime/cuda/cuda_engine.h"
#endif

namespace {

using namespace dlr;
using namespace dlr::tools;

struct Args {
  std::string cfg, weights;
  bool synthetic = false;
  int size = 0;
  std::string device = "cuda", precision = "fp16", mode = "stream", budget = "min";
  int iters = 10000, sessions = 4, threads = 4, thread_iters = 250, sample_every = 100;
  double max_growth_mib = 1.0;
  std::string json;
};

int64_t rss_bytes() { return tools::host_memory().rss; }

int64_t device_used(int device) {
#ifdef DLR_HAVE_CUDA
  int64_t free_b = 0, total = 0;
  if (cuda_memory_info(device, &free_b, &total).ok()) return total - free_b;
#endif
  return -1;
}

using Outputs = std::vector<std::vector<float>>;

Outputs outputs_of(Session& s) {
  Outputs out;
  for (int y : s.plan().output_layers) {
    const int64_t n = s.plan().steps[size_t(y)].out.count();
    const float* p = s.engine().output(y, 0);
    out.emplace_back(p, p + n);
  }
  return out;
}

bool same(const Outputs& a, const Outputs& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].size() != b[i].size() || std::memcmp(a[i].data(), b[i].data(), a[i].size() * 4) != 0) return false;
  return true;
}

Status infer(Session& s, const std::vector<float>& input, Outputs* out) {
  DLR_RETURN_IF_ERROR(s.engine().set_input(input.data(), 1));
  DLR_RETURN_IF_ERROR(s.engine().run());
  *out = outputs_of(s);
  return Status();
}

Expected<nlohmann::json> run(const Args& a, const std::string& weights) {
  SessionOptions o;
  o.device = a.device == "cuda" ? DeviceKind::kCUDA : DeviceKind::kCPU;
  if (!parse_precision(a.precision, &o.precision)) return invalid_argument("--precision " + a.precision);
  if (!parse_weight_mode(a.mode, &o.mode)) return invalid_argument("--mode " + a.mode);
  DLR_ASSIGN_OR_RETURN(o.weight_budget, WeightBudget::parse(a.budget));
  o.width = o.height = a.size;
  DLR_RETURN_IF_ERROR(validate_options(o));
  nlohmann::json j;
  j["cfg"] = a.cfg;
  j["options"] = {{"device", a.device}, {"precision", a.precision}, {"mode", a.mode}, {"budget", a.budget}};

  // ---- 1. soak ----
  DLR_ASSIGN_OR_RETURN(auto session, Session::open(a.cfg, weights, o));
  Session& s = *session;
  const Shape3 in = s.plan().input_shape;
  std::vector<float> input(size_t(in.count()));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (float& v : input) v = u(rng);
  Outputs first, cur;
  DLR_RETURN_IF_ERROR(infer(s, input, &first));
  const int64_t rss0 = rss_bytes(), dev0 = device_used(o.cuda_device);
  int64_t rss_max = rss0, dev_max = dev0;
  int mismatches = 0;
  std::vector<double> ms;
  nlohmann::json samples = nlohmann::json::array();  // [inference, rss, device used]
  int64_t rss_warm = rss0, dev_warm = dev0;          // at a tenth of the run
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i < a.iters; ++i) {
    DLR_RETURN_IF_ERROR(infer(s, input, &cur));
    ms.push_back(s.engine().last_run_ms());
    if (!same(cur, first)) ++mismatches;
    if (i % a.sample_every == 0 || i == a.iters / 10) {
      const int64_t r = rss_bytes(), d = device_used(o.cuda_device);
      rss_max = std::max(rss_max, r);
      dev_max = std::max(dev_max, d);
      samples.push_back({i, r, d});
      if (i == a.iters / 10) rss_warm = r, dev_warm = d;
    }
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t rss1 = rss_bytes(), dev1 = device_used(o.cuda_device);
  std::sort(ms.begin(), ms.end());
  const MemoryReport mem = s.engine().memory();
  j["soak"] = {{"inferences", a.iters},
               {"mismatches", mismatches},
               {"wall_s", wall_s},
               {"median_ms", ms.empty() ? 0.0 : ms[ms.size() / 2]},
               {"rss_start", rss0},
               {"rss_end", rss1},
               {"rss_max", rss_max},
               {"device_used_start", dev0},
               {"device_used_end", dev1},
               {"device_used_max", dev_max},
               {"rss_at_tenth", rss_warm},
               {"device_used_at_tenth", dev_warm},
               {"samples", samples},
               {"pinned_weights", mem.host_weights},
               {"device_weights", mem.weights},
               {"device_activations", mem.activations}};
  std::printf("soak: %d inferences in %.1f s (median %.3f ms), %d mismatches; RSS %.1f -> %.1f MiB (%.1f at a "
              "tenth, max %.1f); device used %.1f -> %.1f MiB (max %.1f); pinned weights %.1f MiB\n",
              a.iters, wall_s, ms.empty() ? 0.0 : ms[ms.size() / 2], mismatches, rss0 / 1048576.0, rss1 / 1048576.0,
              rss_warm / 1048576.0, rss_max / 1048576.0, dev0 / 1048576.0, dev1 / 1048576.0, dev_max / 1048576.0,
              mem.host_weights / 1048576.0);
  session.reset();

  // ---- 2. concurrency ----
  std::vector<std::unique_ptr<Session>> sessions;
  std::vector<Outputs> refs;
  for (int k = 0; k < a.sessions; ++k) {
    DLR_ASSIGN_OR_RETURN(auto sk, Session::open(a.cfg, weights, o));
    Outputs r;
    DLR_RETURN_IF_ERROR(infer(*sk, input, &r));
    if (!same(r, first)) return internal_error("session " + std::to_string(k) + " differs from the soak session");
    refs.push_back(std::move(r));
    sessions.push_back(std::move(sk));
  }
  std::vector<std::mutex> locks(size_t(a.sessions));
  std::vector<int> bad(size_t(a.threads), 0);
  std::vector<Status> errors(size_t(a.threads));
  // Two rounds of the same work: the first warms up (thread stacks, OpenMP and driver
  // per-thread state), memory growth is measured over the second.
  auto round = [&](int iters) {
    std::vector<std::thread> pool;
    for (int t = 0; t < a.threads; ++t)
      pool.emplace_back([&, t] {
        Outputs out;
        for (int i = 0; i < iters; ++i) {
          const int k = (t + i) % a.sessions;
          std::lock_guard<std::mutex> lock(locks[size_t(k)]);
          const Status st = infer(*sessions[size_t(k)], input, &out);
          if (!st.ok()) {
            errors[size_t(t)] = st;
            return;
          }
          if (!same(out, refs[size_t(k)])) ++bad[size_t(t)];
        }
      });
    for (std::thread& th : pool) th.join();
  };
  round(std::max(1, a.thread_iters / 10));
  for (const Status& st : errors) DLR_RETURN_IF_ERROR(st);
  const int64_t rss2 = rss_bytes(), dev2 = device_used(o.cuda_device);
  const auto t1 = std::chrono::steady_clock::now();
  round(a.thread_iters);
  for (const Status& st : errors) DLR_RETURN_IF_ERROR(st);
  const double wall2 = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  int bad_total = 0;
  for (int b : bad) bad_total += b;
  const int64_t rss3 = rss_bytes(), dev3 = device_used(o.cuda_device);
  j["concurrency"] = {{"sessions", a.sessions},       {"threads", a.threads},  {"inferences", a.threads * a.thread_iters},
                      {"warmup_inferences", a.threads * std::max(1, a.thread_iters / 10)},
                      {"mismatches", bad_total},      {"wall_s", wall2},       {"rss_start", rss2},
                      {"rss_end", rss3},              {"device_used_start", dev2}, {"device_used_end", dev3}};
  std::printf("concurrency: %d sessions x %d threads, %d inferences in %.1f s, %d mismatches; RSS %.1f -> %.1f MiB; "
              "device used %.1f -> %.1f MiB\n",
              a.sessions, a.threads, a.threads * a.thread_iters, wall2, bad_total, rss2 / 1048576.0, rss3 / 1048576.0,
              dev2 / 1048576.0, dev3 / 1048576.0);
  const double limit = a.max_growth_mib * 1048576.0;
  // Soak growth is measured from a tenth of the run: the first inferences warm up the
  // allocator and driver (H100, yolov4-tiny fp16 stream: +1.7 MiB RSS in the first 250
  // inferences, then flat within 0.2 MiB for 9750 more).
  const bool grew = double(rss1 - rss_warm) > limit || (dev_warm >= 0 && double(dev1 - dev_warm) > limit) ||
                    double(rss3 - rss2) > limit || (dev2 >= 0 && double(dev3 - dev2) > limit);
  j["pass"] = mismatches == 0 && bad_total == 0 && !grew;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    dlr::init_logging();
    Args a;
    CLI::App app{"dlsoak: long runs (outputs identical, no memory growth) and sessions x threads", "dlsoak"};
    app.add_option("cfg", a.cfg, "Darknet .cfg file")->required();
    auto* w = app.add_option("--weights", a.weights, "Darknet .weights file");
    app.add_flag("--synthetic", a.synthetic, "generate shape-correct synthetic weights (seed 1)")->excludes(w);
    app.add_option("--size", a.size, "network width and height (default: the cfg's)");
    app.add_option("--device", a.device, "cuda or cpu (default cuda)")->check(CLI::IsMember({"cpu", "cuda"}));
    app.add_option("--precision", a.precision, "fp32, tf32 or fp16 (default fp16)")
        ->check(CLI::IsMember({"fp32", "tf32", "fp16"}));
    app.add_option("--mode", a.mode, "preload or stream (default stream)")->check(CLI::IsMember({"preload", "stream"}));
    app.add_option("--weight-budget", a.budget, "stream mode budget (default min)");
    app.add_option("--iters", a.iters, "soak inferences (default 10000)")->check(CLI::Range(2, 100000000));
    app.add_option("--sessions", a.sessions, "concurrency: sessions (default 4)")->check(CLI::Range(1, 64));
    app.add_option("--threads", a.threads, "concurrency: threads (default 4)")->check(CLI::Range(1, 64));
    app.add_option("--thread-iters", a.thread_iters, "concurrency: inferences per thread (default 250)")
        ->check(CLI::Range(1, 100000000));
    app.add_option("--sample-every", a.sample_every, "soak: memory sampled every N inferences (default 100)")
        ->check(CLI::Range(1, 100000000));
    app.add_option("--max-growth-mib", a.max_growth_mib, "fail when RSS or device memory grows more (default 1)");
    app.add_option("--json", a.json, "write the results here");
    try {
      app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      const int rc = app.exit(e);
      return rc == 0 ? kExitOk : kExitUsage;
    }
    if (a.weights.empty() && !a.synthetic) return fail("dlsoak", "give --weights FILE or --synthetic"), kExitUsage;
    std::string weights = a.weights;
    if (a.synthetic) {
      auto net = parse_network_cfg(a.cfg, CfgOptions{a.size, a.size});
      if (!net.ok()) return fail("dlsoak", net.status());
      weights = "/tmp/dlsoak_" + std::to_string(::getpid()) + ".weights";
      const Status st = write_synthetic_weights(*net, weights, SyntheticOptions());
      if (!st.ok()) return fail("dlsoak", st);
    }
    auto r = run(a, weights);
    if (a.synthetic) std::remove(weights.c_str());
    if (!r.ok()) return fail("dlsoak", r.status());
    if (!a.json.empty()) {
      std::ofstream f(a.json);
      f << r->dump(2) << "\n";
      if (!f) return fail("dlsoak", a.json + ": write failed");
    }
    const bool pass = (*r)["pass"].get<bool>();
    std::printf("dlsoak: %s\n", pass ? "PASS" : "FAIL");
    return pass ? kExitOk : kExitError;
  } catch (const std::exception& e) {
    return dlr::tools::fail("dlsoak", std::string("unexpected error: ") + e.what());
  }
}
