// Independent forward + decode reference for the new_coords / scale_x_y = 2 models
// (yolov4-csp, yolov4x-mish, yolov7-tiny): OpenCV 4.6's DNN module reads each cfg
// with its synthetic weights (it implements new_coords and scale_x_y in its Region
// layer) and runs the same input tensor. Every row of every yolo head -- box x, y,
// w, h relative to the network input and the class probabilities OpenCV keeps
// (objectness * class > 0.2, its threshold for [yolo]; below it OpenCV stores 0 and
// dlrun's value must be <= 0.2) -- must match dlrun's
// CPU engine output decoded by yolo_candidates() (thresh -1: every cell and anchor,
// cells row-major and anchors inner, which is OpenCV's row order too).
// BN eps: OpenCV 4.6 uses 1e-6 where Darknet uses 1e-5; OpenCV gets a copy of the
// weights with every variance raised by 9e-6 (as in opencv_fidelity_test.cpp).
// Run at 192x192 (the cfgs say 512/640/416) to keep the CPU time short (heads of
// 24, 12 and 6 cells); the layer graph is the same.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "loaders/weights_file.h"
#include "runtime/cpu/cpu_engine.h"
#include "runtime/detect/detection.h"
#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"

#ifdef DLR_HAVE_OPENCV
#include <opencv2/core.hpp>
#include <opencv2/dnn.hpp>
#endif

namespace dlr {
namespace {

#ifdef DLR_HAVE_OPENCV

constexpr int kSize = 192;
constexpr float kOpenCvYoloThresh = 0.2f;  // OpenCV's Darknet importer: [yolo] probabilities <= 0.2 become 0
// Tolerances (absolute; boxes are fractions of the network input, probabilities in
// [0,1]; box errors relative to max(1, |value|), as w and h reach 2). Measured
// (printed per head) at 192: box <= 5.7e-4 relative on yolov4x-mish's stride-32
// head, 2.2e-4 on yolov4-csp's, 9e-5 on yolov7-tiny's, <= 7e-5 on the stride-8 heads
// (at 320: 9.7e-4 on the mish head); kept probabilities <= 1.0e-4 (at 320: 2.0e-4;
// yolov4x-mish's stride-32 head keeps none at 192, the other heads several hundred
// to thousands) (the forward passes differ from OpenCV's by float
// summation order only; synthetic weights are built to amplify input differences,
// and the deep mish stack most). Bounds: box 4e-3, prob 1e-3. A
// decode error (grid offset, scale_x_y, the (2s)^2 anchor scaling) moves a box by
// at least a fraction of a cell, 1/40 of the input here.
// OpenCV's column 4 (objectness) is not compared: for new_coords heads it holds a
// value that is not Darknet's objectness (measured: 0.10 where the product of
// objectness and class agrees with dlrun's to 6e-5); the products are compared.
constexpr double kBoxTol = 4e-3;
constexpr double kProbTol = 1e-3;

// The weights with every BN variance raised by 1e-5 - 1e-6, in memory (no copy of
// up to 400 MB on disk): OpenCV reads them from the buffer.
std::vector<uchar> eps_weights(const std::string& weights, const NetworkDesc& net) {
  auto wf = WeightsFile::open(weights, net);
  if (!wf.ok()) return {};
  std::ifstream in(weights, std::ios::binary);
  std::vector<uchar> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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
  return bytes;
}

void compare_decode(const std::string& rel) {
  const std::string cfg = test::required_shared_file(rel);
  ASSERT_FALSE(cfg.empty());
  const std::string weights = test::synthetic_weights(cfg);
  ASSERT_FALSE(weights.empty());
  SessionOptions so;
  so.width = so.height = kSize;
  auto s = Session::open(cfg, weights, so);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  const NetworkDesc& net = (*s)->network();
  const std::vector<int> yolos = net.yolo_layers();
  ASSERT_FALSE(yolos.empty());
  for (int y : yolos) {  // what this test is about
    EXPECT_TRUE(net.layers[size_t(y)].yolo().new_coords) << rel << " layer " << y;
    EXPECT_EQ(net.layers[size_t(y)].yolo().scale_x_y, 2.0f) << rel << " layer " << y;
  }
  // Input: dog.jpg is not needed; a seeded random image in [0,1).
  const std::vector<float> input = test::random_input(1, 3, kSize, kSize, 11);
  Engine& e = (*s)->engine();
  ASSERT_TRUE(e.set_input(input.data(), 1).ok());
  ASSERT_TRUE(e.run().ok());

  const std::vector<uchar> ref_weights = eps_weights(weights, net);
  ASSERT_FALSE(ref_weights.empty()) << "could not read " << weights;
  std::ifstream cfg_in(cfg, std::ios::binary);
  const std::vector<uchar> cfg_bytes((std::istreambuf_iterator<char>(cfg_in)), std::istreambuf_iterator<char>());
  cv::dnn::Net ref = cv::dnn::readNetFromDarknet(cfg_bytes, ref_weights);
  ref.setPreferableBackend(cv::dnn::DNN_BACKEND_OPENCV);
  ref.setPreferableTarget(cv::dnn::DNN_TARGET_CPU);
  const int dims[4] = {1, 3, kSize, kSize};
  ref.setInput(cv::Mat(4, dims, CV_32F, const_cast<float*>(input.data())));
  std::vector<std::string> names;
  for (int y : yolos) names.push_back("yolo_" + std::to_string(y));
  std::vector<cv::Mat> outs;
  ref.forward(outs, names);
  ASSERT_EQ(outs.size(), yolos.size());

  int64_t model_probs = 0;
  for (size_t h = 0; h < yolos.size(); ++h) {
    const LayerDesc& l = net.layers[size_t(yolos[h])];
    const YoloParams& p = l.yolo();
    std::vector<Candidate> cands;
    yolo_candidates(p, e.output(yolos[h], 0), l.out.w, l.out.h, kSize, kSize, -1.f, &cands);
    const cv::Mat& m = outs[h];
    const int classes = p.classes;
    ASSERT_EQ(m.cols, 5 + classes) << names[h];
    ASSERT_EQ(size_t(m.rows), cands.size()) << names[h] << ": OpenCV rows vs dlrun cells x anchors";
    double box_err = 0, prob_err = 0, below = 0;
    int64_t probs_compared = 0, bad = 0;
    for (int r = 0; r < m.rows; ++r) {
      const float* o = m.ptr<float>(r);
      const Candidate& c = cands[size_t(r)];
      auto rel = [](float a, float b) { return std::fabs(double(a) - double(b)) / std::max(1.0, std::fabs(double(b))); };
      const double db = std::max({rel(o[0], c.box.x), rel(o[1], c.box.y), rel(o[2], c.box.w), rel(o[3], c.box.h)});
      box_err = std::max(box_err, db);
      if (db > kBoxTol && ++bad <= 5)
        ADD_FAILURE() << rel << " " << names[h] << " row " << r << ": OpenCV box " << o[0] << "," << o[1] << " "
                      << o[2] << "x" << o[3] << ", dlrun " << c.box.x << "," << c.box.y << " " << c.box.w << "x"
                      << c.box.h;
      for (int k = 0; k < classes; ++k) {
        const float ours = c.prob[size_t(k)];  // obj*cls (thresh -1 keeps every value)
        if (o[5 + k] > 0) {
          ++probs_compared;
          prob_err = std::max(prob_err, double(std::fabs(o[5 + k] - ours)));
          if (std::fabs(o[5 + k] - ours) > kProbTol && ++bad <= 5)
            ADD_FAILURE() << rel << " " << names[h] << " row " << r << " class " << k << ": OpenCV " << o[5 + k]
                          << " dlrun " << ours;
        } else {
          below = std::max(below, double(ours));
          if (ours > kOpenCvYoloThresh + kProbTol && ++bad <= 5)
            ADD_FAILURE() << rel << " " << names[h] << " row " << r << " class " << k << ": OpenCV 0, dlrun "
                          << ours;
        }
      }
    }
    std::printf("%s @%d %s: %d rows; max |d| box %.3g, prob %.3g over %lld kept probabilities; "
                "largest dlrun prob where OpenCV has 0: %.3f\n",
                rel.c_str(), kSize, names[h].c_str(), m.rows, box_err, prob_err,
                (long long)probs_compared, below);
    EXPECT_EQ(bad, 0) << names[h];
    model_probs += probs_compared;
  }
  EXPECT_GT(model_probs, 0) << rel << ": no probability above OpenCV's threshold to compare";
}

#define DLR_REQUIRE_OPENCV() (void)0
#else
#define DLR_REQUIRE_OPENCV() GTEST_SKIP() << "built without OpenCV (the reference implementation)"
#endif

TEST(OpenCvNewCoords, Yolov4Csp) {
  DLR_REQUIRE_OPENCV();
  DLR_REQUIRE_SHARED_DIR();
#ifdef DLR_HAVE_OPENCV
  compare_decode("models/yolov4-csp.cfg");
#endif
}

TEST(OpenCvNewCoords, Yolov4xMish) {
  DLR_REQUIRE_OPENCV();
  DLR_REQUIRE_SHARED_DIR();
#ifdef DLR_HAVE_OPENCV
  compare_decode("models/yolov4x-mish.cfg");
#endif
}

TEST(OpenCvNewCoords, Yolov7Tiny) {
  DLR_REQUIRE_OPENCV();
  DLR_REQUIRE_SHARED_DIR();
#ifdef DLR_HAVE_OPENCV
  compare_decode("models/yolov7-tiny.cfg");
#endif
}

}  // namespace
}  // namespace dlr
