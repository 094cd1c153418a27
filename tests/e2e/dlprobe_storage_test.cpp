// dlprobe's storage phase end to end (no GPU needed): --storage-only measures a small
// temporary file and writes a profile whose storage section loads; --storage-passes
// reads a file pass after pass and writes the pass times' spread as JSON; usage errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "runtime/streaming/copy_profile.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/json_file.h"

namespace dlr {
namespace {

using test::read_json;

struct ProbeRun {
  int code = -1;
  std::string out, err;
};

ProbeRun dlprobe(const std::string& args) {
  const std::string dir = test::temp_dir();
  const std::string cmd = "cd " + dir + " && " + std::string(DLR_TOOLS_DIR) + "/dlprobe " + args + " >" + dir +
                          "/probe_out.txt 2>" + dir + "/probe_err.txt";
  ProbeRun r;
  const int status = std::system(cmd.c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream o(dir + "/probe_out.txt"), e(dir + "/probe_err.txt");
  r.out.assign(std::istreambuf_iterator<char>(o), std::istreambuf_iterator<char>());
  r.err.assign(std::istreambuf_iterator<char>(e), std::istreambuf_iterator<char>());
  return r;
}

// A file of `mib` MiB of `fill` in the test's temporary directory; its path.
std::string write_file(const std::string& name, int mib, char fill) {
  const std::string file = test::temp_dir() + "/" + name;
  std::ofstream f(file, std::ios::binary);
  const std::string block(1 << 20, fill);
  for (int i = 0; i < mib; ++i) f << block;
  return file;
}

TEST(DlprobeStorage, StorageOnlyWritesAProfileWithStorage) {
  const std::string out = test::temp_dir() + "/storage_profile.json";
  const ProbeRun r = dlprobe("--storage-only --quick --storage-mib 8 --base h100 --name disk-test --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("O_DIRECT sequential reads"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("best reader: "), std::string::npos) << r.out;
  auto p = CopyProfile::load(out);
  ASSERT_TRUE(p.ok()) << p.status().to_string();
  EXPECT_EQ(p->name, "disk-test");
  auto h100 = CopyProfile::builtin("h100");
  EXPECT_EQ(p->pinned.size(), h100->pinned.size());  // the copy part came from --base
  ASSERT_FALSE(p->storage.empty());
  EXPECT_EQ(p->storage.device.rfind("a temporary file in ", 0), 0u)
      << p->storage.device;
  // Quick mode: 64 KiB and 1 MiB blocks (16 MiB is larger than the 8 MiB file) at depths 1, 4, 16.
  EXPECT_EQ(p->storage.direct.size(), 6u);
  EXPECT_GT(p->storage.read_ms(8 << 20, 1 << 20, 4), 0);
  EXPECT_GT(p->storage.buffered_gbps, 0);
  EXPECT_GT(p->storage.cached_gbps, 0);
  // The temporary file is gone.
  const ProbeRun ls = dlprobe("--show " + out);
  EXPECT_EQ(ls.code, 0);
  EXPECT_NE(ls.out.find("O_DIRECT GB/s"), std::string::npos) << ls.out;
  // Again without --base: the existing --out file's copy part is kept, its storage replaced.
  const ProbeRun again = dlprobe("--storage-only --quick --storage-mib 8 --out " + out);
  ASSERT_EQ(again.code, 0) << again.err;
  auto q = CopyProfile::load(out);
  ASSERT_TRUE(q.ok());
  EXPECT_EQ(q->name, "disk-test");
}

TEST(DlprobeStorage, ExistingFileIsKept) {
  const std::string file = write_file("weights_like.bin", 5, 'w');
  const std::string out = test::temp_dir() + "/file_profile.json";
  const ProbeRun r = dlprobe("--storage-only --quick --storage-file " + file + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);
  auto p = CopyProfile::load(out);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->name, "discrete");  // no --base, no existing --out: the built-in's copy part
  EXPECT_EQ(p->storage.device.rfind(file + " on ", 0), 0u) << p->storage.device;
}

// The spread's fields: per-pass lists of `passes`, order statistics in order.
void expect_spread(const nlohmann::json& j, int passes, int64_t pass_bytes) {
  ASSERT_TRUE(j.is_object()) << j;
  EXPECT_EQ(j.at("passes").get<int>(), passes);
  EXPECT_EQ(j.at("pass_bytes").get<int64_t>(), pass_bytes);
  ASSERT_EQ(j.at("pass_ms").size(), size_t(passes));
  ASSERT_EQ(j.at("pass_mbps").size(), size_t(passes));
  const std::string reader = j.at("reader").get<std::string>();
  EXPECT_TRUE(reader == "uring" || reader == "threads") << reader;
  const double min = j.at("min_ms"), p50 = j.at("p50_ms"), p90 = j.at("p90_ms"), p99 = j.at("p99_ms"),
               p999 = j.at("p99_9_ms"), max = j.at("max_ms");
  EXPECT_GT(min, 0);
  EXPECT_LE(min, p50);
  EXPECT_LE(p50, p90);
  EXPECT_LE(p90, p99);
  EXPECT_LE(p99, p999);
  EXPECT_LE(p999, max);
  EXPECT_DOUBLE_EQ(j.at("p99_over_p50").get<double>(), p99 / p50);
  double slowest = 0;
  for (size_t i = 0; i < size_t(passes); ++i) {
    const double ms = j["pass_ms"][i];
    slowest = std::max(slowest, ms);
    EXPECT_NEAR(j["pass_mbps"][i].get<double>(), double(pass_bytes) / (ms * 1e3), 1e-6 * double(pass_bytes));
  }
  EXPECT_DOUBLE_EQ(slowest, max);
}

TEST(DlprobeStorage, PassesGiveTheSpreadOfOneFile) {
  const std::string file = write_file("spread.bin", 8, 's');
  const std::string json = test::temp_dir() + "/spread.json";
  // 4 MiB of the 8 MiB file per pass, at another depth and block than dlrun's defaults.
  ProbeRun r = dlprobe("--storage-only --storage-file " + file + " --storage-mib 4 --storage-passes 6 --read-depth 4 "
                       "--read-block 256KiB --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Disk spread: " + file), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("p99/p50 "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("slowest passes: #"), std::string::npos) << r.out;
  nlohmann::json j = read_json(json);
  expect_spread(j, 6, 4 << 20);
  EXPECT_EQ(j.at("file").get<std::string>(), file);
  EXPECT_EQ(j.at("file_bytes").get<int64_t>(), 8 << 20);
  EXPECT_EQ(j.at("read_depth").get<int>(), 4);
  EXPECT_EQ(j.at("read_block_bytes").get<int64_t>(), 256 << 10);
  EXPECT_FALSE(j.at("temporary").get<bool>());
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);  // kept
  // Defaults: the whole file per pass, dlrun's read depth (8) and block (1 MiB).
  r = dlprobe("--storage-only --storage-file " + file + " --storage-passes 3 --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  j = read_json(json);
  expect_spread(j, 3, 8 << 20);
  EXPECT_EQ(j.at("read_depth").get<int>(), 8);
  EXPECT_EQ(j.at("read_block_bytes").get<int64_t>(), 1 << 20);
  // No file: a temporary one of --storage-mib, read whole and removed.
  r = dlprobe("--storage-only --storage-mib 4 --storage-passes 2 --reader threads --json " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  j = read_json(json);
  expect_spread(j, 2, 4 << 20);
  EXPECT_TRUE(j.at("temporary").get<bool>());
  EXPECT_EQ(j.at("reader").get<std::string>(), "threads");
  EXPECT_NE(::access(j.at("file").get<std::string>().c_str(), F_OK), 0);
}

TEST(DlprobeStorage, PassesUsageErrors) {
  EXPECT_EQ(dlprobe("--storage-passes 3").code, 2);                      // needs --storage-only
  EXPECT_EQ(dlprobe("--storage-only --storage-passes 3 --base h100").code, 2);  // writes no profile
  EXPECT_EQ(dlprobe("--storage-only --storage-passes 0").code, 2);
  EXPECT_EQ(dlprobe("--storage-only --json x.json").code, 2);          // only with --storage-passes
  EXPECT_EQ(dlprobe("--storage-only --read-depth 4").code, 2);
  const ProbeRun r = dlprobe("--storage-only --storage-passes 2 --storage-mib 4 --read-block 3000");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("read block 3000 bytes"), std::string::npos) << r.err;
  const std::string small = write_file("spread_small.bin", 5, 'x');
  const ProbeRun big = dlprobe("--storage-only --storage-file " + small + " --storage-mib 6 --storage-passes 2");
  EXPECT_EQ(big.code, 1);
  EXPECT_NE(big.err.find("6 MiB per pass"), std::string::npos) << big.err;
}

TEST(DlprobeStorage, Errors) {
  ProbeRun r = dlprobe("--storage-only --no-storage");
  EXPECT_EQ(r.code, 2);
  r = dlprobe("--base h100");
  EXPECT_EQ(r.code, 2);
  r = dlprobe("--storage-only --storage-mib 2");
  EXPECT_EQ(r.code, 2);  // below the 4 MiB minimum
  const std::string out = test::temp_dir() + "/never.json";
  r = dlprobe("--storage-only --quick --storage-file " + test::temp_dir() + "/missing.bin --out " + out);
  EXPECT_EQ(r.code, 1);
  // Progress lines first; the error is the last line, whole.
  ASSERT_FALSE(r.err.empty());
  EXPECT_EQ(r.err.back(), '\n');
  const std::string last = r.err.substr(r.err.rfind('\n', r.err.size() - 2) + 1);
  EXPECT_EQ(last, "dlprobe: storage: cannot stat '" + test::temp_dir() + "/missing.bin': No such file or directory\n")
      << r.err;
  EXPECT_NE(::access(out.c_str(), F_OK), 0);
  r = dlprobe("--storage-only --quick --out /nonexistent/dir/p.json");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("/nonexistent/dir"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace dlr
