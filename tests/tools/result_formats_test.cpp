// Result files (tools/common/result_formats.h) against hand-computed values:
// Darknet's -out JSON layout, the COCO 80->91 ids and image ids, pixel bbox
// clamping, YOLO label lines, label paths, and a JSON array file that parses.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/common/test_paths.h"
#include "tools/common/result_formats.h"

namespace dlr::tools {
namespace {

Detection det(int cls, float prob, Box b, std::vector<Detection::Extra> others = {}) {
  Detection d;
  d.class_id = cls;
  d.prob = prob;
  d.box = b;
  d.others = std::move(others);
  return d;
}

TEST(ResultFormats, DarknetFrameJsonHasDarknetsFieldsAndOneObjectPerClass) {
  const std::vector<std::string> names = {"person", "dont_show_x", "dog"};
  // A box whose best class is dog (2) with person (0) and a dont_show class above thresh too.
  const Detection d = det(2, 0.9f, {0.25f, 0.5f, 0.2f, 0.4f}, {{0, 0.3f}, {1, 0.5f}});
  const auto j = darknet_frame_json(7, "data/dog.jpg", {d}, names);
  EXPECT_EQ(j["frame_id"], 7);
  EXPECT_EQ(j["filename"], "data/dog.jpg");
  ASSERT_EQ(j["objects"].size(), 2u);  // dont_show_x left out; class order 0 then 2
  EXPECT_EQ(j["objects"][0]["class_id"], 0);
  EXPECT_EQ(j["objects"][0]["name"], "person");
  EXPECT_DOUBLE_EQ(j["objects"][0]["confidence"].get<double>(), 0.3);
  const auto& o = j["objects"][1];
  EXPECT_EQ(o["class_id"], 2);
  EXPECT_EQ(o["name"], "dog");
  EXPECT_DOUBLE_EQ(o["relative_coordinates"]["center_x"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(o["relative_coordinates"]["center_y"].get<double>(), 0.5);
  EXPECT_DOUBLE_EQ(o["relative_coordinates"]["width"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(o["relative_coordinates"]["height"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(o["confidence"].get<double>(), 0.9);
  std::vector<std::string> keys, rel;  // Darknet's field order
  for (auto it = o.begin(); it != o.end(); ++it) keys.push_back(it.key());
  for (auto it = o["relative_coordinates"].begin(); it != o["relative_coordinates"].end(); ++it) rel.push_back(it.key());
  EXPECT_EQ(keys, (std::vector<std::string>{"class_id", "name", "relative_coordinates", "confidence"}));
  EXPECT_EQ(rel, (std::vector<std::string>{"center_x", "center_y", "width", "height"}));
}

TEST(ResultFormats, Coco80To91Ids) {
  const auto& ids = coco80_category_ids();
  EXPECT_EQ(ids[0], 1);    // person
  EXPECT_EQ(ids[11], 13);  // stop sign (12 is unused in COCO)
  EXPECT_EQ(ids[16], 18);  // dog
  EXPECT_EQ(ids[79], 90);  // toothbrush
  for (size_t i = 1; i < ids.size(); ++i) EXPECT_LT(ids[i - 1], ids[i]);
}

TEST(ResultFormats, CocoImageIdsLikeDarknet) {
  EXPECT_EQ(coco_image_id("/data/val2014/COCO_val2014_000000000042.jpg", 5), 42);
  EXPECT_EQ(coco_image_id("/data/val2017/000000000139.jpg", 5), 139);
  EXPECT_EQ(coco_image_id("/images/dog.jpg", 5), 5);
  EXPECT_EQ(coco_image_id("/my_dir/dog.jpg", 3), 3);  // only the file name counts
}

TEST(ResultFormats, CocoResultsArePixelsClampedWithMappedIds) {
  // 100x50 image; box centre (0.1, 0.5) size (0.4, 0.2): x -10..30 -> clamped 0..30; y 20..30.
  const Detection d = det(16, 0.75f, {0.1f, 0.5f, 0.4f, 0.2f}, {{0, 0.5f}});
  const auto j = coco_results(42, {d}, 80, 100, 50);
  ASSERT_EQ(j.size(), 2u);
  EXPECT_EQ(j[0]["category_id"], 1);  // person first (class order)
  EXPECT_EQ(j[1]["category_id"], 18);
  EXPECT_EQ(j[1]["image_id"], 42);
  const auto& b = j[1]["bbox"];
  EXPECT_NEAR(b[0].get<double>(), 0.0, 1e-5);
  EXPECT_NEAR(b[1].get<double>(), 20.0, 1e-5);
  EXPECT_NEAR(b[2].get<double>(), 30.0, 1e-5);
  EXPECT_NEAR(b[3].get<double>(), 10.0, 1e-5);
  EXPECT_DOUBLE_EQ(j[1]["score"].get<double>(), 0.75);
  // Not a COCO network: the class index is the category.
  EXPECT_EQ(coco_results(1, {d}, 20, 100, 50)[1]["category_id"], 16);
}

TEST(ResultFormats, YoloLabelsAndTheirPaths) {
  const Detection a = det(3, 0.9f, {0.5f, 0.25f, 0.125f, 1.0f});
  const Detection b = det(12, 0.4f, {0.33333f, 0.66667f, 0.1f, 0.2f}, {{1, 0.3f}});
  EXPECT_EQ(yolo_labels({a, b}), "3 0.5000 0.2500 0.1250 1.0000\n12 0.3333 0.6667 0.1000 0.2000\n");
  EXPECT_EQ(yolo_labels({}), "");
  EXPECT_EQ(label_path("/data/img/x.jpg", ""), "/data/img/x.txt");
  EXPECT_EQ(label_path("/data/img/x.jpeg", "/out"), "/out/x.txt");
  EXPECT_EQ(label_path("noext", ""), "noext.txt");
}

TEST(ResultFormats, JsonArrayFileParsesEmptyAndFull) {
  const std::string path = test::temp_dir() + "/array.json";
  {
    JsonArrayFile f;
    ASSERT_TRUE(f.open(path).ok());
    ASSERT_TRUE(f.close().ok());
  }
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(path)), nlohmann::json::array());
  {
    JsonArrayFile f;
    ASSERT_TRUE(f.open(path).ok());
    ASSERT_TRUE(f.append({{"a", 1}}).ok());
    ASSERT_TRUE(f.append(nlohmann::json::array({2, 3})).ok());  // arrays are spliced
    ASSERT_TRUE(f.append(nlohmann::json::array()).ok());
  }  // the destructor closes
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(path)), nlohmann::json::parse(R"([{"a":1},2,3])"));
  // Keys keep the order they were set in (Darknet's field order).
  {
    JsonArrayFile f;
    ASSERT_TRUE(f.open(path).ok());
    ASSERT_TRUE(f.append(darknet_frame_json(1, "x.jpg", {}, {})).ok());
  }
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "[\n{\"frame_id\":1,\"filename\":\"x.jpg\",\"objects\":[]}\n]\n");
  JsonArrayFile bad;
  Status st = bad.open("/nonexistent/dir/x.json");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.message(), "/nonexistent/dir/x.json: cannot create the file");
}

}  // namespace
}  // namespace dlr::tools
