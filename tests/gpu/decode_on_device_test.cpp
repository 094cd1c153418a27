// Candidates picked on the GPU (SessionOptions::decode, ExecutionPlan::selects)
// against every output downloaded whole and scanned on the host: the same detections, bit
// for bit, for a batch of the shared images, preload and stream, on the real
// yolo-fastest-1.1 weights and a synthetic yolov4-tiny; and where a head has more
// candidates than its rows (a threshold chosen from the output itself), the whole head
// downloaded and the detections still the same.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/session.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/gpu/gpu_test_util.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

struct Model {
  const char* cfg;
  const char* weights;  // nullptr: synthetic
  float thresh;         // the synthetic yolov4-tiny finds little at 0.25
};
const Model kModels[] = {{"weights/yolo-fastest-1.1.cfg", "weights/yolo-fastest-1.1.weights", 0.25f},
                         {"models/yolov4-tiny.cfg", nullptr, 0.1f}};

// The shared images that load here (PPM always; JPEG with OpenCV).
std::vector<tools::LoadedImage> shared_images() {
  std::vector<tools::LoadedImage> images;
  for (const char* name : {"dog", "eagle", "giraffe", "horses", "kite", "person"}) {
    for (const char* ext : {".ppm", ".jpg"}) {
      const std::string p = test::shared_file(std::string("images/") + name + ext);
      if (p.empty()) continue;
      auto r = tools::load_image(p);
      if (r.ok()) {
        images.push_back(std::move(r).value());
        break;
      }
    }
  }
  return images;
}

std::unique_ptr<Session> open(const Model& m, int batch, WeightMode mode, bool on, float thresh) {
  const std::string cfg = test::required_shared_file(m.cfg);
  const std::string weights = m.weights ? test::required_shared_file(m.weights) : test::synthetic_weights(cfg);
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.width = o.height = 416;
  o.batch = batch;
  o.mode = mode;
  o.thresh = thresh;
  o.decode = on ? Decode::kGpu : Decode::kCpu;
  auto s = Session::open(cfg, weights, o);
  EXPECT_TRUE(s.ok()) << s.status().to_string();
  return s.ok() ? std::move(s).value() : nullptr;
}

void expect_same(const std::vector<std::vector<Detection>>& a, const std::vector<std::vector<Detection>>& b,
                 const std::string& what) {
  ASSERT_EQ(a.size(), b.size()) << what;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].size(), b[i].size()) << what << " image " << i;
    for (size_t k = 0; k < a[i].size(); ++k) {
      EXPECT_EQ(a[i][k].class_id, b[i][k].class_id) << what << " image " << i << " det " << k;
      EXPECT_EQ(a[i][k].prob, b[i][k].prob) << what << " image " << i << " det " << k;
      EXPECT_EQ(0, std::memcmp(&a[i][k].box, &b[i][k].box, sizeof(Box))) << what << " image " << i << " det " << k;
      EXPECT_EQ(a[i][k].others.size(), b[i][k].others.size()) << what << " image " << i << " det " << k;
    }
  }
}

TEST(DecodeOnDevice, SameDetectionsAsTheWholeOutputs) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::vector<tools::LoadedImage> images = shared_images();
  if (images.empty()) FAIL() << "no shared image loads here (images/*.ppm, or *.jpg with OpenCV)";
  std::vector<ImageU8> views;
  for (const tools::LoadedImage& im : images) views.push_back(im.view());
  const int n = int(views.size());
  for (const Model& m : kModels) {
    for (WeightMode mode : {WeightMode::kPreload, WeightMode::kStream}) {
      const std::string what = std::string(m.cfg) + " " + weight_mode_name(mode) + " batch " + std::to_string(n);
      auto on = open(m, n, mode, true, m.thresh);
      auto off = open(m, n, mode, false, m.thresh);
      ASSERT_TRUE(on && off) << what;
      ASSERT_FALSE(on->engine().plan().selects.empty()) << what;
      ASSERT_TRUE(off->engine().plan().selects.empty()) << what;
      auto a = on->detect_batch(views.data(), n);
      auto b = off->detect_batch(views.data(), n);
      ASSERT_TRUE(a.ok() && b.ok()) << what;
      size_t found = 0;
      for (const auto& d : *b) found += d.size();
      EXPECT_GT(found, 0u) << what << ": nothing detected, nothing compared";
      expect_same(*a, *b, what);
      for (int y : on->network().yolo_layers())  // the rows were used, not the whole outputs
        for (int i = 0; i < n; ++i) EXPECT_TRUE(on->engine().output_rows(y, i).complete()) << what << " layer " << y;
      std::printf("%s: %zu detections, the same either way\n", what.c_str(), found);
    }
  }
}

TEST(DecodeOnDevice, AHeadWithMoreCandidatesThanRowsIsDownloadedWhole) {
  DLR_REQUIRE_GPU();
  DLR_REQUIRE_SHARED_DIR();
  const std::vector<tools::LoadedImage> images = shared_images();
  if (images.empty()) FAIL() << "no shared image loads here";
  const ImageU8 view = images[0].view();
  const Model& m = kModels[0];
  // The threshold that leaves twice the first head's rows as candidates on this image.
  auto probe = open(m, 1, WeightMode::kPreload, false, m.thresh);
  ASSERT_TRUE(probe && probe->detect(view).ok());
  const int y = probe->network().yolo_layers()[0];
  const LayerDesc& l = probe->network().layers[size_t(y)];
  const int cells = l.out.w * l.out.h, anchors = int(l.yolo().mask.size()), entries = l.yolo().classes + 5;
  const float* out = probe->engine().output(y, 0);
  std::vector<float> obj;
  for (int a = 0; a < anchors; ++a) obj.insert(obj.end(), out + (a * entries + 4) * cells, out + (a * entries + 5) * cells);
  auto on = open(m, 1, WeightMode::kPreload, true, m.thresh);
  ASSERT_TRUE(on);
  const int capacity = on->engine().plan().select_of(y)->capacity;
  ASSERT_GT(int(obj.size()), 2 * capacity + 1);
  std::sort(obj.begin(), obj.end(), std::greater<float>());
  const float thresh = obj[size_t(2 * capacity)];
  auto a_session = open(m, 1, WeightMode::kPreload, true, thresh);
  auto b_session = open(m, 1, WeightMode::kPreload, false, thresh);
  ASSERT_TRUE(a_session && b_session);
  auto a = a_session->detect(view);
  auto b = b_session->detect(view);
  ASSERT_TRUE(a.ok() && b.ok());
  const OutputRows rows = a_session->engine().output_rows(y, 0);
  EXPECT_GT(rows.count, rows.capacity) << "thresh " << thresh << ": the head did not overflow";
  EXPECT_FALSE(rows.complete());
  EXPECT_FALSE(b->empty());
  expect_same({*a}, {*b}, "overflowed head, thresh " + std::to_string(thresh));
  std::printf("thresh %.4f: %d candidates for %d rows, %zu detections, the same either way\n", thresh, rows.count,
              rows.capacity, b->size());
}

}  // namespace
}  // namespace dlr
