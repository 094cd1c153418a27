// Hygiene of the prepared weight cache (runtime/storage/prepared_cache.h): writers
// killed with SIGKILL at random points of a prepared file leave a temporary that the
// next use removes (once, and over many cycles: DLR_KILL_CYCLES, 200 by default; the
// journal records 1,000); a live writer's temporary survives another process's
// cleanup and clear; the size bound with least-recently-used eviction (the bound after
// each write, LRU order, files in use and the file just written kept); the bound's
// variable. yolo-fastest-1.1 with its real weights (shared data).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/compile/compile.h"
#include "runtime/storage/prepared_cache.h"
#include "runtime/storage/prepared_file.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {
namespace fs = std::filesystem;

// Calls hook(i) before preparing blob i, then the real source: a child kills itself
// from the hook at the point it chose.
class HookedSource final : public WeightSource {
 public:
  HookedSource(std::unique_ptr<WeightSource> inner, std::function<void(int)> hook)
      : m_inner(std::move(inner)), m_hook(std::move(hook)) {}
  Status prepare(const WeightBlob& blob, Layout layout, void* dst) override {
    m_hook(m_next++);
    return m_inner->prepare(blob, layout, dst);
  }
  const std::string& name() const override { return m_inner->name(); }

 private:
  std::unique_ptr<WeightSource> m_inner;
  std::function<void(int)> m_hook;
  int m_next = 0;
};

struct EnvVar {
  EnvVar(const char* name, const std::string& value) : m_name(name) {
    const char* old = std::getenv(name);
    m_had = old != nullptr;
    if (old) m_old = old;
    ::setenv(name, value.c_str(), 1);
  }
  ~EnvVar() { m_had ? ::setenv(m_name, m_old.c_str(), 1) : ::unsetenv(m_name); }
  const char* m_name;
  bool m_had = false;
  std::string m_old;
};

std::vector<std::string> temporaries(const std::string& dir) {
  std::vector<std::string> out;
  if (!fs::exists(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (is_prepared_temporary(e.path().filename().string())) out.push_back(e.path().string());
  return out;
}

std::vector<std::string> prepared_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".dlrw") out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

int64_t prepared_bytes(const std::string& dir) {
  int64_t total = 0;
  for (const std::string& f : prepared_files(dir)) total += int64_t(fs::file_size(dir + "/" + f));
  return total;
}

void set_atime(const std::string& path, int64_t sec) {
  const struct timespec t[2] = {{time_t(sec), 0}, {0, UTIME_OMIT}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), t, 0), 0) << path;
}

class PreparedCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
    DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
    dir_ = test::temp_dir() + "/prepared_cache_" + std::to_string(::getpid()) + "_" + std::to_string(counter_++);
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    weights_path_ = dir_ + "/model.weights";
    fs::copy_file(weights, weights_path_);
    cfg_path_ = cfg;
    Expected<NetworkDesc> net = parse_network_cfg(cfg);
    ASSERT_TRUE(net.ok()) << net.status().to_string();
    net_ = std::move(*net);
    Expected<WeightsFile> wf = WeightsFile::open(weights_path_, net_);
    ASSERT_TRUE(wf.ok()) << wf.status().to_string();
    wf_ = std::make_unique<WeightsFile>(std::move(*wf));
    cache_env_ = std::make_unique<EnvVar>("DLR_CACHE_DIR", dir_ + "/cache");
    ::unsetenv("DLR_CACHE_MAX_BYTES");
    cache_ = dir_ + "/cache/prepared";
  }
  void TearDown() override { cache_env_.reset(); }

  ExecutionPlan plan(bool fp16, int layout = -1) {
    SessionOptions o;
    if (fp16) o.device = DeviceKind::kCUDA, o.precision = Precision::kFP16;
    o.layout = layout;
    Expected<ExecutionPlan> p = plan_for_prepare(net_, o);
    EXPECT_TRUE(p.ok()) << p.status().to_string();
    return p.ok() ? std::move(*p) : ExecutionPlan();
  }
  // With the content hash taken once, so a writer goes straight to the blobs.
  PreparedIdentity identity(const ExecutionPlan& p) {
    Expected<PreparedIdentity> id = prepared_identity(cfg_path_, weights_path_, p);
    EXPECT_TRUE(id.ok()) << id.status().to_string();
    if (id.ok()) {
      EXPECT_TRUE(hash_weights_content(&*id).ok());
    }
    return id.ok() ? *id : PreparedIdentity();
  }
  std::unique_ptr<WeightSource> source() { return weights_file_source(net_, *wf_); }

  Expected<std::string> use(const ExecutionPlan& p, const PreparedIdentity& id, int64_t bound = -1,
                            PreparedUse* hold = nullptr, bool* built = nullptr) {
    auto src = source();
    bool b = false;
    return ensure_prepared(id, p, *src, built ? built : &b, PreparedCheck::kHeader, nullptr, {bound, hold});
  }

  // Forks a writer of (p, id) into the cache through ensure_prepared; it kills itself
  // (SIGKILL) before blob `kill_at`. Returns the signal that ended it (0: exited).
  int killed_writer(const ExecutionPlan& p, const PreparedIdentity& id, int kill_at) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      HookedSource src(source(), [kill_at](int i) {
        if (i == kill_at) ::kill(::getpid(), SIGKILL);
      });
      bool built = false;
      (void)ensure_prepared(id, p, src, &built);
      ::_exit(0);
    }
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    return WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  }

  static inline int counter_ = 0;
  std::string dir_, cfg_path_, weights_path_, cache_;
  NetworkDesc net_;
  std::unique_ptr<WeightsFile> wf_;
  std::unique_ptr<EnvVar> cache_env_;
};

TEST_F(PreparedCacheTest, KilledWriterLeavesATemporaryThatTheNextUseRemoves) {
  const ExecutionPlan p = plan(true);
  const PreparedIdentity id = identity(p);
  ASSERT_GT(p.weights.size(), 4u);
  ASSERT_EQ(killed_writer(p, id, int(p.weights.size()) / 2), SIGKILL);
  const std::vector<std::string> left = temporaries(cache_);
  ASSERT_EQ(left.size(), 1u) << "the killed writer left no partial file: nothing tested";
  EXPECT_GT(fs::file_size(left[0]), 0u);
  bool built = false;
  Expected<std::string> path = use(p, id, -1, nullptr, &built);
  ASSERT_TRUE(path.ok()) << path.status().to_string();
  EXPECT_TRUE(built);
  EXPECT_TRUE(temporaries(cache_).empty()) << left[0];
  EXPECT_EQ(prepared_files(cache_).size(), 1u);
  EXPECT_TRUE(PreparedFile::open(*path, p, &id).ok());
}

// The cycle: kill a writer at a random blob (the child's own timing) or, one cycle in
// four, from the parent after a random delay (hashing, creating, fsync, rename
// included); then the next use's cleanup. No temporary may survive a cycle; a file
// that was finished must be whole. DLR_KILL_CYCLES sets the count.
TEST_F(PreparedCacheTest, ManyKilledWritersLeaveNothingBehind) {
  const char* env = std::getenv("DLR_KILL_CYCLES");
  const int cycles = env ? std::atoi(env) : 200;
  const ExecutionPlan p = plan(false);
  const PreparedIdentity id = identity(p);
  const int blobs = int(p.weights.size());
  std::mt19937 rng(2026);
  int left_behind = 0, finished = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int c = 0; c < cycles; ++c) {
    if (c % 4 == 3) {
      PreparedIdentity slow = id;
      slow.weights_hash = 0;  // the child hashes the .weights first: a wider window
      const pid_t pid = ::fork();
      if (pid == 0) {
        auto src = source();
        bool built = false;
        (void)ensure_prepared(slow, p, *src, &built);
        ::_exit(0);
      }
      ::usleep(useconds_t(rng() % 100000));
      ::kill(pid, SIGKILL);
      int status = 0;
      ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    } else {
      ASSERT_EQ(killed_writer(p, id, int(rng() % unsigned(blobs))), SIGKILL) << "cycle " << c;
    }
    left_behind += temporaries(cache_).empty() ? 0 : 1;
    remove_stale_temporaries(cache_);  // what the next use does first
    ASSERT_TRUE(temporaries(cache_).empty()) << "cycle " << c;
    for (const std::string& f : prepared_files(cache_)) {  // a finished file is whole (the rename is atomic)
      ++finished;
      EXPECT_TRUE(PreparedFile::open(cache_ + "/" + f, p, &id).ok()) << f;
      fs::remove(cache_ + "/" + f);
    }
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%d killed writers in %.2f s: %d left a partial file (all removed), %d had finished\n", cycles, s,
              left_behind, finished);
  EXPECT_GT(left_behind, cycles / 2) << "kills did not hit the writing: nothing tested";
  Expected<std::string> path = use(p, id);
  ASSERT_TRUE(path.ok()) << path.status().to_string();
  EXPECT_EQ(prepared_files(cache_).size(), 1u);
  EXPECT_TRUE(temporaries(cache_).empty());
}

TEST_F(PreparedCacheTest, LiveWritersTemporarySurvivesAnotherProcesssCleanup) {
  const ExecutionPlan p = plan(false);
  const PreparedIdentity id = identity(p);
  int at_blob[2], go[2];
  ASSERT_EQ(::pipe(at_blob), 0);
  ASSERT_EQ(::pipe(go), 0);
  const pid_t pid = ::fork();
  if (pid == 0) {
    HookedSource src(source(), [&](int i) {
      if (i != 2) return;
      char c = 'x';
      (void)!::write(at_blob[1], &c, 1);
      (void)!::read(go[0], &c, 1);  // paused mid-file until the parent has cleaned
    });
    bool built = false;
    ::_exit(ensure_prepared(id, p, src, &built).ok() ? 0 : 1);
  }
  char c = 0;
  ASSERT_EQ(::read(at_blob[0], &c, 1), 1);
  const std::vector<std::string> live = temporaries(cache_);
  ASSERT_EQ(live.size(), 1u);
  // This process cleans the cache three ways while the child writes.
  EXPECT_EQ(remove_stale_temporaries(cache_), 0);
  const ClearReport cleared = clear_prepared_cache(cache_);
  EXPECT_EQ(cleared.removed, 0);
  EXPECT_EQ(cleared.kept, 1);
  Expected<std::vector<CacheEntry>> listed = list_prepared_cache(cache_);
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->size(), 1u);
  EXPECT_TRUE((*listed)[0].temporary);
  EXPECT_TRUE((*listed)[0].locked);
  EXPECT_TRUE(fs::exists(live[0]));
  ASSERT_EQ(::write(go[1], &c, 1), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(temporaries(cache_).empty());
  ASSERT_EQ(prepared_files(cache_).size(), 1u);
  Expected<PreparedFile> f = PreparedFile::open(cache_ + "/" + prepared_files(cache_)[0], p, &id);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_TRUE(f->verify_all().ok());
  for (int fd : {at_blob[0], at_blob[1], go[0], go[1]}) ::close(fd);
}

// Plain files stand for prepared ones: eviction looks at names, sizes, access times
// and locks only.
TEST_F(PreparedCacheTest, EvictionRemovesLeastRecentlyUsedFirstAndKeepsFilesInUse) {
  fs::create_directories(cache_);
  const std::vector<std::string> names = {"a-0000000000000001.dlrw", "b-0000000000000002.dlrw",
                                          "c-0000000000000003.dlrw", "d-0000000000000004.dlrw"};
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string path = cache_ + "/" + names[i];
    { std::ofstream(path) << "x"; }
    fs::resize_file(path, 1 << 20);
    set_atime(path, 1000000 + int64_t(i) * 10);  // a oldest ... d newest
  }
  const std::string temp = cache_ + "/e-0000000000000005.dlrw.tmp.AbCdEf";
  { std::ofstream(temp) << "a live or dead writer's bytes"; }
  // Order: a and b go for a bound of 2.5 files. Listing reads each file's header and
  // leaves the last-use times as they were.
  Expected<std::vector<CacheEntry>> listed = list_prepared_cache(cache_);
  ASSERT_TRUE(listed.ok());
  EXPECT_EQ((*listed)[0].name, names[0]);
  Expected<std::vector<CacheEntry>> again = list_prepared_cache(cache_);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->size(), listed->size());
  for (size_t i = 0; i < listed->size(); ++i) {
    EXPECT_EQ((*again)[i].name, (*listed)[i].name);
    EXPECT_EQ((*again)[i].last_use_ns, (*listed)[i].last_use_ns) << (*listed)[i].name << ": listing moved its last use";
  }
  EvictReport r = evict_prepared(cache_, (5 << 20) / 2, "");
  EXPECT_EQ(r.removed, 2);
  EXPECT_EQ(prepared_files(cache_), (std::vector<std::string>{names[2], names[3]}));
  EXPECT_LE(prepared_bytes(cache_), (5 << 20) / 2);
  EXPECT_TRUE(fs::exists(temp)) << "eviction touched a temporary";
  // c (the oldest left) is in use: d goes instead; then the kept name stays too.
  PreparedUse in_use;
  ASSERT_TRUE(*PreparedUse::acquire(cache_ + "/" + names[2], &in_use));
  r = evict_prepared(cache_, 1 << 20, "");
  EXPECT_EQ(r.kept_in_use, 1);
  EXPECT_EQ(prepared_files(cache_), (std::vector<std::string>{names[2]}));
  // One file larger than the bound, in use: kept; the bound is exceeded until it is not.
  r = evict_prepared(cache_, 4096, "");
  EXPECT_EQ(prepared_files(cache_).size(), 1u);
  EXPECT_GT(r.total_bytes, 4096);
  in_use.release();
  r = evict_prepared(cache_, 4096, names[2]);  // the file just written
  EXPECT_EQ(prepared_files(cache_).size(), 1u);
  r = evict_prepared(cache_, 4096, "");
  EXPECT_TRUE(prepared_files(cache_).empty());
}

TEST_F(PreparedCacheTest, TheBoundHoldsAfterEveryWriteAndAReaderKeepsItsFile) {
  const std::vector<ExecutionPlan> plans = [&] {
    std::vector<ExecutionPlan> v;
    v.push_back(plan(false));
    v.push_back(plan(true));
    v.push_back(plan(true, 0));
    return v;
  }();
  std::vector<PreparedIdentity> ids;
  for (const ExecutionPlan& p : plans) ids.push_back(identity(p));
  Expected<std::string> first = use(plans[0], ids[0], 0);
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  const int64_t fp32 = int64_t(fs::file_size(*first));
  const int64_t bound = fp32 + fp32 / 2;  // room for the fp32 file or two fp16 files, not more
  for (int round = 0; round < 6; ++round) {
    const size_t k = size_t(round) % plans.size();
    bool built = false;
    Expected<std::string> path = use(plans[k], ids[k], bound, nullptr, &built);
    ASSERT_TRUE(path.ok()) << path.status().to_string();
    EXPECT_TRUE(fs::exists(*path)) << "the file just used was evicted";
    EXPECT_LE(prepared_bytes(cache_), bound) << "round " << round;
  }
  // A reader of the fp16 file (the session's source holds it): writing the fp32 file
  // cannot evict it, so both stay over the bound; once the reader is gone, the next use
  // evicts it.
  Expected<std::string> fp16 = use(plans[1], ids[1], bound);
  ASSERT_TRUE(fp16.ok());
  Expected<PreparedFile> f = PreparedFile::open(*fp16, plans[1], &ids[1]);
  ASSERT_TRUE(f.ok());
  Expected<std::unique_ptr<WeightSource>> reader = prepared_file_source(*f);
  ASSERT_TRUE(reader.ok());
  Expected<std::string> other = use(plans[0], ids[0], 1);
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(fs::exists(*fp16));
  EXPECT_TRUE(fs::exists(*other));
  reader->reset();
  ASSERT_TRUE(use(plans[0], ids[0], 1).ok());
  EXPECT_FALSE(fs::exists(*fp16));
  EXPECT_EQ(prepared_files(cache_).size(), 1u);
}

TEST(PreparedCacheBound, VariableOptionAndDefault) {
  const std::string dir = test::temp_dir();
  EnvVar unset_later("DLR_CACHE_MAX_BYTES", "");
  ::unsetenv("DLR_CACHE_MAX_BYTES");
  Expected<int64_t> d = cache_bound_bytes(-1, dir);
  ASSERT_TRUE(d.ok());
  EXPECT_GT(*d, 0);
  EXPECT_LE(*d, kDefaultCacheBound);
  EXPECT_EQ(*cache_bound_bytes(12345, dir), 12345);
  EXPECT_EQ(*cache_bound_bytes(0, dir), INT64_MAX);
  const std::pair<const char*, int64_t> good[] = {
      {"2GiB", int64_t(2) << 30}, {"500MB", 500000000}, {"4096", 4096}, {"0", INT64_MAX}, {"none", INT64_MAX}};
  for (const auto& [text, bytes] : good) {
    ::setenv("DLR_CACHE_MAX_BYTES", text, 1);
    Expected<int64_t> b = cache_bound_bytes(-1, dir);
    ASSERT_TRUE(b.ok()) << text << ": " << b.status().to_string();
    EXPECT_EQ(*b, bytes) << text;
    EXPECT_EQ(*cache_bound_bytes(777, dir), 777) << "the option wins over the variable";
  }
  for (const char* bad : {"lots", "50%", "min", "-1GiB", "2XB"}) {
    ::setenv("DLR_CACHE_MAX_BYTES", bad, 1);
    Expected<int64_t> b = cache_bound_bytes(-1, dir);
    ASSERT_FALSE(b.ok()) << bad;
    EXPECT_EQ(b.status().message(), std::string("DLR_CACHE_MAX_BYTES \"") + bad +
                                        "\": expected a size (2GiB, 500MB, a byte count) or 0 / none (no bound)");
  }
  SessionOptions o;
  o.cache_max_bytes = -2;
  const Status st = validate_options(o);
  EXPECT_NE(st.message().find("cache bound -2 bytes"), std::string::npos) << st.to_string();
}

}  // namespace
}  // namespace dlr
