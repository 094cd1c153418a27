// dlprobe's storage phase end to end (no GPU needed): --storage-only measures a small
// temporary file and writes a profile whose storage section loads; usage errors.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "runtime/streaming/copy_profile.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

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
  const std::string file = test::temp_dir() + "/weights_like.bin";
  {
    std::ofstream f(file, std::ios::binary);
    const std::string block(1 << 20, 'w');
    for (int i = 0; i < 5; ++i) f << block;
  }
  const std::string out = test::temp_dir() + "/file_profile.json";
  const ProbeRun r = dlprobe("--storage-only --quick --storage-file " + file + " --out " + out);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(::access(file.c_str(), F_OK), 0);
  auto p = CopyProfile::load(out);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->name, "discrete");  // no --base, no existing --out: the built-in's copy part
  EXPECT_EQ(p->storage.device.rfind(file + " on ", 0), 0u) << p->storage.device;
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
