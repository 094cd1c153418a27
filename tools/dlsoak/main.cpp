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
#include "tools/common/command_line.h"
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
    const int64_t n = s.plan().step_of(y).out.count();
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

Expected<SessionOptions> session_options(const Args& a) {
  SessionOptions o;
  o.device = a.device == "cuda" ? DeviceKind::kCUDA : DeviceKind::kCPU;
  if (!parse_precision(a.precision, &o.precision)) return invalid_argument("--precision " + a.precision);
  if (!parse_weight_mode(a.mode, &o.mode)) return invalid_argument("--mode " + a.mode);
  DLR_ASSIGN_OR_RETURN(o.weight_budget, WeightBudget::parse(a.budget));
  o.width = o.height = a.size;
  DLR_RETURN_IF_ERROR(validate_options(o));
  return o;
}

// Host RSS and used device memory (bytes; device -1: unknown) at the start and the end
// of the span over which growth is measured.
struct Growth {
  int64_t rss_start = 0, rss_end = 0, dev_start = -1, dev_end = -1;
  bool beyond(double limit) const {
    return double(rss_end - rss_start) > limit || (dev_start >= 0 && double(dev_end - dev_start) > limit);
  }
};

constexpr double kMiB = 1048576.0;

// What the soak leaves to the concurrency phase and the verdict.
struct SoakResult {
  std::vector<float> input;  // the one input every inference runs
  Outputs first;             // the soak session's first outputs
  int mismatches = 0;        // later inferences whose outputs differ from `first`
  Growth growth;             // from a tenth of the run to its end
};

// 1. One session runs a.iters inferences on one random input; fills j["soak"] and
// prints its line. Growth is measured from a tenth of the run: the first inferences
// warm up the allocator and the driver.
Expected<SoakResult> soak(const Args& a, const std::string& weights, const SessionOptions& o, nlohmann::json* j) {
  DLR_ASSIGN_OR_RETURN(auto session, Session::open(a.cfg, weights, o));
  Session& s = *session;
  SoakResult r;
  r.input.resize(size_t(s.plan().input_shape.count()));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (float& v : r.input) v = u(rng);
  Outputs cur;
  DLR_RETURN_IF_ERROR(infer(s, r.input, &r.first));
  const int64_t rss0 = rss_bytes(), dev0 = device_used(o.cuda_device);
  int64_t rss_max = rss0, dev_max = dev0;
  std::vector<double> ms;
  nlohmann::json samples = nlohmann::json::array();  // [inference, rss, device used]
  r.growth.rss_start = rss0;                         // at a tenth of the run
  r.growth.dev_start = dev0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 1; i < a.iters; ++i) {
    DLR_RETURN_IF_ERROR(infer(s, r.input, &cur));
    ms.push_back(s.engine().last_run_ms());
    if (!same(cur, r.first)) ++r.mismatches;
    if (i % a.sample_every == 0 || i == a.iters / 10) {
      const int64_t rss = rss_bytes(), dev = device_used(o.cuda_device);
      rss_max = std::max(rss_max, rss);
      dev_max = std::max(dev_max, dev);
      samples.push_back({i, rss, dev});
      if (i == a.iters / 10) r.growth.rss_start = rss, r.growth.dev_start = dev;
    }
  }
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int64_t rss1 = rss_bytes(), dev1 = device_used(o.cuda_device);
  r.growth.rss_end = rss1;
  r.growth.dev_end = dev1;
  std::sort(ms.begin(), ms.end());
  const double median_ms = ms.empty() ? 0.0 : ms[ms.size() / 2];
  const MemoryReport mem = s.engine().memory();
  (*j)["soak"] = {{"inferences", a.iters},
                  {"mismatches", r.mismatches},
                  {"wall_s", wall_s},
                  {"median_ms", median_ms},
                  {"rss_start", rss0},
                  {"rss_end", rss1},
                  {"rss_max", rss_max},
                  {"device_used_start", dev0},
                  {"device_used_end", dev1},
                  {"device_used_max", dev_max},
                  {"rss_at_tenth", r.growth.rss_start},
                  {"device_used_at_tenth", r.growth.dev_start},
                  {"samples", samples},
                  {"pinned_weights", mem.host_weights},
                  {"device_weights", mem.weights},
                  {"device_activations", mem.activations}};
  std::printf("soak: %d inferences in %.1f s (median %.3f ms), %d mismatches; RSS %.1f -> %.1f MiB (%.1f at a "
              "tenth, max %.1f); device used %.1f -> %.1f MiB (max %.1f); pinned weights %.1f MiB\n",
              a.iters, wall_s, median_ms, r.mismatches, rss0 / kMiB, rss1 / kMiB, r.growth.rss_start / kMiB,
              rss_max / kMiB, dev0 / kMiB, dev1 / kMiB, dev_max / kMiB, mem.host_weights / kMiB);
  return r;
}

// 2. a.sessions sessions of the model, a.threads host threads; thread t's inference i
// runs on session (t + i) % sessions under that session's lock and must equal that
// session's single run.
class Concurrency {
 public:
  Concurrency(const Args& a, const std::vector<float>& input) : m_a(a), m_input(input) {}

  // Opens the sessions; each one's first run must equal `first` (the soak's).
  Status open(const std::string& weights, const SessionOptions& o, const Outputs& first) {
    for (int k = 0; k < m_a.sessions; ++k) {
      DLR_ASSIGN_OR_RETURN(auto sk, Session::open(m_a.cfg, weights, o));
      Outputs r;
      DLR_RETURN_IF_ERROR(infer(*sk, m_input, &r));
      if (!same(r, first)) return internal_error("session " + std::to_string(k) + " differs from the soak session");
      m_refs.push_back(std::move(r));
      m_sessions.push_back(std::move(sk));
    }
    m_locks = std::vector<std::mutex>(size_t(m_a.sessions));
    m_bad.assign(size_t(m_a.threads), 0);
    m_errors.assign(size_t(m_a.threads), Status());
    return Status();
  }

  // Every thread runs `iters` inferences; the first error of any thread.
  Status round(int iters) {
    std::vector<std::thread> pool;
    for (int t = 0; t < m_a.threads; ++t) pool.emplace_back([this, t, iters] { work(t, iters); });
    for (std::thread& th : pool) th.join();
    for (const Status& st : m_errors) DLR_RETURN_IF_ERROR(st);
    return Status();
  }

  int mismatches() const {
    int total = 0;
    for (int b : m_bad) total += b;
    return total;
  }

 private:
  void work(int t, int iters) {
    Outputs out;
    for (int i = 0; i < iters; ++i) {
      const int k = (t + i) % m_a.sessions;
      std::lock_guard<std::mutex> lock(m_locks[size_t(k)]);
      const Status st = infer(*m_sessions[size_t(k)], m_input, &out);
      if (!st.ok()) {
        m_errors[size_t(t)] = st;
        return;
      }
      if (!same(out, m_refs[size_t(k)])) ++m_bad[size_t(t)];
    }
  }

  const Args& m_a;
  const std::vector<float>& m_input;
  std::vector<std::unique_ptr<Session>> m_sessions;
  std::vector<Outputs> m_refs;
  std::vector<std::mutex> m_locks;
  std::vector<int> m_bad;         // per thread
  std::vector<Status> m_errors;   // per thread
};

// Fills j["concurrency"] and prints its line; *mismatches: over both rounds.
// Two rounds of the same work: the first warms up (thread stacks, OpenMP and driver
// per-thread state), memory growth is measured over the second.
Expected<Growth> concurrency(const Args& a, const std::string& weights, const SessionOptions& o, const SoakResult& sr,
                             nlohmann::json* j, int* mismatches) {
  Concurrency c(a, sr.input);
  DLR_RETURN_IF_ERROR(c.open(weights, o, sr.first));
  DLR_RETURN_IF_ERROR(c.round(std::max(1, a.thread_iters / 10)));
  Growth g;
  g.rss_start = rss_bytes();
  g.dev_start = device_used(o.cuda_device);
  const auto t1 = std::chrono::steady_clock::now();
  DLR_RETURN_IF_ERROR(c.round(a.thread_iters));
  const double wall2 = std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count();
  *mismatches = c.mismatches();
  g.rss_end = rss_bytes();
  g.dev_end = device_used(o.cuda_device);
  (*j)["concurrency"] = {{"sessions", a.sessions},       {"threads", a.threads},
                         {"inferences", a.threads * a.thread_iters},
                         {"warmup_inferences", a.threads * std::max(1, a.thread_iters / 10)},
                         {"mismatches", *mismatches},    {"wall_s", wall2},
                         {"rss_start", g.rss_start},     {"rss_end", g.rss_end},
                         {"device_used_start", g.dev_start}, {"device_used_end", g.dev_end}};
  std::printf("concurrency: %d sessions x %d threads, %d inferences in %.1f s, %d mismatches; RSS %.1f -> %.1f MiB; "
              "device used %.1f -> %.1f MiB\n",
              a.sessions, a.threads, a.threads * a.thread_iters, wall2, *mismatches, g.rss_start / kMiB,
              g.rss_end / kMiB, g.dev_start / kMiB, g.dev_end / kMiB);
  return g;
}

Expected<nlohmann::json> run(const Args& a, const std::string& weights) {
  DLR_ASSIGN_OR_RETURN(const SessionOptions o, session_options(a));
  nlohmann::json j;
  j["cfg"] = a.cfg;
  j["options"] = {{"device", a.device}, {"precision", a.precision}, {"mode", a.mode}, {"budget", a.budget}};
  DLR_ASSIGN_OR_RETURN(const SoakResult sr, soak(a, weights, o, &j));  // its session is closed on return
  int bad = 0;
  DLR_ASSIGN_OR_RETURN(const Growth g, concurrency(a, weights, o, sr, &j, &bad));
  const double limit = a.max_growth_mib * kMiB;
  j["pass"] = sr.mismatches == 0 && bad == 0 && !sr.growth.beyond(limit) && !g.beyond(limit);
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
    if (const int rc = dlr::tools::parse_command_line(app, argc, argv, "dlsoak"); rc >= 0) return rc;
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
