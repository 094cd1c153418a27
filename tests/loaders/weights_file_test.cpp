// WeightsFile::open: header variants, exact size checks and their messages, data()/read(), RAII.
#include <gtest/gtest.h>

#include <utility>

#include "loaders/synthetic_weights.h"
#include "loaders/weights_file.h"
#include "tests/loaders/weights_test_util.h"

namespace dlr {
namespace {

using test::tmp_path;

::testing::AssertionResult contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << part << "'";
}

// Writes the small net's payload with `header` and returns the path.
std::string write_small(const std::string& name, const WeightsHeader& header) {
  const std::string path = tmp_path(name);
  Status st = write_weights_file(path, header, test::small_net_floats());
  EXPECT_TRUE(st.ok()) << st.to_string();
  return path;
}

TEST(WeightsFile, Opens20ByteHeader) {
  WeightsHeader h;
  h.seen = 0x123456789ull;  // needs the 64-bit field
  const std::string path = write_small("h20.weights", h);
  const std::string bytes = test::read_bytes(path);
  ASSERT_EQ(bytes.size(), 1204u);
  EXPECT_EQ(bytes.substr(0, 12), std::string("\0\0\0\0\2\0\0\0\5\0\0\0", 12));
  EXPECT_EQ(bytes.substr(12, 8), std::string("\x89\x67\x45\x23\x01\0\0\0", 8));

  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->path(), path);
  EXPECT_EQ(f->file_bytes(), 1204u);
  const WeightsHeader& got = f->index().header;
  EXPECT_EQ(got.major, 0);
  EXPECT_EQ(got.minor, 2);
  EXPECT_EQ(got.revision, 5);
  EXPECT_EQ(got.seen, 0x123456789ull);
  EXPECT_EQ(f->index().payload_end, 1204u);
}

TEST(WeightsFile, Opens16ByteHeader) {
  WeightsHeader h;
  h.major = 0;
  h.minor = 1;
  h.revision = 0;
  h.seen = 4000000000u;  // full 32-bit range, read as unsigned
  const std::string path = write_small("h16.weights", h);
  ASSERT_EQ(test::read_bytes(path).size(), 1200u);
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->index().header.minor, 1);
  EXPECT_EQ(f->index().header.header_bytes(), 16u);
  EXPECT_EQ(f->index().header.seen, 4000000000u);
  const BlobRef* w = f->index().layers[5].find(BlobRole::kWeights);
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->offset, 1104u);
  EXPECT_EQ(f->data(*w)[23], test::small_net_floats()[3].back());  // the last payload float
}

TEST(WeightsFile, DataAndReadSeeThePayload) {
  const std::string path = write_small("data.weights", WeightsHeader{});
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  const auto floats = test::small_net_floats();
  // layer 3 is the third weighted layer: bias = payload floats [142, 146)
  const BlobRef* bias = f->index().layers[3].find(BlobRole::kBias);
  ASSERT_NE(bias, nullptr);
  const float* p = f->data(*bias);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(p[i], floats[2][i]);
  const BlobRef* w = f->index().layers[3].find(BlobRole::kWeights);
  std::vector<float> copy(w->count);
  ASSERT_TRUE(f->read(*w, copy.data()).ok());
  for (size_t i = 0; i < copy.size(); ++i) EXPECT_EQ(copy[i], floats[2][16 + i]);
  // A blob outside the file is refused by read().
  BlobRef bad{1200, 2, BlobRole::kBias};
  Status st = f->read(bad, copy.data());
  EXPECT_EQ(st.code(), StatusCode::kInvalidArgument);
}

TEST(WeightsFile, MoveKeepsTheMapping) {
  const std::string path = write_small("move.weights", WeightsHeader{});
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  WeightsFile a = std::move(f).value();
  WeightsFile b = std::move(a);
  const BlobRef* bias = b.index().layers[0].find(BlobRole::kBias);
  EXPECT_FLOAT_EQ(b.data(*bias)[0], 0.001f);
  Expected<WeightsFile> g = WeightsFile::open(path, test::small_net());
  ASSERT_TRUE(g.ok());
  b = std::move(g).value();  // releases the first mapping (and the index `bias` pointed into)
  bias = b.index().layers[0].find(BlobRole::kBias);
  EXPECT_FLOAT_EQ(b.data(*bias)[1], 0.002f);
  EXPECT_EQ(b.file_bytes(), 1204u);
}

TEST(WeightsFile, TruncatedByOneByte) {
  const std::string good = write_small("trunc_src.weights", WeightsHeader{});
  const std::string path = tmp_path("trunc.weights");
  std::string bytes = test::read_bytes(good);
  bytes.pop_back();
  test::write_bytes(path, bytes);
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  const std::string& m = f.status().message();
  EXPECT_EQ(f.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(contains(m, path + ": file ends inside layer 5 (conv, cfg line 50)"));
  EXPECT_TRUE(contains(m, "layer needs bytes [1084, 1204) but the file has 1203 bytes"));
  EXPECT_TRUE(contains(m, "(expected 1204 bytes in total)"));
  EXPECT_EQ(m.find('\n'), std::string::npos);
}

TEST(WeightsFile, TruncatedInsideAnEarlierLayer) {
  const std::string good = write_small("trunc2_src.weights", WeightsHeader{});
  const std::string path = tmp_path("trunc2.weights");
  test::write_bytes(path, test::read_bytes(good).substr(0, 600));
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(contains(f.status().message(), "file ends inside layer 3 (conv, cfg line 40): layer needs bytes [588, 1084) "
                                             "but the file has 600 bytes (expected 1204 bytes in total)"));
}

TEST(WeightsFile, TruncatedAtALayerBoundary) {
  const std::string good = write_small("trunc3_src.weights", WeightsHeader{});
  const std::string path = tmp_path("trunc3.weights");
  test::write_bytes(path, test::read_bytes(good).substr(0, 588));
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(contains(f.status().message(), "file ends before layer 3 (conv, cfg line 40)"));
  EXPECT_TRUE(contains(f.status().message(), "[588, 1084) but the file has 588 bytes"));
}

TEST(WeightsFile, FourExtraBytes) {
  const std::string good = write_small("long_src.weights", WeightsHeader{});
  const std::string path = tmp_path("long.weights");
  test::write_bytes(path, test::read_bytes(good) + std::string(4, '\0'));
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kParseError);
  EXPECT_EQ(f.status().message(), path + ": 4 bytes after the last layer; expected 1204 bytes for this cfg, "
                                         "file has 1208: weights for another cfg?");
}

TEST(WeightsFile, MissingFile) {
  const std::string path = tmp_path("does_not_exist.weights");
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kIoError);
  EXPECT_TRUE(contains(f.status().message(), path));
  EXPECT_TRUE(contains(f.status().message(), "No such file or directory"));
}

TEST(WeightsFile, DirectoryIsNotAWeightsFile) {
  Expected<WeightsFile> f = WeightsFile::open(test::temp_dir(), test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kIoError);
}

TEST(WeightsFile, ShorterThanTheHeader) {
  const std::string path = tmp_path("tiny.weights");
  test::write_bytes(path, std::string("\0\0\0\0\2\0\0", 7));
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_EQ(f.status().code(), StatusCode::kParseError);
  EXPECT_TRUE(contains(f.status().message(), path + ": file has 7 bytes, shorter than the 12-byte"));

  // A 0.2 version needs 20 header bytes; 16 are present.
  test::write_bytes(path, std::string("\0\0\0\0\2\0\0\0\5\0\0\0\1\0\0\0", 16));
  f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(contains(f.status().message(), "file has 16 bytes, shorter than the 20-byte header of version 0.2.5"));

  test::write_bytes(path, "");
  f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(contains(f.status().message(), "file has 0 bytes"));
}

TEST(WeightsFile, HeaderOnlyFileForANetWithoutWeights) {
  NetworkDesc net;  // no layers: the file is just the header
  const std::string path = tmp_path("header_only.weights");
  ASSERT_TRUE(write_weights_file(path, WeightsHeader{}, {}).ok());
  Expected<WeightsFile> f = WeightsFile::open(path, net);
  ASSERT_TRUE(f.ok()) << f.status().to_string();
  EXPECT_EQ(f->file_bytes(), 20u);
}

TEST(WeightsFile, ImplausibleVersionIsRejected) {
  const std::string path = tmp_path("garbage.weights");
  test::write_bytes(path, std::string(1204, '\xff'));
  Expected<WeightsFile> f = WeightsFile::open(path, test::small_net());
  ASSERT_FALSE(f.ok());
  EXPECT_TRUE(contains(f.status().message(), "not a Darknet .weights file?"));
}

}  // namespace
}  // namespace dlr
