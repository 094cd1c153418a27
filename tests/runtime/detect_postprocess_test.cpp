// postprocess(): heads in network order, correct_boxes, NMS kind/beta of the LAST
// head (Darknet uses net.layers[net.n-1]), best-class selection.
#include <gtest/gtest.h>

#include <vector>

#include "runtime/detect/detection.h"

namespace dlr {
namespace {

YoloParams one_class_head(NmsKind kind) {
  YoloParams p;
  p.classes = 1;
  p.total = 1;
  p.mask = {0};
  p.anchors = {40, 40};
  p.nms_kind = kind;
  return p;
}

// One anchor, one class: 6 planes of lw*lh; sets one cell.
std::vector<float> head_data(int lw, int lh, int row, int col, float tx, float ty, float obj, float cls) {
  std::vector<float> d(size_t(6) * lw * lh, 0.f);
  const size_t plane = size_t(lw) * lh, loc = size_t(row) * lw + col;
  d[0 * plane + loc] = tx;
  d[1 * plane + loc] = ty;
  d[4 * plane + loc] = obj;
  d[5 * plane + loc] = cls;
  return d;
}

struct TwoHeads {
  // Head 0 (2x2): box (0.5, 0.5, 0.4, 0.4), prob .81; head 1 (1x1): box (0.62, 0.5, 0.4, 0.4), prob .72.
  // IoU 0.538 > .45, DIoU^0.6 0.408 <= .45.
  std::vector<float> d0 = head_data(2, 2, 0, 0, 1.0f, 1.0f, 0.9f, 0.9f);
  std::vector<float> d1 = head_data(1, 1, 0, 0, 0.62f, 0.5f, 0.8f, 0.9f);
  YoloParams p0, p1;
  TwoHeads(NmsKind first, NmsKind last) : p0(one_class_head(first)), p1(one_class_head(last)) {}
  std::vector<HeadOutput> heads() const {
    HeadOutput h0, h1;
    h0.params = &p0;
    h0.data = d0.data();
    h0.w = h0.h = 2;
    h1.params = &p1;
    h1.data = d1.data();
    h1.w = h1.h = 1;
    return {h0, h1};
  }
};

TEST(DetectPostprocess, NmsKindComesFromTheLastHead) {
  PostprocessOptions opt;
  {
    TwoHeads t(NmsKind::kDefault, NmsKind::kGreedy);  // last greedy: DIoU keeps both
    const std::vector<Detection> d = postprocess(t.heads(), 100, 100, 100, 100, opt);
    ASSERT_EQ(d.size(), 2u);
    EXPECT_FLOAT_EQ(d[0].box.x, 0.5f);  // left edge order
    EXPECT_EQ(d[0].prob, 0.9f * 0.9f);
    EXPECT_FLOAT_EQ(d[1].box.x, 0.62f);
    EXPECT_EQ(d[1].prob, 0.8f * 0.9f);
  }
  {
    TwoHeads t(NmsKind::kGreedy, NmsKind::kDefault);  // last default: IoU suppresses
    const std::vector<Detection> d = postprocess(t.heads(), 100, 100, 100, 100, opt);
    ASSERT_EQ(d.size(), 1u);
    EXPECT_FLOAT_EQ(d[0].box.x, 0.5f);
  }
  {
    TwoHeads t(NmsKind::kDefault, NmsKind::kDiou);  // last diounms, beta from the last head
    t.p1.beta_nms = 1.0f;
    EXPECT_EQ(postprocess(t.heads(), 100, 100, 100, 100, opt).size(), 1u);
    t.p1.beta_nms = 0.6f;
    EXPECT_EQ(postprocess(t.heads(), 100, 100, 100, 100, opt).size(), 2u);
  }
}

TEST(DetectPostprocess, LetterboxCorrectsBoxes) {
  TwoHeads t(NmsKind::kGreedy, NmsKind::kGreedy);
  PostprocessOptions opt;
  opt.letterbox = true;
  // 200x100 image in a 100x100 net: content 100x50 at y offset 25.
  // NMS runs on the corrected (image-relative) boxes: the boxes become 0.4 x 0.8, the
  // enclosing diagonal grows, the DIoU penalty shrinks (0.538 - 0.083 = 0.455 > .45) and the
  // second box is now suppressed, as in Darknet (correct_yolo_boxes precedes NMS).
  const std::vector<Detection> d = postprocess(t.heads(), 100, 100, 200, 100, opt);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_FLOAT_EQ(d[0].box.x, 0.5f);
  EXPECT_FLOAT_EQ(d[0].box.y, 0.5f);
  EXPECT_FLOAT_EQ(d[0].box.w, 0.4f);
  EXPECT_FLOAT_EQ(d[0].box.h, 0.8f);
  const std::vector<std::string> names = {"thing"};
  EXPECT_EQ(format_darknet(d, names, 200, 100, true),
            "thing: 81%\t(left_x:   60   top_y:   10   width:   80   height:   80)\n");
}

TEST(DetectPostprocess, ThresholdAndNoHeads) {
  TwoHeads t(NmsKind::kGreedy, NmsKind::kGreedy);
  PostprocessOptions opt;
  opt.thresh = 0.75f;  // second candidate: objectness 0.8 passes, prob 0.72 does not
  const std::vector<Detection> d = postprocess(t.heads(), 100, 100, 100, 100, opt);
  ASSERT_EQ(d.size(), 1u);
  EXPECT_EQ(d[0].prob, 0.9f * 0.9f);
  opt.thresh = 0.9f;  // objectness == thresh: no candidate at all
  EXPECT_TRUE(postprocess(t.heads(), 100, 100, 100, 100, opt).empty());
  EXPECT_TRUE(postprocess({}, 100, 100, 100, 100, opt).empty());
}

}  // namespace
}  // namespace dlr
