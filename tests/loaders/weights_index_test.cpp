// build_weights_index: offsets and sizes for a hand-made network, both header variants.
#include <gtest/gtest.h>

#include "loaders/weights_file.h"
#include "tests/loaders/weights_test_util.h"

namespace dlr {
namespace {

struct Expect {
  BlobRole role;
  uint64_t offset;  // for the 20-byte header
  uint64_t count;
};

void check_layer(const LayerBlobs& lb, const std::vector<Expect>& expect, uint64_t shift) {
  ASSERT_EQ(lb.blobs.size(), expect.size()) << "layer " << lb.layer;
  for (size_t i = 0; i < expect.size(); ++i) {
    EXPECT_EQ(lb.blobs[i].role, expect[i].role) << "layer " << lb.layer << " blob " << i;
    EXPECT_EQ(lb.blobs[i].offset, expect[i].offset - shift) << "layer " << lb.layer << " blob " << i;
    EXPECT_EQ(lb.blobs[i].count, expect[i].count) << "layer " << lb.layer << " blob " << i;
  }
}

void check_small_net_index(const WeightsHeader& header, uint64_t shift) {
  const NetworkDesc net = test::small_net();
  const WeightsIndex index = build_weights_index(net, header);
  EXPECT_EQ(index.header.major, header.major);
  EXPECT_EQ(index.header.minor, header.minor);
  ASSERT_EQ(index.layers.size(), net.layers.size());
  for (size_t i = 0; i < index.layers.size(); ++i) EXPECT_EQ(index.layers[i].layer, static_cast<int>(i));
  using R = BlobRole;
  check_layer(index.layers[0], {{R::kBias, 20, 4}, {R::kScale, 36, 4}, {R::kMean, 52, 4}, {R::kVariance, 68, 4},
                                {R::kWeights, 84, 108}},
              shift);
  check_layer(index.layers[1], {{R::kBias, 516, 6}, {R::kWeights, 540, 12}}, shift);
  check_layer(index.layers[2], {}, shift);
  check_layer(index.layers[3], {{R::kBias, 588, 4}, {R::kScale, 604, 4}, {R::kMean, 620, 4},
                                {R::kVariance, 636, 4}, {R::kWeights, 652, 108}},
              shift);
  check_layer(index.layers[4], {}, shift);
  check_layer(index.layers[5], {{R::kBias, 1084, 6}, {R::kWeights, 1108, 24}}, shift);
  check_layer(index.layers[6], {}, shift);
  EXPECT_EQ(index.payload_end, 1204 - shift);
  EXPECT_EQ(index.payload_end, header.header_bytes() + 4 * test::kSmallNetPayloadFloats);
}

TEST(WeightsIndex, SmallNetWith20ByteHeader) {
  WeightsHeader h;  // 0.2.5
  EXPECT_EQ(h.header_bytes(), 20u);
  check_small_net_index(h, 0);
}

TEST(WeightsIndex, SmallNetWith16ByteHeader) {
  WeightsHeader h;
  h.major = 0;
  h.minor = 1;
  h.revision = 0;
  EXPECT_EQ(h.header_bytes(), 16u);
  check_small_net_index(h, 4);
}

TEST(WeightsIndex, HeaderSizeRule) {
  WeightsHeader h;
  h.major = 1;
  h.minor = 0;  // 1*10+0 >= 2: 64-bit seen
  EXPECT_EQ(h.header_bytes(), 20u);
  h.major = 0;
  h.minor = 2;
  EXPECT_EQ(h.header_bytes(), 20u);
  h.minor = 0;
  EXPECT_EQ(h.header_bytes(), 16u);
}

TEST(WeightsIndex, LayerBlobsHelpers) {
  const WeightsIndex index = build_weights_index(test::small_net(), WeightsHeader{});
  EXPECT_EQ(index.layers[0].bytes(), 4u * (16 + 108));
  EXPECT_EQ(index.layers[1].bytes(), 4u * (6 + 12));
  EXPECT_EQ(index.layers[2].bytes(), 0u);
  ASSERT_NE(index.layers[0].find(BlobRole::kVariance), nullptr);
  EXPECT_EQ(index.layers[0].find(BlobRole::kVariance)->offset, 68u);
  EXPECT_EQ(index.layers[1].find(BlobRole::kScale), nullptr);
  EXPECT_EQ(index.layers[2].find(BlobRole::kBias), nullptr);
  EXPECT_STREQ(blob_role_name(BlobRole::kBias), "bias");
  EXPECT_STREQ(blob_role_name(BlobRole::kScale), "scale");
  EXPECT_STREQ(blob_role_name(BlobRole::kMean), "mean");
  EXPECT_STREQ(blob_role_name(BlobRole::kVariance), "variance");
  EXPECT_STREQ(blob_role_name(BlobRole::kWeights), "weights");
}

TEST(WeightsIndex, EmptyNetworkIsHeaderOnly) {
  NetworkDesc net;
  const WeightsIndex index = build_weights_index(net, WeightsHeader{});
  EXPECT_TRUE(index.layers.empty());
  EXPECT_EQ(index.payload_end, 20u);
}

}  // namespace
}  // namespace dlr
