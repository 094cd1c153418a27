// BlockReader (both backends, direct and buffered) against the file's bytes, its
// argument and error contracts, and the page cache helpers.
#include "runtime/storage/block_reader.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

#include "runtime/storage/page_cache_view.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

constexpr int64_t kAlign = BlockReader::kDirectAlign;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<char, FreeDeleter>;

Buffer aligned_buffer(int64_t bytes) {
  void* p = nullptr;
  if (posix_memalign(&p, size_t(kAlign), size_t(bytes)) != 0) return Buffer(nullptr);
  std::memset(p, 0xEE, size_t(bytes));
  return Buffer(static_cast<char*>(p));
}

// A file of `bytes` random bytes in the test's scratch directory; its content.
std::vector<char> write_random_file(const std::string& path, int64_t bytes, uint32_t seed) {
  std::vector<char> data(static_cast<size_t>(bytes));
  std::mt19937 rng(seed);
  for (char& c : data) c = char(rng());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), std::streamsize(data.size()));
  return data;
}

std::vector<ReaderKind> kinds() {
  std::vector<ReaderKind> k{ReaderKind::kThreads};
  if (uring_available()) k.push_back(ReaderKind::kUring);
  return k;
}

std::string label(ReaderKind k, bool direct, int depth) {
  return std::string(reader_kind_name(k)) + (direct ? " direct" : " buffered") + " depth " + std::to_string(depth);
}

class BlockReaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path = test::temp_dir() + "/block_reader_" + ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".bin";
    data = write_random_file(path, kFileBytes, 7);
  }
  void TearDown() override { std::remove(path.c_str()); }

  static constexpr int64_t kFileBytes = 3 * 1024 * 1024 + 5 * kAlign;  // 3 MiB + 20 KiB
  std::string path;
  std::vector<char> data;
};

TEST(ReaderKind, NamesRoundTrip) {
  for (ReaderKind k : {ReaderKind::kAuto, ReaderKind::kUring, ReaderKind::kThreads}) {
    ReaderKind back = ReaderKind::kAuto;
    ASSERT_TRUE(parse_reader_kind(reader_kind_name(k), &back)) << reader_kind_name(k);
    EXPECT_EQ(back, k);
  }
  ReaderKind k = ReaderKind::kThreads;
  EXPECT_FALSE(parse_reader_kind("aio", &k));
  EXPECT_FALSE(parse_reader_kind("", &k));
  EXPECT_EQ(k, ReaderKind::kThreads);
}

// Many reads of random offsets and sizes, some waited for out of order, at every
// depth: every byte equals the file's.
TEST_F(BlockReaderTest, ReadsMatchTheFile) {
  std::mt19937 rng(11);
  for (ReaderKind kind : kinds())
    for (bool direct : {false, true})
      for (int depth : {1, 2, 3, 8, 16, 64}) {
        SCOPED_TRACE(label(kind, direct, depth));
        auto r = BlockReader::open(path, kind, depth, direct);
        ASSERT_TRUE(r.ok()) << r.status().to_string();
        BlockReader& reader = **r;
        EXPECT_EQ(reader.kind(), kind);
        EXPECT_EQ(reader.path(), path);
        EXPECT_EQ(reader.file_bytes(), kFileBytes);
        constexpr int kReads = 96;
        struct Pending {
          int64_t ticket, offset, bytes;
          Buffer buf;
        };
        std::vector<Pending> reads;
        int64_t expected_bytes = 0;
        for (int i = 0; i < kReads; ++i) {
          int64_t offset, bytes;
          if (direct) {
            const int64_t blocks = kFileBytes / kAlign;
            offset = int64_t(rng() % uint32_t(blocks)) * kAlign;
            bytes = (1 + int64_t(rng() % uint32_t(std::min<int64_t>(blocks - offset / kAlign, 256)))) * kAlign;
          } else {
            offset = int64_t(rng() % uint32_t(kFileBytes));
            bytes = 1 + int64_t(rng() % uint32_t(std::min<int64_t>(kFileBytes - offset, 1 << 20)));
          }
          if (i == 0) {  // the whole file in one read
            offset = 0;
            bytes = kFileBytes;
          }
          Buffer buf = aligned_buffer(bytes);
          ASSERT_TRUE(buf);
          auto t = reader.submit({offset, bytes, buf.get()});
          ASSERT_TRUE(t.ok()) << t.status().to_string();
          EXPECT_EQ(*t, int64_t(i));  // tickets count submissions
          reads.push_back({*t, offset, bytes, std::move(buf)});
          expected_bytes += bytes;
          if (i % 7 == 3) {  // wait for an older read, out of order
            const Pending& p = reads[size_t(rng() % reads.size())];
            ASSERT_TRUE(reader.wait(p.ticket).ok());
            ASSERT_EQ(std::memcmp(p.buf.get(), data.data() + p.offset, size_t(p.bytes)), 0)
                << "ticket " << p.ticket << " offset " << p.offset << " bytes " << p.bytes;
          }
        }
        for (size_t i = reads.size(); i-- > 0;) ASSERT_TRUE(reader.wait(reads[i].ticket).ok());
        ASSERT_TRUE(reader.wait_all().ok());
        for (const Pending& p : reads)
          ASSERT_EQ(std::memcmp(p.buf.get(), data.data() + p.offset, size_t(p.bytes)), 0)
              << "ticket " << p.ticket << " offset " << p.offset << " bytes " << p.bytes;
        EXPECT_EQ(reader.bytes_read(), expected_bytes);
        EXPECT_TRUE(reader.wait(0).ok());  // a finished ticket stays finished
      }
}

TEST_F(BlockReaderTest, AutoPicksABackend) {
  auto r = BlockReader::open(path, ReaderKind::kAuto, 4, true);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)->kind(), uring_available() ? ReaderKind::kUring : ReaderKind::kThreads);
}

TEST_F(BlockReaderTest, QueueDepthBounds) {
  for (int depth : {0, -1, BlockReader::kMaxQueueDepth + 1}) {
    auto r = BlockReader::open(path, ReaderKind::kThreads, depth, false);
    ASSERT_FALSE(r.ok()) << depth;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("queue depth " + std::to_string(depth)), std::string::npos)
        << r.status().message();
  }
  // Depth 1 and 64: more reads than the depth; submit reaps to make room.
  for (ReaderKind kind : kinds())
    for (int depth : {1, BlockReader::kMaxQueueDepth}) {
      auto r = BlockReader::open(path, kind, depth, true);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      const int n = 3 * depth;
      Buffer buf = aligned_buffer(int64_t(n) * kAlign);
      for (int i = 0; i < n; ++i) {
        auto t = (*r)->submit({int64_t(i) * kAlign, kAlign, buf.get() + int64_t(i) * kAlign});
        ASSERT_TRUE(t.ok()) << t.status().to_string();
        EXPECT_GE((*r)->in_flight(), 1);
        EXPECT_LE((*r)->in_flight(), depth);
        if (kind == ReaderKind::kUring) {
          EXPECT_EQ((*r)->in_flight(), std::min(i + 1, depth));  // reaps one at a time
        }
      }
      ASSERT_TRUE((*r)->wait_all().ok());
      EXPECT_EQ((*r)->in_flight(), 0);
      EXPECT_EQ(std::memcmp(buf.get(), data.data(), size_t(n) * kAlign), 0) << label(kind, true, depth);
    }
}

// wait_for: true once the read has landed (then its bytes are the file's), false while it
// is in flight, in which case a later wait or wait_for still covers it; a finished ticket
// answers true at once; a ticket never issued or a negative timeout is refused.
TEST_F(BlockReaderTest, TimedWaitsSayWhetherTheReadLanded) {
  for (ReaderKind kind : kinds())
    for (bool direct : {false, true}) {
      SCOPED_TRACE(label(kind, direct, 4));
      auto r = BlockReader::open(path, kind, 4, direct);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      BlockReader& reader = **r;
      const int64_t piece = kFileBytes / kAlign / 4 * kAlign;
      std::vector<Buffer> bufs;
      std::vector<int64_t> tickets;
      for (int i = 0; i < 4; ++i) {
        bufs.push_back(aligned_buffer(piece));
        auto t = reader.submit({i * piece, piece, bufs.back().get()});
        ASSERT_TRUE(t.ok()) << t.status().to_string();
        tickets.push_back(*t);
      }
      int timed_out = 0;
      for (int i = 0; i < 4; ++i) {
        bool landed = false;
        for (int polls = 0; !landed && polls < 200000; ++polls) {  // at most about 4 s of 20 us waits
          auto done = reader.wait_for(tickets[size_t(i)], i == 3 ? 0 : 20);
          ASSERT_TRUE(done.ok()) << done.status().to_string();
          landed = *done;
          timed_out += landed ? 0 : 1;
        }
        ASSERT_TRUE(landed) << "read " << i << " never landed";
        ASSERT_EQ(std::memcmp(bufs[size_t(i)].get(), data.data() + i * piece, size_t(piece)), 0) << "read " << i;
        auto again = reader.wait_for(tickets[size_t(i)], 0);
        ASSERT_TRUE(again.ok() && *again);
      }
      std::printf("%s: %d timed waits ended before their read\n", label(kind, direct, 4).c_str(), timed_out);
      EXPECT_EQ(reader.in_flight(), 0);
      EXPECT_EQ(reader.wait_for(99, 10).status().code(), StatusCode::kInvalidArgument);
      const Status negative = reader.wait_for(tickets[0], -1).status();
      EXPECT_EQ(negative.code(), StatusCode::kInvalidArgument);
      EXPECT_EQ(negative.message(), "block reader for '" + path + "': negative wait timeout");
      EXPECT_TRUE(reader.wait_all().ok());
    }
}

TEST_F(BlockReaderTest, TicketsNeverIssuedAreRefused) {
  for (ReaderKind kind : kinds()) {
    auto r = BlockReader::open(path, kind, 2, false);
    ASSERT_TRUE(r.ok());
    Status st = (*r)->wait(0);
    EXPECT_EQ(st.code(), StatusCode::kInvalidArgument) << st.to_string();
    EXPECT_EQ((*r)->wait(-1).code(), StatusCode::kInvalidArgument);
    EXPECT_TRUE((*r)->wait_all().ok());  // nothing in flight
  }
}

TEST_F(BlockReaderTest, DirectReadsMustBeAligned) {
  Buffer buf = aligned_buffer(4 * kAlign);
  for (ReaderKind kind : kinds()) {
    auto r = BlockReader::open(path, kind, 4, true);
    ASSERT_TRUE(r.ok());
    const ReadRequest bad[] = {{100, kAlign, buf.get()}, {0, 100, buf.get()}, {0, kAlign, buf.get() + 8}};
    for (const ReadRequest& q : bad) {
      auto t = (*r)->submit(q);
      ASSERT_FALSE(t.ok());
      const std::string& m = t.status().message();
      EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(m.find(path), std::string::npos) << m;
      EXPECT_NE(m.find("multiples of 4096"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    }
    // Argument errors are not sticky: an aligned read still works.
    auto t = (*r)->submit({kAlign, kAlign, buf.get()});
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ASSERT_TRUE((*r)->wait(*t).ok());
    EXPECT_EQ(std::memcmp(buf.get(), data.data() + kAlign, size_t(kAlign)), 0);
    // Buffered readers take any alignment.
    auto b = BlockReader::open(path, kind, 4, false);
    ASSERT_TRUE(b.ok());
    auto u = (*b)->submit({101, 999, buf.get() + 3});
    ASSERT_TRUE(u.ok()) << u.status().to_string();
    ASSERT_TRUE((*b)->wait(*u).ok());
    EXPECT_EQ(std::memcmp(buf.get() + 3, data.data() + 101, 999), 0);
  }
}

TEST_F(BlockReaderTest, BadRequestsAreRefused) {
  Buffer buf = aligned_buffer(kAlign);
  auto r = BlockReader::open(path, ReaderKind::kThreads, 2, false);
  ASSERT_TRUE(r.ok());
  for (const ReadRequest& q : {ReadRequest{0, 0, buf.get()}, ReadRequest{-1, 10, buf.get()}, ReadRequest{0, 10, nullptr}}) {
    auto t = (*r)->submit(q);
    ASSERT_FALSE(t.ok());
    EXPECT_EQ(t.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status().message();
  }
}

TEST_F(BlockReaderTest, ReadingPastTheEndFails) {
  Buffer buf = aligned_buffer(4 * kAlign);
  for (ReaderKind kind : kinds())
    for (bool direct : {false, true}) {
      auto r = BlockReader::open(path, kind, 2, direct);
      ASSERT_TRUE(r.ok());
      auto t = (*r)->submit({kFileBytes - kAlign, 2 * kAlign, buf.get()});
      ASSERT_FALSE(t.ok()) << label(kind, direct, 2);
      const std::string& m = t.status().message();
      EXPECT_EQ(t.status().code(), StatusCode::kIoError);
      EXPECT_NE(m.find("'" + path + "'"), std::string::npos) << m;
      EXPECT_NE(m.find("offset " + std::to_string(kFileBytes - kAlign)), std::string::npos) << m;
      EXPECT_NE(m.find("past the end of the file"), std::string::npos) << m;
      EXPECT_EQ(m.find('\n'), std::string::npos) << m;
      auto far = (*r)->submit({kFileBytes + kAlign, kAlign, buf.get()});
      EXPECT_FALSE(far.ok());
    }
}

// The file shrinks after open: the read meets the end of the file while in flight.
// The error is one line naming the file, offset and size, and it is sticky.
TEST_F(BlockReaderTest, FileEndingDuringAReadIsAnError) {
  Buffer buf = aligned_buffer(8 * kAlign);
  for (ReaderKind kind : kinds())
    for (bool direct : {false, true}) {
      SCOPED_TRACE(label(kind, direct, 4));
      write_random_file(path, kFileBytes, 7);
      auto r = BlockReader::open(path, kind, 4, direct);
      ASSERT_TRUE(r.ok());
      ASSERT_EQ(::truncate(path.c_str(), 16 * kAlign), 0);
      auto t = (*r)->submit({14 * kAlign, 8 * kAlign, buf.get()});
      ASSERT_TRUE(t.ok()) << t.status().to_string();  // the size checked is the one at open
      Status st = (*r)->wait(*t);
      ASSERT_FALSE(st.ok());
      EXPECT_EQ(st.code(), StatusCode::kIoError);
      EXPECT_NE(st.message().find("'" + path + "' at offset " + std::to_string(14 * kAlign) + ", " +
                                  std::to_string(8 * kAlign) + " bytes"),
                std::string::npos)
          << st.message();
      EXPECT_NE(st.message().find("ended after " + std::to_string(2 * kAlign)), std::string::npos) << st.message();
      EXPECT_EQ(st.message().find('\n'), std::string::npos);
      // Sticky: later calls report the same error.
      auto again = (*r)->submit({0, kAlign, buf.get()});
      ASSERT_FALSE(again.ok());
      EXPECT_EQ(again.status().message(), st.message());
      EXPECT_EQ((*r)->wait_all().message(), st.message());
    }
}

TEST_F(BlockReaderTest, MissingFile) {
  auto r = BlockReader::open(path + ".missing", ReaderKind::kAuto, 4, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kIoError);
  EXPECT_NE(r.status().message().find(path + ".missing"), std::string::npos) << r.status().message();
  auto d = BlockReader::open(test::temp_dir(), ReaderKind::kThreads, 4, false);
  EXPECT_FALSE(d.ok());  // a directory is not a regular file
}

TEST_F(BlockReaderTest, UringRequestedWithoutUring) {
  if (uring_available()) GTEST_SKIP() << "io_uring is available here; the refusal path cannot be reached";
  auto r = BlockReader::open(path, ReaderKind::kUring, 4, true);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(r.status().message().find("io_uring"), std::string::npos) << r.status().message();
}

// tmpfs refused O_DIRECT before Linux 6.6 (open fails: EINVAL); since then it accepts
// it. Either the open fails with a message saying why, or the reads are right.
TEST(BlockReaderTmpfs, DirectOnTmpfs) {
  char dir_template[] = "/dev/shm/dlr_block_reader_XXXXXX";
  if (::access("/dev/shm", W_OK) != 0 || !::mkdtemp(dir_template)) GTEST_SKIP() << "no writable /dev/shm";
  const std::string dir = dir_template, path = dir + "/f.bin";
  const std::vector<char> data = write_random_file(path, 64 * kAlign, 3);
  for (ReaderKind kind : kinds()) {
    auto r = BlockReader::open(path, kind, 4, true);
    if (!r.ok()) {
      EXPECT_EQ(r.status().code(), StatusCode::kIoError);
      EXPECT_NE(r.status().message().find("refuses direct I/O"), std::string::npos) << r.status().message();
      EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
      continue;
    }
    Buffer buf = aligned_buffer(64 * kAlign);
    auto t = (*r)->submit({0, 64 * kAlign, buf.get()});
    ASSERT_TRUE(t.ok()) << t.status().to_string();
    ASSERT_TRUE((*r)->wait(*t).ok());
    EXPECT_EQ(std::memcmp(buf.get(), data.data(), data.size()), 0);
    std::printf("note: this kernel's tmpfs accepts O_DIRECT (%s reader read it correctly)\n", reader_kind_name(kind));
  }
  std::remove(path.c_str());
  ::rmdir(dir.c_str());
}

// Destroying a reader with reads queued and running waits for them: the buffers are
// complete afterwards and nothing is written into them later.
TEST_F(BlockReaderTest, DestructionWithReadsInFlight) {
  for (ReaderKind kind : kinds())
    for (bool direct : {false, true}) {
      const int depth = 16;
      const int64_t each = 48 * kAlign;
      Buffer buf = aligned_buffer(depth * each);
      {
        auto r = BlockReader::open(path, kind, depth, direct);
        ASSERT_TRUE(r.ok());
        for (int i = 0; i < depth; ++i)
          ASSERT_TRUE((*r)->submit({int64_t(i) * each, each, buf.get() + int64_t(i) * each}).ok());
      }
      EXPECT_EQ(std::memcmp(buf.get(), data.data(), size_t(depth * each)), 0) << label(kind, direct, depth);
    }
}

// page_cache_bytes sees a buffered read fill the cache and drop_page_cache empty it;
// direct reads leave it empty. Filesystems that do not report residency skip.
TEST_F(BlockReaderTest, PageCache) {
  auto before = page_cache_bytes(path);
  ASSERT_TRUE(before.ok()) << before.status().to_string();
  EXPECT_LE(*before, kFileBytes);
  ASSERT_TRUE(drop_page_cache(path).ok());
  auto dropped = page_cache_bytes(path);
  ASSERT_TRUE(dropped.ok());
  if (*dropped > kFileBytes / 2)
    GTEST_SKIP() << "this filesystem keeps " << *dropped << " of " << kFileBytes
                 << " bytes cached after POSIX_FADV_DONTNEED; residency cannot be tested here";
  for (ReaderKind kind : kinds()) {
    Buffer buf = aligned_buffer(kFileBytes);
    {
      auto r = BlockReader::open(path, kind, 8, true);
      ASSERT_TRUE(r.ok());
      for (int64_t off = 0; off < kFileBytes; off += 64 * kAlign)
        ASSERT_TRUE((*r)->submit({off, std::min(64 * kAlign, kFileBytes - off), buf.get() + off}).ok());
      ASSERT_TRUE((*r)->wait_all().ok());
      EXPECT_EQ((*r)->bytes_read(), kFileBytes);
    }
    auto direct = page_cache_bytes(path);
    ASSERT_TRUE(direct.ok());
    EXPECT_LE(*direct, *dropped + 16 * kAlign) << "direct reads filled the page cache (" << reader_kind_name(kind) << ")";
    {
      auto r = BlockReader::open(path, kind, 8, false);
      ASSERT_TRUE(r.ok());
      ASSERT_TRUE((*r)->submit({0, kFileBytes, buf.get()}).ok());
      ASSERT_TRUE((*r)->wait_all().ok());
    }
    auto warm = page_cache_bytes(path);
    ASSERT_TRUE(warm.ok());
    if (*warm == 0) GTEST_SKIP() << "this filesystem does not report page-cache residency (mincore)";
    EXPECT_GE(*warm, kFileBytes * 9 / 10) << "a buffered read of the whole file left it uncached";
    ASSERT_TRUE(drop_page_cache(path).ok());
    auto after = page_cache_bytes(path);
    ASSERT_TRUE(after.ok());
    EXPECT_LE(*after, kFileBytes / 10);
  }
  EXPECT_FALSE(page_cache_bytes(path + ".missing").ok());
  EXPECT_FALSE(drop_page_cache(path + ".missing").ok());
}

// Reads of [0, kFileBytes) in requests of `piece` bytes (the last one shorter), waited
// for at the end; the bytes must be the file's.
void read_all(BlockReader& reader, int64_t file_bytes, int64_t piece, char* buf, const std::vector<char>& data) {
  for (int64_t off = 0; off < file_bytes; off += piece)
    ASSERT_TRUE(reader.submit({off, std::min(piece, file_bytes - off), buf + off}).ok());
  ASSERT_TRUE(reader.wait_all().ok());
  ASSERT_EQ(std::memcmp(buf, data.data(), size_t(file_bytes)), 0);
}

// Whether the page cache holds the whole file after a buffered read of it, and serves
// reads that may not wait (RWF_NOWAIT): else cache hits cannot be seen here.
bool cache_hits_observable(const std::string& path, int64_t file_bytes, std::string* why) {
  Buffer buf = aligned_buffer(file_bytes);
  auto r = BlockReader::open(path, ReaderKind::kThreads, 4, false);
  if (!r.ok() || !(*r)->submit({0, file_bytes, buf.get()}).ok() || !(*r)->wait_all().ok()) {
    *why = "buffered read failed";
    return false;
  }
  auto view = PageCacheView::open(path);
  if (!view.ok() || (*view)->resident_prefix(0, file_bytes) < file_bytes) {
    *why = "this filesystem does not report the file as resident after reading it (mincore)";
    return false;
  }
  if ((*view)->read_nowait(buf.get(), 0, kAlign) != kAlign) {
    *why = "this kernel or filesystem refuses buffered reads that may not wait (RWF_NOWAIT)";
    return false;
  }
  return true;
}

// With cache hits, a direct reader takes a resident file from the page cache (every
// byte, both backends, several request sizes); a dropped file is read direct and the
// cache does not grow; cache hits mean nothing to a buffered reader.
TEST_F(BlockReaderTest, CacheHitsReadResidentBytesFromTheCache) {
  std::string why;
  if (!cache_hits_observable(path, kFileBytes, &why)) GTEST_SKIP() << why;
  Buffer buf = aligned_buffer(kFileBytes);
  for (ReaderKind kind : kinds())
    for (int64_t piece : {kAlign, 64 * kAlign, kFileBytes}) {
      SCOPED_TRACE(std::string(reader_kind_name(kind)) + " piece " + std::to_string(piece));
      auto r = BlockReader::open(path, kind, 8, true, {}, /*cache_hits=*/true);
      ASSERT_TRUE(r.ok()) << r.status().to_string();
      std::memset(buf.get(), 0, size_t(kFileBytes));
      read_all(**r, kFileBytes, piece, buf.get(), data);
      EXPECT_EQ((*r)->bytes_read(), kFileBytes);
      EXPECT_EQ((*r)->bytes_cached(), kFileBytes);
    }
  for (ReaderKind kind : kinds()) {  // without cache hits, and buffered: nothing counted
    for (bool direct : {true, false}) {
      auto r = BlockReader::open(path, kind, 8, direct, {}, /*cache_hits=*/!direct);
      ASSERT_TRUE(r.ok());
      read_all(**r, kFileBytes, 64 * kAlign, buf.get(), data);
      EXPECT_EQ((*r)->bytes_cached(), 0) << reader_kind_name(kind) << (direct ? " direct" : " buffered");
    }
  }
  ASSERT_TRUE(drop_page_cache(path).ok());
  auto dropped = page_cache_bytes(path);
  ASSERT_TRUE(dropped.ok());
  if (*dropped > kFileBytes / 2) GTEST_SKIP() << "the page cache keeps the file after POSIX_FADV_DONTNEED";
  for (ReaderKind kind : kinds()) {
    auto r = BlockReader::open(path, kind, 8, true, {}, true);
    ASSERT_TRUE(r.ok());
    std::memset(buf.get(), 0, size_t(kFileBytes));
    read_all(**r, kFileBytes, 64 * kAlign, buf.get(), data);
    EXPECT_LE((*r)->bytes_cached(), *dropped) << reader_kind_name(kind);
    auto after = page_cache_bytes(path);
    ASSERT_TRUE(after.ok());
    EXPECT_LE(*after, *dropped + 16 * kAlign) << "cache-hit reads filled the page cache (" << reader_kind_name(kind) << ")";
  }
}

// A file partly in the page cache: the requests it holds whole are read from it, the
// others direct, every byte the file's; the cache does not grow.
TEST_F(BlockReaderTest, CacheHitsOnAPartlyResidentFile) {
  std::string why;
  if (!cache_hits_observable(path, kFileBytes, &why)) GTEST_SKIP() << why;
  constexpr int64_t kPiece = 64 * kAlign;
  Buffer buf = aligned_buffer(kFileBytes);
  for (ReaderKind kind : kinds()) {
    SCOPED_TRACE(reader_kind_name(kind));
    ASSERT_TRUE(drop_page_cache(path).ok());
    {  // every other piece into the cache, without read-ahead
      const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0);
      ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
      for (int64_t off = 0; off < kFileBytes; off += 2 * kPiece)
        ASSERT_GT(::pread(fd, buf.get(), size_t(std::min(kPiece, kFileBytes - off)), off_t(off)), 0);
      ::close(fd);
    }
    auto view = PageCacheView::open(path);
    ASSERT_TRUE(view.ok());
    int64_t expected = 0, resident = 0;
    for (int64_t off = 0; off < kFileBytes; off += kPiece) {
      const int64_t bytes = std::min(kPiece, kFileBytes - off);
      if ((*view)->resident_prefix(off, bytes) == bytes) expected += bytes;
    }
    resident = (*view)->resident_bytes();
    if (expected == 0 || expected == kFileBytes) GTEST_SKIP() << "could not make the file partly resident";
    auto r = BlockReader::open(path, kind, 8, true, {}, true);
    ASSERT_TRUE(r.ok());
    std::memset(buf.get(), 0, size_t(kFileBytes));
    read_all(**r, kFileBytes, kPiece, buf.get(), data);
    EXPECT_EQ((*r)->bytes_cached(), expected);
    EXPECT_EQ((*r)->bytes_read(), kFileBytes);
    EXPECT_LE((*view)->resident_bytes(), resident + 16 * kAlign) << "the reads filled the page cache";
  }
}

// resident_prefix counts from the offset up to the first page the cache lacks, clipped
// to the file; read_nowait stops where the cache does.
TEST_F(BlockReaderTest, PageCacheViewPrefixes) {
  std::string why;
  if (!cache_hits_observable(path, kFileBytes, &why)) GTEST_SKIP() << why;
  auto view = PageCacheView::open(path);
  ASSERT_TRUE(view.ok()) << view.status().to_string();
  EXPECT_EQ((*view)->file_bytes(), kFileBytes);
  EXPECT_EQ((*view)->resident_prefix(0, kFileBytes), kFileBytes);
  EXPECT_EQ((*view)->resident_prefix(100, 1000), 1000);
  EXPECT_EQ((*view)->resident_prefix(kFileBytes - 10, 1000), 10);  // clipped to the file
  EXPECT_EQ((*view)->resident_prefix(kFileBytes, 10), 0);
  EXPECT_EQ((*view)->resident_prefix(-1, 10), 0);
  EXPECT_EQ((*view)->resident_bytes(), kFileBytes);
  ASSERT_TRUE(drop_page_cache(path).ok());
  if ((*view)->resident_bytes() > kFileBytes / 2) GTEST_SKIP() << "the page cache keeps the file after DONTNEED";
  {  // one page in the middle back into the cache
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    ASSERT_GE(fd, 0);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM);
    char b[16];
    ASSERT_EQ(::pread(fd, b, sizeof b, off_t(40 * kAlign)), ssize_t(sizeof b));
    ::close(fd);
  }
  const int64_t held = (*view)->resident_prefix(40 * kAlign, 8 * kAlign);
  EXPECT_GE(held, kAlign);
  EXPECT_LT(held, 8 * kAlign);
  Buffer buf = aligned_buffer(8 * kAlign);
  const int64_t got = (*view)->read_nowait(buf.get(), 40 * kAlign, 8 * kAlign);
  EXPECT_GE(got, kAlign);
  EXPECT_LE(got, held);
  EXPECT_EQ(std::memcmp(buf.get(), data.data() + 40 * kAlign, size_t(got)), 0);
  EXPECT_FALSE(PageCacheView::open(path + ".missing").ok());
  EXPECT_FALSE(PageCacheView::open(test::temp_dir()).ok());  // not a regular file
}

}  // namespace
}  // namespace dlr
