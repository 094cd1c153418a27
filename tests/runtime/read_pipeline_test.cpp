// ReadPipeline's read ahead driven by hand on a three-blob plan and a small file (two
// stages as the CPU backend runs them; three stages with a fake device whose copies end
// when the test says): the next inference's first units are read once the current
// inference's waits allow, before its start(); an error found while reading ahead fails
// the next inference, not the current one, and the pipeline recovers once the file is
// whole; a pipeline destroyed in the middle of an inference or of a read ahead stops.
// A byte changed in the file fails the inference that read it, whichever blob it is in.
// Its threads (the reader, the pread workers) run at the priority and on the CPUs asked
// (read back from the kernel); with nothing asked they keep what they inherited.
#include "runtime/storage/read_pipeline.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "runtime/storage/crc32c.h"
#include "runtime/weight_store.h"
#include "tests/common/test_paths.h"
#include "tests/runtime/stream_fixtures.h"
#include "tests/runtime/thread_probe.h"

namespace dlr {
namespace {

constexpr int64_t kBlob = 65536;

struct Fixture {
  ExecutionPlan plan;
  ReadPlan reads;
  BlobFile file;
  std::string bytes;  // the file's content
  HostBuffer staging;
};

// Three 64 KiB blobs, one read unit each; staging for `slots` units (2: the minimum,
// the next inference's read 0 waits for layer 2 of the current one; 3: read k waits
// for layer k). Each unit is read as 64 KiB / block_bytes requests, depth at a time.
void make(Fixture* f, int slots, const std::string& name, int64_t block_bytes = kBlob, int depth = 8) {
  f->plan = test::fake_plan({kBlob, kBlob, kBlob}, nullptr);
  ReadOptions ro;
  ro.unit_bytes = kBlob;
  ro.staging_bytes = slots * kBlob;
  ro.block_bytes = block_bytes;
  ro.queue_depth = depth;
  Expected<ReadPlan> r = plan_reads_two_stage(f->plan, {}, ro);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  f->reads = *r;
  ASSERT_EQ(f->reads.units.size(), 3u);
  ASSERT_EQ(f->reads.read_ahead_units, slots == 2 ? 2 : 3);
  f->file.path = test::temp_dir() + "/" + name + ".bin";
  std::mt19937 rng{uint32_t(slots)};
  f->bytes.resize(size_t(3 * kBlob));
  for (char& c : f->bytes) c = char(rng());
  for (int b = 0; b < 3; ++b) {
    f->file.offsets.push_back(b * kBlob);
    f->file.crc32c.push_back(crc32c(f->bytes.data() + b * kBlob, size_t(kBlob)));
  }
  FILE* out = std::fopen(f->file.path.c_str(), "wb");
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(std::fwrite(f->bytes.data(), 1, f->bytes.size(), out), f->bytes.size());
  std::fclose(out);
  Expected<HostBuffer> s = HostBuffer::aligned(size_t(f->reads.staging_bytes));
  ASSERT_TRUE(s.ok());
  f->staging = std::move(*s);
}

// One inference as the CPU engine runs it: before each layer the read it needs, then
// the blob's bytes are checked, then progress. `before_progress(layer)` runs first.
template <class F>
Status run(ReadPipeline& p, const Fixture& f, F before_progress) {
  p.start();
  for (const Step& st : f.plan.steps) {
    const int unit = f.reads.layer_read_unit[size_t(st.layer)];
    if (unit >= 0) {
      Status s = p.wait_unit(unit);
      if (!s.ok()) {
        p.abort();
        (void)p.finish();
        return s;
      }
      const char* blob = static_cast<const char*>(f.staging.data()) + f.reads.blob_staging_offset[size_t(st.weight)];
      EXPECT_EQ(std::memcmp(blob, f.bytes.data() + st.weight * kBlob, size_t(kBlob)), 0) << "layer " << st.layer;
    }
    before_progress(st.layer);
    if (f.reads.layer_releases[size_t(st.layer)]) p.progress(st.layer);
  }
  return p.finish();
}
Status run(ReadPipeline& p, const Fixture& f) {
  return run(p, f, [](int) {});
}

TEST(ReadPipelineAhead, FirstUnitsOfTheNextInferenceAreReadBeforeItStarts) {
  for (bool ahead : {true, false}) {
    Fixture f;
    make(&f, 3, ahead ? "ahead" : "no_ahead");
    Expected<std::unique_ptr<ReadPipeline>> p = ReadPipeline::open(
        f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, {}, /*read_ahead=*/ahead);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    EXPECT_EQ((*p)->read_ahead(), ahead);
    for (int i = 0; i < 3; ++i) {
      ASSERT_TRUE(run(**p, f).ok());
      const std::vector<ReadTiming>& t = (*p)->timings();
      ASSERT_EQ(t.size(), 3u);
      // Inference 1 has nothing before it; later ones had every unit read during the
      // previous inference or the pause below (staging for all three).
      for (int u = 0; u < 3; ++u) {
        if (ahead && i > 0) {
          EXPECT_LT(t[size_t(u)].end_ms, 0.0) << "inference " << i << " read " << u;
        } else {
          EXPECT_GE(t[size_t(u)].start_ms, 0.0) << "inference " << i << " read " << u;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));  // time for the reads ahead
    }
  }
}

TEST(ReadPipelineAhead, AnErrorFoundAheadFailsTheNextInferenceAndThePipelineRecovers) {
  Fixture f;
  make(&f, 2, "ahead_error");
  Expected<std::unique_ptr<ReadPipeline>> p = ReadPipeline::open(
      f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, {}, /*read_ahead=*/true);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ASSERT_TRUE(run(**p, f).ok());
  // Inference 2: every read has landed once layer 2 runs; the next inference's read 0
  // waits for layer 2's progress, so truncating the file before it makes the read
  // ahead fail. Inference 2 itself is fine.
  const int last = f.plan.weights[2].layer;
  ASSERT_TRUE(run(**p, f, [&](int layer) {
                if (layer == last) {
                  ASSERT_EQ(0, truncate(f.file.path.c_str(), 0));
                }
              }).ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const Status bad = run(**p, f);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find(f.file.path), std::string::npos) << bad.message();
  // Still broken: fails again (read after start(): nothing is read ahead of a failed inference).
  EXPECT_FALSE(run(**p, f).ok());
  ASSERT_TRUE(test::write_bytes_in_place(f.file.path, f.bytes));
  EXPECT_TRUE(run(**p, f).ok());
  EXPECT_TRUE(run(**p, f).ok());
}

TEST(ReadPipelineAhead, DestroyedInTheMiddleStopsItsThread) {
  Fixture f;
  make(&f, 2, "ahead_destroy");
  for (int stop_at : {0, 1, 2, 3}) {
    Expected<std::unique_ptr<ReadPipeline>> p = ReadPipeline::open(
        f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, {}, /*read_ahead=*/true);
    ASSERT_TRUE(p.ok()) << p.status().to_string();
    ASSERT_TRUE(run(**p, f).ok());
    if (stop_at == 3) {
      p->reset();  // the read ahead of the next inference may be in flight or done
      continue;
    }
    // In the middle of inference 2, as the engine runs it (a layer reports progress only
    // after the read it needs has landed): the layers before unit stop_at's first one,
    // then its read; the reader may wait for progress or still read.
    (*p)->start();
    for (const Step& st : f.plan.steps) {
      const int unit = f.reads.layer_read_unit[size_t(st.layer)];
      if (unit >= 0) {
        const Status got = (*p)->wait_unit(unit);
        ASSERT_TRUE(got.ok()) << "stop at " << stop_at << ": " << got.to_string();
      }
      if (unit == stop_at) break;
      if (f.reads.layer_releases[size_t(st.layer)]) (*p)->progress(st.layer);
    }
    p->reset();  // returns: no thread left waiting
  }
}

// The words device work polls (DeviceWait::landed, a CUDA graph's waits): a unit's word
// holds the inference's number once wait_unit() may return it; a failed inference
// releases every word to its number; a read ahead given up (the current inference
// aborted) puts the words it had set back to the inference before.
TEST(ReadPipelineLanded, WordsFollowTheReadsAndAreReleasedOrTakenBack) {
  Fixture f;
  make(&f, 3, "landed");
  std::vector<int32_t> words(3, 0);
  auto word = [&](int u) { return __atomic_load_n(&words[size_t(u)], __ATOMIC_ACQUIRE); };
  ReadPipeline::DeviceWait w;
  w.landed = words.data();
  Expected<std::unique_ptr<ReadPipeline>> p = ReadPipeline::open(
      f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, w, /*read_ahead=*/true);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  ReadPipeline& pipe = **p;
  for (int gen = 1; gen <= 2; ++gen) {
    ASSERT_TRUE(run(pipe, f, [&](int layer) {
                  const int u = f.reads.layer_read_unit[size_t(layer)];
                  if (u >= 0) {
                    EXPECT_GE(word(u), gen) << "inference " << gen << " unit " << u;
                  }
                }).ok());
    for (int u = 0; u < 3; ++u) EXPECT_GE(word(u), gen);
  }
  // Inference 3 read after its start: every read has landed, only layer 0 has run, so the
  // read ahead of inference 4 has read unit 0 (it waits for layer 0) and waits for layer 1.
  EXPECT_EQ(pipe.start(), 3);
  EXPECT_EQ(pipe.started(), 3);
  for (int u = 0; u < 3; ++u) ASSERT_TRUE(pipe.wait_unit(u).ok());
  pipe.progress(f.plan.weights[0].layer);
  const auto until = [](auto done) {
    for (int i = 0; i < 400 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    return done();
  };
  ASSERT_TRUE(until([&] { return word(0) == 4; })) << "unit 0 of inference 4 was not read ahead";
  EXPECT_EQ(word(1), 3);
  pipe.abort();  // inference 3 given up: the read ahead of 4 is cancelled and taken back
  (void)pipe.finish();
  EXPECT_TRUE(until([&] { return word(0) == 3; })) << "unit 0 still announced for inference 4: " << word(0);
  // Inference 4 reads again after its start; then a failed inference releases every word.
  ASSERT_TRUE(run(pipe, f).ok());
  for (int u = 0; u < 3; ++u) EXPECT_EQ(word(u) >= 4, true) << u;
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // reads ahead of 5 done
  ASSERT_EQ(0, truncate(f.file.path.c_str(), 0));
  Status bad = run(pipe, f);  // 5 may have been read wholly ahead
  int failed = 5;
  if (bad.ok()) {
    bad = run(pipe, f);
    failed = 6;
  }
  ASSERT_FALSE(bad.ok());
  for (int u = 0; u < 3; ++u) EXPECT_GE(word(u), failed) << "unit " << u << " not released after the failure";
  ASSERT_TRUE(test::write_bytes_in_place(f.file.path, f.bytes));
  EXPECT_TRUE(run(pipe, f).ok());
}

// A byte changed in the file (same size) fails the inference that read it, with one
// line naming the file, the blob and both checksums, whichever blob it is in: a unit's
// bytes are checked after it is published, but before its staging is read into again
// (two slots: unit 2 overwrites unit 0) and before the inference's reads are over. The
// bytes the engine saw are not compared here: they are the changed ones.
TEST(ReadPipelineCheck, ChangedBytesFailTheInferenceThatReadThem) {
  for (int slots : {2, 3})
    for (int blob = 0; blob < 3; ++blob) {
      Fixture f;
      make(&f, slots, "changed_" + std::to_string(slots) + "_" + std::to_string(blob), kBlob / 4);
      Expected<std::unique_ptr<ReadPipeline>> p =
          ReadPipeline::open(f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, {});
      ASSERT_TRUE(p.ok()) << p.status().to_string();
      ASSERT_TRUE(run(**p, f).ok());
      std::string changed = f.bytes;
      changed[size_t(blob * kBlob + kBlob / 2 + 7)] ^= 0x10;
      ASSERT_TRUE(test::write_bytes_in_place(f.file.path, changed));
      (*p)->start();
      Status seen;
      for (const Step& st : f.plan.steps) {
        const int unit = f.reads.layer_read_unit[size_t(st.layer)];
        if (unit >= 0 && seen.ok()) seen = (*p)->wait_unit(unit);
        if (f.reads.layer_releases[size_t(st.layer)]) (*p)->progress(st.layer);
      }
      const Status bad = (*p)->finish();
      ASSERT_FALSE(bad.ok()) << "slots " << slots << ", blob " << blob;
      EXPECT_NE(bad.message().find(f.file.path), std::string::npos) << bad.message();
      EXPECT_NE(bad.message().find("blob " + std::to_string(blob) + " at offset"), std::string::npos) << bad.message();
      EXPECT_NE(bad.message().find("CRC32C"), std::string::npos) << bad.message();
      EXPECT_EQ(bad.message().find('\n'), std::string::npos) << bad.message();
      if (!seen.ok()) {
        EXPECT_EQ(seen.message(), bad.message());
      }
      ASSERT_TRUE(test::write_bytes_in_place(f.file.path, f.bytes));
      EXPECT_TRUE(run(**p, f).ok()) << "slots " << slots << ", blob " << blob;
    }
}

// The queue is refilled request by request across unit boundaries: with units of two
// requests and a depth of two, the next unit's first request is submitted as soon as
// the first request of the unit before has landed, not once that unit has landed whole
// (the queue would drain at every unit's end).
TEST(ReadPipelineQueue, NextUnitIsSubmittedBeforeTheUnitBeforeHasLandedWhole) {
  Fixture f;
  make(&f, 3, "refill", kBlob / 2, /*depth=*/2);
  ASSERT_EQ(f.reads.units[0].segments.size(), 2u);
  Expected<std::unique_ptr<ReadPipeline>> p =
      ReadPipeline::open(f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, {});
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  for (int inference = 0; inference < 3; ++inference) {
    ASSERT_TRUE(run(**p, f).ok());
    const std::vector<ReadTiming>& t = (*p)->timings();
    ASSERT_EQ(t.size(), 3u);
    for (size_t u = 1; u < t.size(); ++u)
      EXPECT_LT(t[u].start_ms, t[u - 1].end_ms) << "unit " << u << " submitted only after unit " << u - 1 << " landed";
  }
}

// One request reads blobs that follow each other in the plan: a file whose blobs are not
// back to back (not a prepared file as dlrun writes them) is refused at open, one line.
TEST(ReadPipelineQueue, AFileWhoseBlobsAreNotBackToBackIsRefused) {
  Fixture f;
  make(&f, 3, "joined");
  ReadOptions ro;
  ro.unit_bytes = 3 * kBlob;
  Expected<ReadPlan> one = plan_reads_two_stage(f.plan, {}, ro);
  ASSERT_TRUE(one.ok()) << one.status().to_string();
  ASSERT_EQ(one->units.size(), 1u);
  ASSERT_EQ(one->units[0].requests(), 1);
  Expected<HostBuffer> staging = HostBuffer::aligned(size_t(one->staging_bytes));
  ASSERT_TRUE(staging.ok());
  char* dst = static_cast<char*>(staging->data());
  Expected<std::unique_ptr<ReadPipeline>> p = ReadPipeline::open(*one, f.file, dst, ReaderKind::kAuto, {});
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  (*p)->start();
  ASSERT_TRUE((*p)->wait_unit(0).ok());
  ASSERT_TRUE((*p)->finish().ok());
  EXPECT_EQ(std::memcmp(dst, f.bytes.data(), f.bytes.size()), 0);
  BlobFile gap = f.file;
  gap.offsets[2] += kReadAlign;
  Expected<std::unique_ptr<ReadPipeline>> bad = ReadPipeline::open(*one, gap, dst, ReaderKind::kAuto, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("blob 2 does not follow blob 1"), std::string::npos)
      << bad.status().to_string();
  ReadPlan first_joined = *one;  // as a hand-edited plan JSON could say
  first_joined.units[0].segments[0].joins_previous = true;
  Expected<std::unique_ptr<ReadPipeline>> worse = ReadPipeline::open(first_joined, f.file, dst, ReaderKind::kAuto, {});
  ASSERT_FALSE(worse.ok());
  EXPECT_NE(worse.status().message().find("read 0 starts with a segment joining"), std::string::npos)
      << worse.status().to_string();
}

TEST(ReadPipelineAhead, RefusedWhereItCannotBeSafe) {
  Fixture f;
  make(&f, 2, "ahead_refused");
  ReadPipeline::DeviceWait half;
  half.ready = [](int) { return true; };
  Expected<std::unique_ptr<ReadPipeline>> p = ReadPipeline::open(
      f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, half, /*read_ahead=*/true);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("needs both ready and wait"), std::string::npos) << p.status().message();
}

// Three stages (read -> copy -> kernel, a discrete GPU), played by a fake device whose
// copies end only when the test says so: three 64 KiB blobs, one transfer unit each,
// staging for two (the minimum): unit 2 waits for copy 0, and the next inference's
// unit 0 (read ahead) for copy 2 of the current one, unit 1 for copy 1.
struct FakeCopies {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> done;  // per copy unit: the inference whose copy has ended (0: none yet)
  std::vector<int> waited_unfinished;  // copies the reader had to wait for
  int gen = 0;            // the inference whose copies are enqueued
  ReadPipeline::DeviceWait wait() {
    ReadPipeline::DeviceWait w;
    w.ready = [this](int u) {
      std::lock_guard<std::mutex> lock(mu);
      return done[size_t(u)] == gen;
    };
    w.wait = [this](int u) {
      std::unique_lock<std::mutex> lock(mu);
      if (done[size_t(u)] != gen) waited_unfinished.push_back(u);
      cv.wait(lock, [&] { return done[size_t(u)] == gen; });
      return Status();
    };
    return w;
  }
  void end(int u) {
    {
      std::lock_guard<std::mutex> lock(mu);
      done[size_t(u)] = gen;
    }
    cv.notify_all();
  }
};

void make_three_stage(Fixture* f, const std::string& name) {
  make(f, 2, name);
  StreamPlan s;
  s.blob_resident.assign(3, 0);
  for (int b = 0; b < 3; ++b) {
    TransferUnit t;
    t.index = b;
    t.host_offset = b * kBlob;
    t.bytes = kBlob;
    t.first_blob = t.last_blob = b;
    t.first_layer = f->plan.weights[size_t(b)].layer;
    s.units.push_back(t);
    s.blob_host_offset.push_back(b * kBlob);
  }
  ReadOptions ro;
  Expected<ReadPlan> r = plan_reads_three_stage(f->plan, s, ro);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  f->reads = *r;
  ASSERT_EQ(f->reads.staging_bytes, 2 * kBlob);
  ASSERT_EQ(f->reads.read_ahead_units, 2);
  ASSERT_EQ(f->reads.units[0].wait_unit_prev, 2);
  ASSERT_EQ(f->reads.units[1].wait_unit_prev, 1);
  ASSERT_EQ(f->reads.units[2].wait_unit, 0);
}

TEST(ReadPipelineAhead, ThreeStagesReadAheadOnlyOnceTheCopiesThatUsedTheStagingHaveEnded) {
  Fixture f;
  make_three_stage(&f, "ahead_three");
  FakeCopies dev;
  dev.done.assign(3, 0);
  ReadPipeline::DeviceWait no_wait;
  const Expected<std::unique_ptr<ReadPipeline>> refused = ReadPipeline::open(
      f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, no_wait, /*read_ahead=*/true);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(), "read pipeline: read ahead of copies needs a device wait (three stages)");
  // The landed words say when the reads ahead have landed (a slow machine, such as the
  // arm64 run under an emulator, is waited for instead of a fixed sleep).
  std::vector<int32_t> words(3, 0);
  ReadPipeline::DeviceWait wait = dev.wait();
  wait.landed = words.data();
  Expected<std::unique_ptr<ReadPipeline>> p = ReadPipeline::open(
      f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kAuto, wait, /*read_ahead=*/true);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  const auto landed_ahead = [&](int g) {  // units 0 and 1 of inference g + 1, up to 10 s
    for (int i = 0; i < 2000; ++i) {
      if (__atomic_load_n(&words[0], __ATOMIC_ACQUIRE) > g && __atomic_load_n(&words[1], __ATOMIC_ACQUIRE) > g) return;
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  };
  const char* staging = static_cast<const char*>(f.staging.data());
  auto own_intact = [&](int u) {
    const ReadUnit& r = f.reads.units[size_t(u)];
    return std::memcmp(staging + r.own_offset, f.bytes.data() + u * kBlob, size_t(kBlob)) == 0;
  };
  for (int g = 1; g <= 4; ++g) {
    {
      std::lock_guard<std::mutex> lock(dev.mu);
      dev.gen = g;
    }
    (*p)->start();
    // As the CUDA engine enqueues: each copy once its read has landed, then its progress.
    // Copy 0 ends at once (read 2 waits for it); copies 1 and 2 stay in flight past finish().
    for (int u = 0; u < 3; ++u) {
      ASSERT_TRUE((*p)->wait_unit(u).ok());
      ASSERT_TRUE(own_intact(u)) << "inference " << g << " copy " << u << " sees other bytes";
      (*p)->progress(u);
      if (u == 0) dev.end(0);
    }
    ASSERT_TRUE((*p)->finish().ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the reader would read ahead now
    EXPECT_TRUE(own_intact(1)) << "read ahead over copy 1 while it was in flight";
    EXPECT_TRUE(own_intact(2)) << "read ahead over copy 2 while it was in flight";
    dev.end(2);
    dev.end(1);
    landed_ahead(g);  // the reads ahead land (a pipeline that never reads ahead fails below)
    const std::vector<ReadTiming>& t = (*p)->timings();
    for (int u = 0; u < 3; ++u) {
      if (g > 1 && u < 2) EXPECT_LT(t[size_t(u)].end_ms, 0.0) << "inference " << g << " read " << u << " not ahead";
      else EXPECT_GE(t[size_t(u)].start_ms, 0.0) << "inference " << g << " read " << u;
    }
  }
  std::lock_guard<std::mutex> lock(dev.mu);
  // Inferences 1-3 were each followed by reads ahead that found copies 2 and 1 in flight.
  EXPECT_GE(std::count(dev.waited_unfinished.begin(), dev.waited_unfinished.end(), 2), 3);
}

// The reader thread and the pread workers of a pipeline placed as `p`, each read back.
std::vector<test::ThreadSched> pipeline_threads(const Fixture& f, const ThreadPlacement& p) {
  Expected<std::unique_ptr<ReadPipeline>> pipe = ReadPipeline::open(
      f.reads, f.file, static_cast<char*>(f.staging.data()), ReaderKind::kThreads, {}, false, p);
  EXPECT_TRUE(pipe.ok()) << pipe.status().to_string();
  if (!pipe.ok()) return {};
  EXPECT_TRUE(run(**pipe, f).ok());
  std::vector<test::ThreadSched> all = test::threads_named("dlr-reader");
  EXPECT_EQ(all.size(), 1u);
  const std::vector<test::ThreadSched> workers = test::threads_named("dlr-pread");
  EXPECT_EQ(int(workers.size()), f.reads.queue_depth);
  all.insert(all.end(), workers.begin(), workers.end());
  return all;
}

TEST(ReadPipelineThreads, GetThePriorityAndCpusAsked) {
  Fixture f;
  make(&f, 3, "threads_placed");
  const CpuList allowed = allowed_cpus();
  ASSERT_FALSE(allowed.empty());
  const CpuList one{{allowed.cpus.back()}};
  for (ThreadPriority priority : {ThreadPriority::kHigh, ThreadPriority::kRealtime}) {
    const bool permitted = test::priority_permitted(priority);  // else: the threads keep normal priority
    const std::vector<test::ThreadSched> threads = pipeline_threads(f, {priority, one});
    for (const test::ThreadSched& t : threads) {
      EXPECT_EQ(t.cpus, one) << t.tid << " on " << t.cpus.to_string();
      const bool high = permitted && priority == ThreadPriority::kHigh;
      const bool realtime = permitted && priority == ThreadPriority::kRealtime;
      EXPECT_EQ(t.nice, high ? kHighNice : 0) << t.tid;
      EXPECT_EQ(t.policy, realtime ? SCHED_FIFO : SCHED_OTHER) << t.tid;
      EXPECT_EQ(t.rt_level, realtime ? kRealtimeLevel : 0) << t.tid;
    }
  }
  EXPECT_TRUE(test::threads_named("dlr-reader").empty());  // the pipelines are gone
}

TEST(ReadPipelineThreads, NormalChangesNothing) {
  Fixture f;
  make(&f, 3, "threads_normal");
  const CpuList first{{allowed_cpus().cpus.front()}};
  // A creating thread of nice 3 on one CPU: the threads inherit both, as without the option.
  std::thread creator([&] {
    ASSERT_EQ(setpriority(PRIO_PROCESS, id_t(test::this_tid()), 3), 0);
    ASSERT_TRUE(set_thread_cpus(first).ok());
    for (const test::ThreadSched& t : pipeline_threads(f, ThreadPlacement{})) {
      EXPECT_EQ(t.nice, 3) << t.tid;
      EXPECT_EQ(t.policy, SCHED_OTHER) << t.tid;
      EXPECT_EQ(t.cpus, first) << t.tid << " on " << t.cpus.to_string();
    }
  });
  creator.join();
}

}  // namespace
}  // namespace dlr
