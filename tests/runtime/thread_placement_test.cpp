// The options thread_priority and cpu_affinity (runtime/core/thread_placement.h): CPU
// lists read and written as taskset does, the options' text and their one-line errors;
// the calling thread placed by apply_thread_options() (read back from the kernel); a CPU
// the process may not use refused with its set, before any file is read; a priority not
// permitted (a child without CAP_SYS_NICE and with zero rlimits) gives one warning line
// for a whole storage session, whose threads keep normal priority, and the run goes on.
#include "runtime/core/thread_placement.h"

#include <gtest/gtest.h>

#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/log.h"
#include "runtime/options_text.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/runtime/thread_probe.h"

namespace dlr {
namespace {

TEST(CpuList, ReadsAndWritesTasksetLists) {
  const std::pair<const char*, std::vector<int>> good[] = {
      {"", {}}, {" ", {}}, {"2", {2}}, {"2,3", {2, 3}}, {"4-7", {4, 5, 6, 7}}, {" 7-8 , 0 ,8", {0, 7, 8}},
      {"1023", {1023}}, {"3-3", {3}}};
  for (const auto& [text, cpus] : good) {
    const Expected<CpuList> l = CpuList::parse(text);
    ASSERT_TRUE(l.ok()) << text << ": " << l.status().message();
    EXPECT_EQ(l->cpus, cpus) << text;
    EXPECT_EQ(*CpuList::parse(l->to_string()), *l) << text;
  }
  EXPECT_EQ((CpuList{{0, 2, 3}}.to_string()), "0,2,3");
  EXPECT_EQ((CpuList{{0, 1, 2, 3, 8, 10, 11, 12}}.to_string()), "0-3,8,10-12");
  for (const char* bad : {"x", "1,", ",1", "1,,2", "3-1", "-1", "1-", "1024", "0-1024", "2 3", "1.5", "0x1"}) {
    const Expected<CpuList> l = CpuList::parse(bad);
    ASSERT_FALSE(l.ok()) << bad;
    EXPECT_EQ(l.status().message(), "expected a CPU list such as 2,3 or 4-7 (CPU numbers 0..1023)") << bad;
  }
}

TEST(ThreadOptions, TextRoundTripAndBadValues) {
  SessionOptions o;
  EXPECT_EQ(*option_text(o, "thread_priority"), "normal");
  EXPECT_EQ(*option_text(o, "cpu_affinity"), "");
  ASSERT_TRUE(set_option_text(&o, "thread_priority", "realtime").ok());
  EXPECT_EQ(o.thread_priority, ThreadPriority::kRealtime);
  ASSERT_TRUE(set_option_text(&o, "cpu_affinity", "6-7, 2").ok());
  EXPECT_EQ(*option_text(o, "cpu_affinity"), "2,6,7");
  EXPECT_EQ(thread_placement(o).cpus.cpus, (std::vector<int>{2, 6, 7}));
  EXPECT_EQ(set_option_text(&o, "thread_priority", "max").message(),
            "thread_priority 'max': expected one of normal, high, realtime");
  EXPECT_EQ(set_option_text(&o, "cpu_affinity", "2-x").message(),
            "cpu_affinity '2-x': expected a CPU list such as 2,3 or 4-7 (CPU numbers 0..1023)");
  EXPECT_EQ(o.thread_priority, ThreadPriority::kRealtime);  // a refused text changes nothing
}

TEST(ThreadPlacement, ApplyThreadOptionsPlacesTheCallingThreadOnly) {
  const CpuList allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const bool permitted = test::priority_permitted(ThreadPriority::kHigh);
  SessionOptions o;
  o.thread_priority = ThreadPriority::kHigh;
  o.cpu_affinity = CpuList{{allowed.cpus.back()}};
  const test::ThreadSched main_before = test::sched_of(test::this_tid());
  std::thread t([&] {
    ASSERT_TRUE(apply_thread_options(o).ok());
    const test::ThreadSched s = test::sched_of(test::this_tid());
    EXPECT_EQ(s.nice, permitted ? kHighNice : 0);
    EXPECT_EQ(s.cpus, o.cpu_affinity) << s.cpus.to_string();
  });
  t.join();
  const test::ThreadSched main_after = test::sched_of(test::this_tid());
  EXPECT_EQ(main_after.nice, main_before.nice);
  EXPECT_EQ(main_after.cpus, main_before.cpus);
  // normal and no CPUs: nothing changes (a thread of nice 2 stays so).
  std::thread n([] {
    ASSERT_EQ(setpriority(PRIO_PROCESS, id_t(test::this_tid()), 2), 0);
    const test::ThreadSched before = test::sched_of(test::this_tid());
    ASSERT_TRUE(apply_thread_options(SessionOptions{}).ok());
    const test::ThreadSched after = test::sched_of(test::this_tid());
    EXPECT_EQ(after.nice, 2);
    EXPECT_EQ(after.policy, before.policy);
    EXPECT_EQ(after.cpus, before.cpus);
  });
  n.join();
}

TEST(ThreadPlacement, CpusTheProcessMayNotUseAreRefusedBeforeAnyFileWork) {
  const CpuList allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const int outside = allowed.cpus.back() + 1;
  if (outside > CpuList::kMaxCpu) GTEST_SKIP() << "every CPU number is allowed";
  const std::string set = allowed.to_string();
  std::thread t([&] {
    const test::ThreadSched before = test::sched_of(test::this_tid());
    Status st = set_thread_cpus(CpuList{{outside}});
    EXPECT_EQ(st.message(), "cpu_affinity " + std::to_string(outside) + ": CPU " + std::to_string(outside) +
                                " is not among the CPUs this process may use (" + set + ")");
    st = set_thread_cpus(CpuList{{allowed.cpus.front(), outside, outside + 1 > CpuList::kMaxCpu ? outside : outside + 1}});
    EXPECT_NE(st.message().find(" not among the CPUs this process may use (" + set + ")"), std::string::npos)
        << st.message();
    EXPECT_EQ(test::sched_of(test::this_tid()).cpus, before.cpus);  // unchanged
  });
  t.join();
  SessionOptions o;
  o.cpu_affinity = CpuList{{outside}};
  EXPECT_EQ(check_thread_placement(thread_placement(o)).code(), StatusCode::kInvalidArgument);
  Expected<std::unique_ptr<Session>> s = Session::open("/nonexistent.cfg", "/nonexistent.weights", o);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("cpu_affinity " + std::to_string(outside) + ": "), std::string::npos)
      << s.status().message();
}

// In a child that may not raise priorities: apply_thread_options() on this thread, then
// a CPU session reading its weights from storage with pread workers, run once. "" or
// what went wrong.
std::string refused_priority_run(ThreadPriority priority, const std::string& cfg, const std::string& weights,
                                 const std::string& prepared) {
  const std::string dropped = test::drop_priority_permission();
  if (!dropped.empty()) return dropped;
  forget_thread_warnings();
  std::mutex mu;
  std::vector<std::string> warnings;
  set_log_callback([&](spdlog::level::level_enum level, const std::string& m) {
    std::lock_guard<std::mutex> lock(mu);
    if (level == spdlog::level::warn) warnings.push_back(m);
  });
  SessionOptions o;
  o.width = o.height = 160;
  // One CPU thread: a forked child cannot use the OpenMP team its parent may have
  // started (libgomp is not fork-safe; the whole binary in one process hung here).
  o.threads = 1;
  o.weights_from = WeightsFrom::kStorage;
  o.reader = ReaderKind::kThreads;
  o.prepared_path = prepared;
  o.thread_priority = priority;
  std::string out;
  if (!apply_thread_options(o).ok()) out += "apply_thread_options failed; ";
  Expected<std::unique_ptr<Session>> s = Session::open(cfg, weights, o);
  if (!s.ok()) return out + s.status().message();
  const std::vector<uint8_t> pixels = test::noise_pixels(64, 48, 1);
  ImageView image;
  image.data = pixels.data();
  image.width = 64;
  image.height = 48;
  image.row_stride = 64 * 3;
  if (!(*s)->detect(image).ok()) out += "detect failed; ";
  std::vector<test::ThreadSched> threads = test::threads_named("dlr-pread");
  threads.push_back(test::sched_of(test::this_tid()));
  for (const test::ThreadSched& t : test::threads_named("dlr-reader")) threads.push_back(t);
  if (threads.size() < 3) out += "no reader threads; ";
  for (const test::ThreadSched& t : threads)
    if (t.nice != 0 || t.policy != SCHED_OTHER) out += "thread " + std::to_string(t.tid) + " was raised; ";
  set_log_callback(nullptr);
  const std::string expected =
      priority == ThreadPriority::kHigh
          ? "thread_priority high: not permitted (nice -10 needs CAP_SYS_NICE or RLIMIT_NICE >= 30, which is 0 "
            "here); threads keep normal priority"
          : "thread_priority realtime: not permitted (SCHED_FIFO 10 needs CAP_SYS_NICE or RLIMIT_RTPRIO >= 10, "
            "which is 0 here); threads keep normal priority";
  if (warnings != std::vector<std::string>{expected}) {
    out += std::to_string(warnings.size()) + " warnings:";
    for (const std::string& w : warnings) out += " [" + w + "]";
  }
  return out;
}

TEST(ThreadPlacement, APriorityNotPermittedWarnsOnceAndTheRunGoesOn) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string weights = test::synthetic_weights(cfg);
  const std::string prepared = test::temp_dir() + "/thread_placement_refused.dlrw";
  for (ThreadPriority p : {ThreadPriority::kHigh, ThreadPriority::kRealtime})
    EXPECT_EQ(test::in_child([&] { return refused_priority_run(p, cfg, weights, prepared); }), "")
        << thread_priority_name(p);
}

}  // namespace
}  // namespace dlr
