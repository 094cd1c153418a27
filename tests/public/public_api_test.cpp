// The public API (<dlrun/dlrun.h>): same detections as the runtime's Session,
// errors as values naming the option, the report, logging, CPU threads, and
// public headers that include nothing but the standard library and dlrun/.
#include <gtest/gtest.h>

#include <dlrun/dlrun.h>

#include <sched.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <random>
#include <regex>
#include <set>
#include <thread>

#include "runtime/cpu/cpu_threads.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"

namespace {

// Noise images (BGR, tests/common) with a low threshold: noise produces detections.
class PublicApi : public ::testing::Test {
 protected:
  void SetUp() override {
    m_cfg = dlr::test::source_file("models/yolov4-tiny.cfg");
    m_weights = dlr::test::synthetic_weights(m_cfg);
    ASSERT_FALSE(m_weights.empty());
    m_opt.width = m_opt.height = 160;  // small: fast on a loaded CPU
    m_opt.thresh = 0.05f;
    m_pixels = dlr::test::noise_pixels(m_w, m_h, 7);
    m_image.data = m_pixels.data();
    m_image.width = m_w;
    m_image.height = m_h;
  }
  std::string m_cfg, m_weights;
  dlrun::Options m_opt;
  int m_w = 200, m_h = 150;
  std::vector<uint8_t> m_pixels;
  dlrun::ImageView m_image;
};

TEST_F(PublicApi, SameDetectionsAsTheRuntimeSession) {
  auto pub = dlrun::Session::open(m_cfg, m_weights, m_opt);
  ASSERT_TRUE(pub.ok()) << pub.error().to_string();
  auto got = pub->detect(m_image);
  ASSERT_TRUE(got.ok()) << got.error().to_string();

  dlr::SessionOptions so;
  so.width = so.height = 160;
  so.thresh = 0.05f;
  auto ref = dlr::Session::open(m_cfg, m_weights, so);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  dlr::ImageU8 v{m_pixels.data(), m_w, m_h, 3, int64_t(m_w) * 3, true};
  auto want = (*ref)->detect(v);
  ASSERT_TRUE(want.ok());
  ASSERT_FALSE(want->empty()) << "the test image should give detections at thresh 0.05";
  ASSERT_EQ(got->size(), want->size());
  for (size_t i = 0; i < want->size(); ++i) {
    const dlr::Detection& w = (*want)[i];
    const dlrun::Detection& g = (*got)[i];
    EXPECT_EQ(g.class_id, w.class_id);
    EXPECT_EQ(g.prob, w.prob);
    EXPECT_EQ(g.box.x, w.box.x);
    EXPECT_EQ(g.box.y, w.box.y);
    EXPECT_EQ(g.box.w, w.box.w);
    EXPECT_EQ(g.box.h, w.box.h);
    ASSERT_EQ(g.others.size(), w.others.size());
    for (size_t k = 0; k < w.others.size(); ++k) EXPECT_EQ(g.others[k].class_id, w.others[k].class_id);
  }
  // RGB order with the channels swapped gives the same result as BGR.
  std::vector<uint8_t> rgb(m_pixels);
  for (size_t i = 0; i + 2 < rgb.size(); i += 3) std::swap(rgb[i], rgb[i + 2]);
  dlrun::ImageView rv = m_image;
  rv.data = rgb.data();
  rv.order = dlrun::ImageView::Order::kRGB;
  auto got_rgb = pub->detect(rv);
  ASSERT_TRUE(got_rgb.ok());
  ASSERT_EQ(got_rgb->size(), got->size());
  for (size_t i = 0; i < got->size(); ++i) EXPECT_EQ((*got_rgb)[i].prob, (*got)[i].prob);
}

TEST_F(PublicApi, InfoAndReport) {
  m_opt.threads = 1;
  auto s = dlrun::Session::open(m_cfg, m_weights, m_opt);
  ASSERT_TRUE(s.ok()) << s.error().to_string();
  const dlrun::NetworkInfo info = s->info();
  EXPECT_EQ(info.input_width, 160);
  EXPECT_EQ(info.input_height, 160);
  EXPECT_EQ(info.classes, 80);
  EXPECT_EQ(info.layers, 38);
  EXPECT_GT(info.gflops, 0);
  ASSERT_TRUE(s->detect(m_image).ok());
  const dlrun::Report r = s->last_report();
  ASSERT_EQ(int(r.layers.size()), info.layers);
  EXPECT_EQ(r.layers[0].type, "convolutional");
  EXPECT_EQ(r.layers.back().type, "yolo");
  for (const auto& l : r.layers) EXPECT_LE(l.start_ms, l.end_ms);
  EXPECT_GT(r.network_ms, 0);
  EXPECT_GT(r.memory.activations, 0);
  EXPECT_GT(r.memory.weights, 0);
  EXPECT_EQ(r.threads, 1);
  EXPECT_NE(s->plan_text().find("conv"), std::string::npos) << s->plan_text();
}

TEST_F(PublicApi, ErrorsAreValuesNamingTheOption) {
  dlrun::Options o = m_opt;
  o.weight_budget = "lots";
  auto s = dlrun::Session::open(m_cfg, m_weights, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().code, dlrun::ErrorCode::kInvalidArgument);
  EXPECT_EQ(s.error().message.rfind("weight_budget: ", 0), 0u) << s.error().message;

  o = m_opt;
  o.threads = -1;
  s = dlrun::Session::open(m_cfg, m_weights, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "threads -1 is out of range (0 = auto, 1..1024)");

  s = dlrun::Session::open("/nonexistent/x.cfg", m_weights, m_opt);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.error().message.find("/nonexistent/x.cfg"), std::string::npos) << s.error().message;
  EXPECT_EQ(s.error().message.find('\n'), std::string::npos);

  // A bad image is an error; the session stays usable.
  auto ok = dlrun::Session::open(m_cfg, m_weights, m_opt);
  ASSERT_TRUE(ok.ok());
  dlrun::ImageView empty;
  auto bad = ok->detect(empty);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, dlrun::ErrorCode::kInvalidArgument);
  EXPECT_TRUE(ok->detect(m_image).ok());
  EXPECT_FALSE(ok->detect_batch({}).ok());

  // A moved-from session answers with an error, not a crash.
  dlrun::Session moved = std::move(*ok);
  auto gone = ok->detect(m_image);
  ASSERT_FALSE(gone.ok());
  EXPECT_NE(gone.error().message.find("moved from"), std::string::npos);
  EXPECT_TRUE(moved.detect(m_image).ok());
}

// thread_priority and cpu_affinity: the caller's thread through apply_thread_options(),
// a session's threads by open(); a bad list names the field.
TEST_F(PublicApi, ThreadOptionsPlaceTheCallingThreadAndOpen) {
  dlrun::Options o = m_opt;
  o.cpu_affinity = "0-";
  auto s = dlrun::Session::open(m_cfg, m_weights, o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.error().message, "cpu_affinity: '0-': expected a CPU list such as 2,3 or 4-7 (CPU numbers 0..1023)");
  EXPECT_FALSE(dlrun::apply_thread_options(o).ok());
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  int first = 0;
  while (!CPU_ISSET(first, &set)) ++first;
  o.cpu_affinity = std::to_string(first);
  o.thread_priority = dlrun::ThreadPriority::kNormal;
  std::thread t([&] {
    const dlrun::Status st = dlrun::apply_thread_options(o);
    ASSERT_TRUE(st.ok()) << st.error().message;
    cpu_set_t mine;
    CPU_ZERO(&mine);
    ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
    EXPECT_EQ(CPU_COUNT(&mine), 1);
    EXPECT_TRUE(CPU_ISSET(first, &mine));
    auto placed = dlrun::Session::open(m_cfg, m_weights, o);
    ASSERT_TRUE(placed.ok()) << placed.error().message;
    EXPECT_TRUE(placed->detect(m_image).ok());
  });
  t.join();
}

TEST_F(PublicApi, LogsGoToTheCallbackNeverToStdout) {
  const dlrun::LogLevel before = dlrun::log_level();
  std::vector<std::string> lines;
  std::mutex mu;
  dlrun::set_log_level(dlrun::LogLevel::kInfo);
  EXPECT_EQ(dlrun::log_level(), dlrun::LogLevel::kInfo);
  dlrun::set_log_callback([&](dlrun::LogLevel l, const std::string& m) {
    std::lock_guard<std::mutex> lock(mu);
    if (l == dlrun::LogLevel::kInfo) lines.push_back(m);
  });
  testing::internal::CaptureStdout();
  { auto s = dlrun::Session::open(m_cfg, m_weights, m_opt); ASSERT_TRUE(s.ok()); }
  dlrun::set_log_callback(nullptr);
  // Back on stderr (not stdout) without a callback.
  testing::internal::CaptureStderr();
  { auto s = dlrun::Session::open(m_cfg, m_weights, m_opt); ASSERT_TRUE(s.ok()); }
  const std::string err = testing::internal::GetCapturedStderr();
  const std::string out = testing::internal::GetCapturedStdout();
  dlrun::set_log_level(before);
  EXPECT_EQ(out, "");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("opened " + m_cfg, 0), 0u) << lines[0];
  EXPECT_NE(err.find("[dlrun] [info] opened " + m_cfg), std::string::npos) << err;
  // At the default level (warn) an open logs nothing.
  dlrun::set_log_level(dlrun::LogLevel::kWarn);
  testing::internal::CaptureStderr();
  { auto s = dlrun::Session::open(m_cfg, m_weights, m_opt); ASSERT_TRUE(s.ok()); }
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  dlrun::set_log_level(before);
}

// ... and the detections are the same bits for any thread count.
TEST_F(PublicApi, ExplicitThreadCountIsWhatTheKernelsUse) {
  std::vector<dlrun::Detection> first;
  for (int n : {1, 2, 3}) {
    m_opt.threads = n;
    auto s = dlrun::Session::open(m_cfg, m_weights, m_opt);
    ASSERT_TRUE(s.ok()) << s.error().to_string();
    auto d = s->detect(m_image);
    ASSERT_TRUE(d.ok());
    EXPECT_EQ(s->last_report().threads, n);
    if (n == 1) first = *d;
    ASSERT_EQ(d->size(), first.size());
    for (size_t i = 0; i < first.size(); ++i) {
      EXPECT_EQ((*d)[i].prob, first[i].prob) << n << " threads";
      EXPECT_EQ((*d)[i].box.x, first[i].box.x) << n << " threads";
    }
  }
}

// The auto rule: cpus / sessions inside detect at once, at least 1; an application
// thread's own OpenMP setting is restored after a call.
TEST(CpuThreads, AutoRule) {
  EXPECT_EQ(dlr::auto_threads(8, 1), 8);
  EXPECT_EQ(dlr::auto_threads(8, 2), 4);
  EXPECT_EQ(dlr::auto_threads(8, 3), 2);
  EXPECT_EQ(dlr::auto_threads(2, 4), 1);
  EXPECT_EQ(dlr::auto_threads(1, 0), 1);
  EXPECT_GE(dlr::available_cpus(), 1);
  {
    const dlr::CpuThreadScope a(0);
    EXPECT_EQ(a.threads(), dlr::available_cpus());
    const dlr::CpuThreadScope b(0);  // a second active session: half each (at least 1)
    EXPECT_EQ(b.threads(), std::max(1, dlr::available_cpus() / 2));
    const dlr::CpuThreadScope c(5);
    EXPECT_EQ(c.threads(), 5);
  }
  const dlr::CpuThreadScope again(0);  // the others ended: all CPUs again
  EXPECT_EQ(again.threads(), dlr::available_cpus());
}

// Auto threads: a session detecting while others are inside open/detect uses at
// most cpus / active threads (re-applied before every layer); several sessions on
// several threads all succeed, and no call's team exceeds the CPUs.
TEST_F(PublicApi, AutoThreadsShareTheCpus) {
  const int cpus = dlr::available_cpus();
  auto s = dlrun::Session::open(m_cfg, m_weights, m_opt);
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(s->detect(m_image).ok());
  const int alone = s->last_report().threads;
  EXPECT_GE(alone, 1);
  EXPECT_LE(alone, cpus);
  {
    const dlr::CpuThreadScope other(0);  // another session inside detect()
    ASSERT_TRUE(s->detect(m_image).ok());
    EXPECT_LE(s->last_report().threads, std::max(1, cpus / 2));
  }
  ASSERT_TRUE(s->detect(m_image).ok());
  EXPECT_LE(s->last_report().threads, cpus);

  constexpr int kSessions = 3;
  std::vector<dlrun::Session> sessions;
  for (int i = 0; i < kSessions; ++i) {
    auto si = dlrun::Session::open(m_cfg, m_weights, m_opt);
    ASSERT_TRUE(si.ok());
    sessions.push_back(std::move(*si));
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kSessions; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 3; ++k) {
        if (!sessions[size_t(i)].detect(m_image).ok()) bad++;
        const int t = sessions[size_t(i)].last_report().threads;
        if (t > cpus || t < 1) bad++;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(bad.load(), 0);
}

// Auto mode's choice between the team and one thread follows measured latency, and
// the loser is tried again after 16, 32, 64 ... calls; a loser 4x slower or more (a
// team spinning on a loaded CPU) only after 100 x its slowdown, so that its tries cost
// about 1% of the time (they made p99 ~15x the median on a loaded 2-core machine).
TEST(CpuThreads, ChooserPicksTheFasterAndProbesWithBackoff) {
  if (dlr::available_cpus() == 1) GTEST_SKIP() << "one CPU: nothing to choose";
  auto probes_of = [](double team_ms, double one_ms, int64_t calls) {
    dlr::AutoThreadChooser c;
    std::vector<int64_t> probes;
    for (int64_t call = 0; call < calls; ++call) {
      const int p = c.pick();
      if (p == 0) probes.push_back(call);
      c.record(p, p == 0 ? team_ms : one_ms);
    }
    return probes;
  };
  // The team a little slower: tried again after 16, then 32 and 64 calls after the last try.
  EXPECT_EQ(probes_of(12, 10, 200), (std::vector<int64_t>{0, 16, 49, 114}));
  // 10x slower (a loaded machine): tried again after 1000 calls, then 1000 after that.
  EXPECT_EQ(probes_of(100, 10, 3000), (std::vector<int64_t>{0, 1002, 2003}));
  dlr::AutoThreadChooser c;
  EXPECT_EQ(c.pick(), 0);
  c.record(0, 100);  // the team: slow (a loaded machine)
  EXPECT_EQ(c.pick(), 1);
  c.record(1, 10);
  // The machine becomes idle: the team wins its next try and is used from then on.
  int64_t call = 200;
  while (c.pick() == 1) c.record(1, 10), ++call;
  c.record(0, 4);
  EXPECT_EQ(c.pick(), 0);
}

TEST(PublicHeaders, IncludeOnlyTheStandardLibraryAndDlrun) {
  const std::regex inc(R"(^\s*#\s*include\s*([<"])([^>"]+)[>"])");
  int files = 0;
  for (const char* h :
       {"dlrun.h", "log.h", "options.h", "result.h", "runtime.h", "session.h", "types.h", "version.h.in"}) {
    std::ifstream f(dlr::test::source_file(std::string("runtime/include/dlrun/") + h));
    ASSERT_TRUE(f) << h;
    ++files;
    std::string line;
    while (std::getline(f, line)) {
      std::smatch m;
      if (!std::regex_search(line, m, inc)) continue;
      const std::string path = m[2];
      const bool std_header = m[1] == "<" && path.find('/') == std::string::npos && path.find('.') == std::string::npos;
      EXPECT_TRUE(std_header || path.rfind("dlrun/", 0) == 0) << h << " includes " << path;
    }
  }
  EXPECT_EQ(files, 8);
}

// The names result.h's comment quotes are error_code_name()'s, one per code.
TEST(PublicHeaders, ResultNamesTheErrorCodesAsTheyArePrinted) {
  std::ifstream f(dlr::test::source_file("runtime/include/dlrun/result.h"));
  std::string comment, line;
  while (std::getline(f, line) && line.find("const char* error_code_name(") == std::string::npos) comment = line;
  std::set<std::string> names;
  for (int c = int(dlrun::ErrorCode::kInvalidArgument); c <= int(dlrun::ErrorCode::kInternal); ++c)
    names.insert(dlrun::error_code_name(dlrun::ErrorCode(c)));
  const std::regex quoted("\"([^\"]+)\"");
  int n = 0;
  for (auto it = std::sregex_iterator(comment.begin(), comment.end(), quoted); it != std::sregex_iterator(); ++it, ++n)
    EXPECT_EQ(names.count((*it)[1]), 1u) << (*it)[1] << " is not an error_code_name()";
  EXPECT_GE(n, 2) << comment;
}

TEST(PublicVersion, MatchesTheProject) {
  EXPECT_STREQ(dlrun::version(), DLRUN_VERSION_STRING);
  EXPECT_EQ(dlrun::has_cuda(), DLRUN_HAVE_CUDA == 1);
}

}  // namespace
