// Real COCO weights (yolo-fastest-1.1, shared/weights) on dog.jpg: the detector
// must find a dog, a bicycle and a car or truck, each above 0.4.
#include <gtest/gtest.h>

#include "runtime/core/log.h"
#include "runtime/session.h"
#include "tests/common/test_paths.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

TEST(RealWeights, YoloFastestFindsDogBicycleAndVehicle) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(image, "images/dog.jpg");
  if (!tools::have_opencv()) GTEST_SKIP() << "needs OpenCV to decode dog.jpg";
  auto s = Session::open(cfg, weights);
  ASSERT_TRUE(s.ok()) << s.status().to_string();
  auto img = tools::load_image(image);
  ASSERT_TRUE(img.ok()) << img.status().to_string();
  auto dets = (*s)->detect(img->view());
  ASSERT_TRUE(dets.ok()) << dets.status().to_string();
  const auto& names = tools::coco_names();
  const std::string text = format_darknet(*dets, names, img->width, img->height, true);
  std::printf("yolo-fastest-1.1 on dog.jpg (CPU):\n%s", text.c_str());
  float dog = 0, bicycle = 0, vehicle = 0;
  for (const Detection& d : *dets) {
    const std::string& n = names[size_t(d.class_id)];
    if (n == "dog") dog = std::max(dog, d.prob);
    if (n == "bicycle") bicycle = std::max(bicycle, d.prob);
    if (n == "car" || n == "truck") vehicle = std::max(vehicle, d.prob);
  }
  EXPECT_GT(dog, 0.4f) << text;
  EXPECT_GT(bicycle, 0.4f) << text;
  EXPECT_GT(vehicle, 0.4f) << text;
  // The dog is in the lower left of the image (Darknet's yolov4 box: 129,225 184x317).
  for (const Detection& d : *dets)
    if (names[size_t(d.class_id)] == "dog") {
      EXPECT_LT(d.box.x, 0.5f);
      EXPECT_GT(d.box.y, 0.5f);
    }
}

TEST(RealWeights, BatchOfTwoEqualsTwoSingleRuns) {
  DLR_REQUIRE_FILE(cfg, "weights/yolo-fastest-1.1.cfg");
  DLR_REQUIRE_FILE(weights, "weights/yolo-fastest-1.1.weights");
  DLR_REQUIRE_FILE(dog, "images/dog.jpg");
  DLR_REQUIRE_FILE(horses, "images/horses.jpg");
  if (!tools::have_opencv()) GTEST_SKIP() << "needs OpenCV to decode jpg";
  SessionOptions two;
  two.batch = 2;
  auto sb = Session::open(cfg, weights, two);
  auto s1 = Session::open(cfg, weights);
  ASSERT_TRUE(sb.ok() && s1.ok());
  auto a = tools::load_image(dog);
  auto b = tools::load_image(horses);
  ASSERT_TRUE(a.ok() && b.ok());
  const ImageView views[2] = {a->view(), b->view()};
  auto batch = (*sb)->detect_batch(views, 2);
  ASSERT_TRUE(batch.ok());
  for (int i = 0; i < 2; ++i) {
    auto single = (*s1)->detect(views[i]);
    ASSERT_TRUE(single.ok());
    ASSERT_EQ(single->size(), (*batch)[size_t(i)].size()) << "image " << i;
    for (size_t k = 0; k < single->size(); ++k) {
      EXPECT_EQ((*single)[k].class_id, (*batch)[size_t(i)][k].class_id);
      EXPECT_NEAR((*single)[k].prob, (*batch)[size_t(i)][k].prob, 1e-5);
      EXPECT_NEAR((*single)[k].box.x, (*batch)[size_t(i)][k].box.x, 1e-5);
    }
  }
}

}  // namespace
}  // namespace dlr
