// The session's reading of an engine's outputs (runtime/engine_outputs.h) over an engine
// that hands over picked rows: complete rows read as rows, a layer with an overflowed
// image downloaded whole once and read whole, a layer without rows read whole, a failed
// download returned.
#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "runtime/engine_outputs.h"
#include "tests/common/null_engine.h"

namespace dlr {
namespace {

// An engine with fixed outputs: whole outputs for every layer, picked rows for some.
class FakeEngine : public test::NullEngine {
 public:
  std::map<int, std::vector<float>> whole;      // per layer, one image
  std::map<int, std::vector<OutputRows>> rows;  // per layer: per image
  mutable std::map<int, int> downloads;         // download_output calls per layer
  Status download_status;

  const float* output(int layer, int) const override { return whole.at(layer).data(); }
  OutputRows output_rows(int layer, int image) const override {
    auto it = rows.find(layer);
    return it == rows.end() ? OutputRows{} : it->second[size_t(image)];
  }
  Status download_output(int layer) const override {
    ++downloads[layer];
    return download_status;
  }
};

LayerDesc yolo_layer(int index) {
  LayerDesc l;
  l.index = index;
  l.kind = LayerKind::kYolo;
  YoloParams p;
  p.classes = 1;
  p.mask = {0};
  p.anchors = {10, 10};
  l.params = p;
  l.out = Shape3{6, 2, 2};
  return l;
}

const int32_t kKeys[] = {3, 1};
const float kRows[12] = {};

OutputRows picked(int count, int capacity) {
  OutputRows r;
  r.count = count;
  r.capacity = capacity;
  r.entries = 6;
  r.keys = kKeys;
  r.rows = kRows;
  return r;
}

TEST(EngineOutputs, RowsWhereCompleteTheWholeOutputElsewhere) {
  FakeEngine e;
  for (int y : {4, 7, 9}) e.whole[y] = std::vector<float>(24, 0.f);
  e.rows[4] = {picked(2, 2), picked(0, 2)};  // complete for both images
  e.rows[7] = {picked(1, 2), picked(3, 2)};  // image 1 overflowed
  ASSERT_TRUE(download_overflowed_outputs(e, {4, 7, 9}, 2).ok());
  EXPECT_EQ(e.downloads.count(4), 0u);
  EXPECT_EQ(e.downloads[7], 1);
  EXPECT_EQ(e.downloads.count(9), 0u);  // not selected: downloaded with the run

  const HeadOutput a = engine_head(e, yolo_layer(4), 0);
  EXPECT_EQ(a.keys, kKeys);
  EXPECT_EQ(a.data, kRows);
  EXPECT_EQ(a.rows, 2);
  EXPECT_EQ(engine_head(e, yolo_layer(4), 1).rows, 0);
  // A layer with an overflowed image: that image whole; a complete one still as rows.
  const HeadOutput b = engine_head(e, yolo_layer(7), 1);
  EXPECT_EQ(b.keys, nullptr);
  EXPECT_EQ(b.data, e.whole[7].data());
  EXPECT_EQ(engine_head(e, yolo_layer(7), 0).keys, kKeys);
  const HeadOutput c = engine_head(e, yolo_layer(9), 0);
  EXPECT_EQ(c.keys, nullptr);
  EXPECT_EQ(c.data, e.whole[9].data());
  EXPECT_EQ(c.w, 2);
  EXPECT_EQ(c.kind, LayerKind::kYolo);
}

TEST(EngineOutputs, OnlyTheImagesAskedForCount) {
  FakeEngine e;
  e.whole[4] = std::vector<float>(24, 0.f);
  e.rows[4] = {picked(1, 2), picked(5, 2)};  // image 1 overflowed, but only image 0 ran
  ASSERT_TRUE(download_overflowed_outputs(e, {4}, 1).ok());
  EXPECT_EQ(e.downloads.count(4), 0u);
}

TEST(EngineOutputs, AFailedDownloadIsReturned) {
  FakeEngine e;
  e.whole[4] = std::vector<float>(24, 0.f);
  e.rows[4] = {picked(9, 2)};
  e.download_status = internal_error("injected: the download failed");
  const Status st = download_overflowed_outputs(e, {4}, 1);
  EXPECT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "injected: the download failed");
}

}  // namespace
}  // namespace dlr
