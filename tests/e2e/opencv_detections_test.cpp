// Golden detections of the real yolo-fastest-1.1 weights on all six shared images,
// against OpenCV's own end-to-end pipeline: cv::dnn::DetectionModel reads the same
// cfg and weights and does its own pre-processing, yolo decode, box conversion and
// per-class NMS. dlrun's detections (Session::detect, Darknet semantics) must match
// OpenCV's both ways: same class, overlapping boxes, close probabilities.
//
// Two pipelines per image:
//  - same input: the image first resized to the network size (320x320) with
//    cv::resize, so that neither side resizes (dlrun's Darknet resize of an equal
//    size is a copy, blobFromImage skips it) and both networks see the same pixels.
//    What differs is only the decode / box / NMS code and OpenCV's integer boxes.
//  - full: the original image; dlrun resizes like Darknet (align-corners bilinear),
//    OpenCV with cv::resize (half-pixel bilinear), so the network inputs differ and
//    the probabilities move (tolerances below are measured).
// OpenCV 4.6 normalises batch norm with eps 1e-6 (Darknet 1e-5); OpenCV is given a
// copy of the weights with every variance raised by 9e-6 (as opencv_fidelity_test).
// DetectionModel keeps one class per box (the best); dlrun reports the best class of
// each box too (Detection::class_id), and its other classes are not compared.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "loaders/network_desc.h"
#include "loaders/weights_file.h"
#include "runtime/session.h"
#include "tests/common/test_paths.h"
#include "tools/common/tool_support.h"

#ifdef DLR_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#include <opencv2/imgproc.hpp>
#endif

namespace dlr {
namespace {

#ifdef DLR_HAVE_OPENCV

constexpr float kThresh = 0.25f;
constexpr float kNms = 0.45f;
constexpr int kSize = 320;  // yolo-fastest-1.1's network size

// A detection in pixels of the frame it was computed on.
struct PixelDet {
  int cls = -1;
  float prob = 0;
  double left = 0, top = 0, width = 0, height = 0;
  std::vector<std::pair<int, float>> others;  // dlrun: the box's other classes above the threshold
};

double iou(const PixelDet& a, const PixelDet& b) {
  const double x0 = std::max(a.left, b.left), y0 = std::max(a.top, b.top);
  const double x1 = std::min(a.left + a.width, b.left + b.width), y1 = std::min(a.top + a.height, b.top + b.height);
  const double inter = std::max(0.0, x1 - x0) * std::max(0.0, y1 - y0);
  const double uni = a.width * a.height + b.width * b.height - inter;
  return uni > 0 ? inter / uni : 0.0;
}

std::string describe(const std::vector<PixelDet>& v) {
  std::string s;
  char line[160];
  for (const PixelDet& d : v) {
    std::snprintf(line, sizeof line, "    class %2d p %.4f box %.1f,%.1f %.1fx%.1f\n", d.cls, d.prob, d.left, d.top,
                  d.width, d.height);
    s += line;
  }
  return s;
}

// The weights with every BN variance raised by 1e-5 - 1e-6, in the scratch directory.
std::string weights_for_opencv(const std::string& cfg, const std::string& weights) {
  auto net = parse_network_cfg(cfg);
  if (!net.ok()) return "";
  auto wf = WeightsFile::open(weights, *net);
  if (!wf.ok()) return "";
  std::ifstream in(weights, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const LayerBlobs& lb : wf->index().layers) {
    const BlobRef* var = lb.find(BlobRole::kVariance);
    if (!var) continue;
    for (uint64_t i = 0; i < var->count; ++i) {
      float v;
      std::memcpy(&v, bytes.data() + var->offset + 4 * i, 4);
      v += 9e-6f;
      std::memcpy(bytes.data() + var->offset + 4 * i, &v, 4);
    }
  }
  const std::string out = test::temp_dir() + "/yolo-fastest-1.1.opencv-eps.weights";
  std::ofstream f(out, std::ios::binary);
  f.write(bytes.data(), std::streamsize(bytes.size()));
  return f ? out : "";
}

std::vector<PixelDet> opencv_detect(cv::dnn::DetectionModel& model, const cv::Mat& bgr) {
  std::vector<int> classes;
  std::vector<float> confidences;
  std::vector<cv::Rect> boxes;
  model.detect(bgr, classes, confidences, boxes, kThresh, kNms);
  std::vector<PixelDet> out;
  for (size_t i = 0; i < classes.size(); ++i)
    out.push_back({classes[i], confidences[i], double(boxes[i].x), double(boxes[i].y), double(boxes[i].width),
                   double(boxes[i].height), {}});
  return out;
}

std::vector<PixelDet> dlrun_detect(Session& s, const tools::LoadedImage& img) {
  auto dets = s.detect(img.view());
  EXPECT_TRUE(dets.ok()) << dets.status().to_string();
  std::vector<PixelDet> out;
  if (!dets.ok()) return out;
  for (const Detection& d : *dets) {
    const double w = double(d.box.w) * img.width, h = double(d.box.h) * img.height;
    PixelDet p{d.class_id, d.prob, double(d.box.x) * img.width - w / 2, double(d.box.y) * img.height - h / 2, w, h,
               {}};
    for (const Detection::Extra& e : d.others) p.others.emplace_back(e.class_id, e.prob);
    out.push_back(p);
  }
  return out;
}

struct Tolerance {
  double px;         // box edges (clipped to the frame, as OpenCV clips) agree within px +
  double frac;       // frac * the larger box side
  float max_dprob;   // and probabilities within this
  float edge;        // detections within this of the threshold may be on one side only
};

// The box clipped to the frame the way DetectionModel clips its boxes: the left/top
// edge moved inside the frame, the size kept unless it runs past the far edge.
PixelDet clipped(PixelDet d, int fw, int fh) {
  d.left = std::clamp(d.left, 0.0, double(fw - 1));
  d.top = std::clamp(d.top, 0.0, double(fh - 1));
  d.width = std::clamp(d.width, 1.0, double(fw) - d.left);
  d.height = std::clamp(d.height, 1.0, double(fh) - d.top);
  return d;
}

// The probability of class k on a dlrun box (best class or one of the others), else 0.
float class_prob(const PixelDet& d, int k) {
  if (d.cls == k) return d.prob;
  for (const auto& [c, p] : d.others)
    if (c == k) return p;
  return 0.f;
}

double edge_diff(const PixelDet& a, const PixelDet& b) {
  return std::max({std::fabs(a.left - b.left), std::fabs(a.top - b.top),
                   std::fabs(a.left + a.width - b.left - b.width), std::fabs(a.top + a.height - b.top - b.height)});
}

// The two NMS semantics differ: Darknet (dlrun) runs per-class NMS over every class of
// every box, yolo-fastest with greedynms = DIoU (beta 0.6), and then reports each box's
// best surviving class; DetectionModel takes each box's best class first and runs plain
// IoU NMS per class. So a detection may legitimately be on one side only, but only
// when the other side has a stronger detection overlapping it by IoU > nms:
//  - dlrun only: a stronger OpenCV detection (any class: OpenCV's argmax may differ)
//    suppressed it in OpenCV's NMS (DIoU kept it in Darknet's);
//  - OpenCV only: a dlrun box holding that class with a higher probability (as best or
//    other class) suppressed it in Darknet's per-class NMS, while OpenCV never
//    compared the two (their best classes differ).
struct MatchStats {
  double worst_dprob = 0, worst_edge = 0;
  int matched = 0, nms_explained = 0;
};

// Every detection of `a` above kThresh + edge has a partner in `b` (same class, edges
// and probability within the tolerance); when `a` is dlrun's list, an unmatched
// detection is accepted if OpenCV's NMS explains it (above). fw, fh: the frame.
void expect_matched(const std::vector<PixelDet>& a, const std::vector<PixelDet>& b, const Tolerance& t, int fw,
                    int fh, bool a_is_dlrun, const std::string& what, MatchStats* st) {
  for (const PixelDet& raw : a) {
    if (raw.prob <= kThresh + t.edge) continue;
    const PixelDet d = clipped(raw, fw, fh);
    const PixelDet* best = nullptr;
    for (const PixelDet& e : b)
      if (e.cls == d.cls && (!best || edge_diff(clipped(e, fw, fh), d) < edge_diff(clipped(*best, fw, fh), d)))
        best = &e;
    const double limit = t.px + t.frac * std::max(d.width, d.height);
    if (best != nullptr && edge_diff(clipped(*best, fw, fh), d) <= limit) {
      ++st->matched;
      st->worst_edge = std::max(st->worst_edge, edge_diff(clipped(*best, fw, fh), d));
      st->worst_dprob = std::max(st->worst_dprob, double(std::fabs(best->prob - d.prob)));
      EXPECT_LE(std::fabs(best->prob - d.prob), t.max_dprob) << what << ": class " << d.cls << " p " << d.prob;
      continue;
    }
    bool explained = false;
    for (const PixelDet& o : b) {
      const float stronger = a_is_dlrun ? o.prob : class_prob(o, d.cls);
      explained = explained || (stronger > d.prob && iou(clipped(o, fw, fh), d) > kNms);
    }
    if (explained) {
      ++st->nms_explained;
      continue;
    }
    ADD_FAILURE() << what << ": class " << d.cls << " p " << d.prob << " at " << d.left << "," << d.top << " "
                  << d.width << "x" << d.height << " has no partner (nearest same-class edge difference "
                  << (best ? edge_diff(clipped(*best, fw, fh), d) : -1.0) << " px, limit " << limit << ")";
  }
}

void compare(const std::vector<PixelDet>& ours, const std::vector<PixelDet>& theirs, const Tolerance& t, int fw,
             int fh, const std::string& what) {
  SCOPED_TRACE(what + "\n  dlrun:\n" + describe(ours) + "  OpenCV:\n" + describe(theirs));
  ASSERT_FALSE(ours.empty());
  ASSERT_FALSE(theirs.empty());
  MatchStats to, from;
  expect_matched(ours, theirs, t, fw, fh, true, what + " dlrun -> OpenCV", &to);
  expect_matched(theirs, ours, t, fw, fh, false, what + " OpenCV -> dlrun", &from);
  std::printf("%s: %zu dlrun, %zu OpenCV detections; matched %d / %d; one side only, explained by the NMS "
              "semantics: %d dlrun, %d OpenCV; worst |dprob| %.3g, worst edge %.2f px\n",
              what.c_str(), ours.size(), theirs.size(), to.matched, from.matched, to.nms_explained, from.nms_explained,
              std::max(to.worst_dprob, from.worst_dprob), std::max(to.worst_edge, from.worst_edge));
}

class OpenCvDetections : public ::testing::TestWithParam<const char*> {};

TEST_P(OpenCvDetections, YoloFastestMatchesDetectionModel) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(image, std::string("images/") + GetParam());
  auto img = tools::load_image(image);
  ASSERT_TRUE(img.ok()) << img.status().to_string();
  const std::string cv_weights = weights_for_opencv(cfg, weights);
  ASSERT_FALSE(cv_weights.empty()) << "could not write the eps-adjusted weights";

  SessionOptions so;
  so.thresh = kThresh;
  so.nms = kNms;
  auto s = Session::open(cfg, weights, so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  ASSERT_EQ((*s)->network().net.width, kSize);
  ASSERT_FALSE((*s)->network().net.letter_box) << "DetectionModel stretches; the cfg must not letterbox";

  cv::dnn::DetectionModel model(cv::dnn::readNetFromDarknet(cfg, cv_weights));
  model.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  model.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  model.setInputParams(1.0 / 255.0, cv::Size(kSize, kSize), cv::Scalar(), /*swapRB=*/true, /*crop=*/false);
  model.setNmsAcrossClasses(false);

  // Same input: both see the same 320x320 pixels.
  {
    const cv::Mat original(img->height, img->width, CV_8UC3, img->pixels.data());
    cv::Mat small;
    cv::resize(original, small, cv::Size(kSize, kSize), 0, 0, cv::INTER_AREA);
    tools::LoadedImage same;
    same.width = same.height = kSize;
    same.pixels.assign(small.data, small.data + size_t(kSize) * kSize * 3);
    const std::vector<PixelDet> ours = dlrun_detect(**s, same);
    const std::vector<PixelDet> theirs = opencv_detect(model, small);
    // OpenCV truncates box coordinates to whole pixels of the 320x320 frame (its
    // centre - width/2 arithmetic in int): edges within 2 px (measured on the six
    // images: 42 matched detections, worst edge 1.31 px). Probabilities: the same
    // network on the same input (worst difference measured 2.0e-6; bound 1e-4).
    compare(ours, theirs, Tolerance{2.0, 0.0, 1e-4f, 1e-3f}, kSize, kSize, std::string(GetParam()) + " same input");
  }
  // Full pipeline on the original image.
  {
    const cv::Mat original(img->height, img->width, CV_8UC3, img->pixels.data());
    const std::vector<PixelDet> ours = dlrun_detect(**s, *img);
    const std::vector<PixelDet> theirs = opencv_detect(model, original);
    // Different resizes feed the networks different inputs: measured on the six
    // images, probabilities move by up to 0.075 (kite) and box edges by up to 11.9 px
    // (kite, on a 114 px box; 3.9 px elsewhere); bounds: |dprob| <= 0.15, edges within
    // 3 px + 10 % of the box's larger side, and a detection within 0.1 of the threshold
    // may appear on one side only.
    compare(ours, theirs, Tolerance{3.0, 0.1, 0.15f, 0.1f}, img->width, img->height,
            std::string(GetParam()) + " full");
  }
}

INSTANTIATE_TEST_SUITE_P(SharedImages, OpenCvDetections,
                         ::testing::Values("dog.jpg", "eagle.jpg", "giraffe.jpg", "horses.jpg", "kite.jpg",
                                           "person.jpg"),
                         [](const auto& info) {
                           std::string n = info.param;
                           return n.substr(0, n.find('.'));
                         });

#else

TEST(OpenCvDetections, NeedsOpenCv) { GTEST_SKIP() << "built without OpenCV (the reference implementation)"; }

#endif

}  // namespace
}  // namespace dlr
