// cuDNN algorithm choices kept per GPU and model (runtime/cache/conv_algo_cache.h), the parts
// that need no GPU: the file format's round trip (algorithms with their workspace
// sizes), the key (every field matters, the model's precision and layout change it),
// and files that must be ignored rather than trusted (damaged, another format, format 1
// without workspace sizes, another GPU / cuDNN / model, bad algorithms or sizes).
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/cache/conv_algo_cache.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

constexpr int kAlgoCount = 8;  // CUDNN_CONVOLUTION_FWD_ALGO_COUNT in cuDNN 8 and 9

ConvAlgoKey sample_key() {
  ConvAlgoKey k;
  k.gpu_uuid = "0123456789abcdef0123456789abcdef";
  k.cudnn_version = 91400;
  k.model = "yolov4.cfg 00112233aabbccdd";
  k.precision = "fp16";
  k.layout = "nhwc";
  k.policy = "heuristic";
  k.workspace_limit = int64_t(256) << 20;
  return k;
}

ConvAlgoMap sample_algos() {
  return {{"in[nhwc/f16 n1 c3 h608 w608 ns1108992 ps3] out[...] filters32 size3", {1, 4096}},
          {"in[nhwc/f16 n1 c32 h608 w608 ns11829248 ps32] out[...] filters64 size3 \"quoted\"", {0, 0}},
          {"a conv with unicode-free but odd chars: {}[]:,\\", {7, int64_t(256) << 20}},  // exactly the limit
          {"a conv whose algorithm was timed at open", {1, 512, 0.0421875}}};  // its time round-trips exactly
}

std::string nlohmann_quote(const std::string& s) { return nlohmann::json(s).dump(); }

void write(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f << text;
}

class ConvAlgoCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    m_dir = test::temp_dir() + "/cache";
    ASSERT_EQ(setenv("DLR_CACHE_DIR", m_dir.c_str(), 1), 0);
  }
  void TearDown() override { unsetenv("DLR_CACHE_DIR"); }
  std::string m_dir;
};

TEST(ConvAlgoCacheFormat, RoundTrip) {
  const ConvAlgoKey key = sample_key();
  const ConvAlgoMap algos = sample_algos();
  const std::string text = format_conv_algos(key, algos);
  Expected<ConvAlgoMap> back = parse_conv_algos(text, key, kAlgoCount);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(*back, algos);
  // An empty model (no convolutions) round-trips too.
  back = parse_conv_algos(format_conv_algos(key, {}), key, kAlgoCount);
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_TRUE(back->empty());
}

TEST(ConvAlgoCacheFormat, EveryKeyFieldMatters) {
  const ConvAlgoKey base = sample_key();
  std::vector<ConvAlgoKey> others(7, base);
  others[0].gpu_uuid = "ffffffffffffffffffffffffffffffff";
  others[1].cudnn_version = 90100;
  others[2].model = "yolov4.cfg 00112233aabbccde";
  others[3].precision = "fp32";
  others[4].layout = "nchw";
  others[5].policy = "find";
  others[6].workspace_limit = 0;
  const std::string text = format_conv_algos(base, sample_algos());
  for (size_t i = 0; i < others.size(); ++i) {
    EXPECT_NE(others[i].text(), base.text()) << i;
    const Expected<ConvAlgoMap> r = parse_conv_algos(text, others[i], kAlgoCount);
    ASSERT_FALSE(r.ok()) << "field " << i << ": a file made for another key was accepted";
    EXPECT_NE(r.status().message().find("another GPU, cuDNN or model"), std::string::npos) << r.status().message();
  }
}

TEST(ConvAlgoCacheFormat, DamagedTextIsRefused) {
  const ConvAlgoKey key = sample_key();
  const std::string good = format_conv_algos(key, sample_algos());
  const std::string k = nlohmann_quote(key.text());
  auto with = [&](const std::string& entry) {
    return "{\"format\": 2, \"key\": " + k + ", \"algos\": {\"c\": " + entry + "}}";
  };
  const std::string limit = std::to_string(key.workspace_limit);
  const std::vector<std::pair<std::string, std::string>> bad = {
      {good.substr(0, good.size() / 2), "not a JSON document"},
      {"", "not a JSON document"},
      {"[1, 2]", "not a JSON object"},
      {"{\"format\": 3, \"key\": \"x\", \"algos\": {}}", "format is not 2"},
      {"{\"format\": \"2\", \"key\": \"x\", \"algos\": {}}", "format is not 2"},
      {"{\"format\": 2, \"algos\": {}}", "no key"},
      {"{\"format\": 2, \"key\": " + k + "}", "no algos object"},
      {with("{\"algo\": 8, \"workspace\": 0}"), "outside 0..7"},
      {with("{\"algo\": -1, \"workspace\": 0}"), "outside 0..7"},
      {with("{\"algo\": 1.5, \"workspace\": 0}"), "algorithm is not an integer"},
      {with("{\"workspace\": 0}"), "algorithm is not an integer"},
      {with("1"), "not an object"},  // a format-1 entry under format 2
      {with("{\"algo\": 1}"), "workspace is not an integer"},
      {with("{\"algo\": 1, \"workspace\": 1.5}"), "workspace is not an integer"},
      {with("{\"algo\": 1, \"workspace\": \"0\"}"), "workspace is not an integer"},
      {with("{\"algo\": 1, \"workspace\": -1}"), "workspace -1 bytes outside 0.." + limit},
      {with("{\"algo\": 1, \"workspace\": " + std::to_string(key.workspace_limit + 1) + "}"),
       "outside 0.." + limit + " (the workspace limit)"},
      {with("{\"algo\": 1, \"workspace\": 18446744073709551615}"), "workspace outside 0.." + limit},
      {"{\"format\": 2, \"key\": " + k + ", \"algos\": {\"\": {\"algo\": 1, \"workspace\": 0}}}",
       "empty convolution key"},
      {with("{\"algo\": 1, \"workspace\": 0, \"ms\": -0.5}"), "time is not a number of ms >= 0"},
      {with("{\"algo\": 1, \"workspace\": 0, \"ms\": \"1\"}"), "time is not a number of ms >= 0"},
  };
  for (const auto& [text, why] : bad) {
    const Expected<ConvAlgoMap> r = parse_conv_algos(text, key, kAlgoCount);
    ASSERT_FALSE(r.ok()) << "accepted: " << text;
    EXPECT_NE(r.status().message().find(why), std::string::npos) << r.status().message() << " (wanted " << why << ")";
  }
}

// A file of format 1 (algorithms without workspace sizes, as dlrun wrote before) with
// this very key: refused (the open ignores it with a warning and rewrites it), the
// message naming format 1.
TEST(ConvAlgoCacheFormat, FormatOneIsRefused) {
  const ConvAlgoKey key = sample_key();
  const std::string v1 = "{\"format\": 1, \"key\": " + nlohmann_quote(key.text()) + ", \"algos\": {\"c\": 1}}";
  const Expected<ConvAlgoMap> r = parse_conv_algos(v1, key, kAlgoCount);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("format is not 2 (format 1"), std::string::npos) << r.status().message();
  // What this build writes is format 2, every entry with its workspace.
  const nlohmann::json j = nlohmann::json::parse(format_conv_algos(key, sample_algos()));
  EXPECT_EQ(j["format"], 2);
  for (const auto& [conv, c] : sample_algos()) {
    EXPECT_EQ(j["algos"][conv]["algo"], c.algo) << conv;
    EXPECT_EQ(j["algos"][conv]["workspace"], c.workspace) << conv;
  }
  // A workspace limit of 0 admits only workspace-free choices.
  ConvAlgoKey zero = key;
  zero.workspace_limit = 0;
  EXPECT_TRUE(parse_conv_algos(format_conv_algos(zero, {{"c", {1, 0}}}), zero, kAlgoCount).ok());
  EXPECT_FALSE(parse_conv_algos(format_conv_algos(zero, {{"c", {1, 1}}}), zero, kAlgoCount).ok());
}

TEST_F(ConvAlgoCacheTest, FilesAbsentLoadedIgnoredAndRewritten) {
  const ConvAlgoKey key = sample_key();
  const Expected<std::string> path = conv_algos_path("yolov4.cfg", key);
  ASSERT_TRUE(path.ok()) << path.status().to_string();
  EXPECT_EQ(path->rfind(m_dir + "/conv-algos/yolov4.cfg-", 0), 0u) << *path;

  ConvAlgoLoadResult r = load_conv_algos(*path, key, kAlgoCount);
  EXPECT_EQ(r.state, ConvAlgoLoad::kAbsent);
  ASSERT_TRUE(save_conv_algos(*path, key, sample_algos()).ok());
  r = load_conv_algos(*path, key, kAlgoCount);
  ASSERT_EQ(r.state, ConvAlgoLoad::kLoaded) << r.reason;
  EXPECT_EQ(r.algos, sample_algos());

  // Another GPU's key names another file; its file copied over this one is ignored.
  ConvAlgoKey other = key;
  other.gpu_uuid = "ffffffffffffffffffffffffffffffff";
  const Expected<std::string> other_path = conv_algos_path("yolov4.cfg", other);
  ASSERT_TRUE(other_path.ok());
  EXPECT_NE(*other_path, *path);
  ASSERT_TRUE(save_conv_algos(*other_path, other, {{"c", {2, 0}}}).ok());
  EXPECT_EQ(load_conv_algos(*path, key, kAlgoCount).algos, sample_algos()) << "another GPU's file changed ours";
  ASSERT_EQ(std::rename(other_path->c_str(), path->c_str()), 0);
  r = load_conv_algos(*path, key, kAlgoCount);
  EXPECT_EQ(r.state, ConvAlgoLoad::kIgnored);
  EXPECT_NE(r.reason.find(*path), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("gpu ffff"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.algos.empty());

  // A format-1 file (an older dlrun's) is ignored, and the next save replaces it.
  write(*path, "{\"format\": 1, \"key\": " + nlohmann_quote(key.text()) + ", \"algos\": {\"c\": 1}}");
  r = load_conv_algos(*path, key, kAlgoCount);
  EXPECT_EQ(r.state, ConvAlgoLoad::kIgnored);
  EXPECT_NE(r.reason.find("format 1"), std::string::npos) << r.reason;
  EXPECT_TRUE(r.algos.empty());
  ASSERT_TRUE(save_conv_algos(*path, key, sample_algos()).ok());
  EXPECT_EQ(load_conv_algos(*path, key, kAlgoCount).algos, sample_algos());

  // A damaged file is ignored, and the next save replaces it.
  write(*path, "{\"format\": 2, \"key\": ");
  r = load_conv_algos(*path, key, kAlgoCount);
  EXPECT_EQ(r.state, ConvAlgoLoad::kIgnored);
  EXPECT_NE(r.reason.find("not a JSON document"), std::string::npos) << r.reason;
  ASSERT_TRUE(save_conv_algos(*path, key, sample_algos()).ok());
  EXPECT_EQ(load_conv_algos(*path, key, kAlgoCount).state, ConvAlgoLoad::kLoaded);

  // A directory where the file should be is ignored (not an error), and cannot be written.
  ASSERT_EQ(std::remove(path->c_str()), 0);
  ASSERT_EQ(::mkdir(path->c_str(), 0700), 0);
  r = load_conv_algos(*path, key, kAlgoCount);
  EXPECT_EQ(r.state, ConvAlgoLoad::kIgnored);
  const Status saved = save_conv_algos(*path, key, sample_algos());
  ASSERT_FALSE(saved.ok());
  EXPECT_NE(saved.message().find(*path), std::string::npos) << saved.message();
}

CompiledModel cuda_model(const NetworkDesc& net, Precision precision, int layout, bool find, int64_t workspace) {
  Target t;
  t.device = DeviceKind::kCUDA;
  t.name = "hand-made GPU";
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = precision;
  o.layout = layout;
  o.find_algorithms = find;
  o.workspace_limit = workspace;
  Expected<CompiledModel> m = compile(net, t, o);
  EXPECT_TRUE(m.ok()) << m.status().to_string();
  return m.ok() ? *m : CompiledModel();
}

TEST(ConvAlgoCacheKey, FollowsTheCompiledModel) {
  const std::string cfg = test::required_shared_file("weights/yolo-fastest-1.1.cfg");
  if (cfg.empty()) GTEST_SKIP() << "shared data not found (set DLR_SHARED_DIR)";
  CfgOptions co;
  co.width = co.height = 320;
  const Expected<NetworkDesc> net = parse_network_cfg(cfg, co);
  ASSERT_TRUE(net.ok()) << net.status().to_string();
  const std::string uuid = "0123456789abcdef0123456789abcdef";
  const int64_t mb256 = int64_t(256) << 20;
  const ConvAlgoKey base = conv_algo_key(cuda_model(*net, Precision::kFP16, 1, false, mb256), uuid, 91400);
  EXPECT_EQ(base.precision, "fp16");
  EXPECT_EQ(base.layout, "NHWC");
  EXPECT_EQ(base.policy, "heuristic");
  EXPECT_EQ(base.workspace_limit, mb256);
  EXPECT_EQ(base.model.rfind("yolo-fastest-1.1 ", 0), 0u) << base.model;
  // The same options give the same key; each difference gives another.
  EXPECT_EQ(conv_algo_key(cuda_model(*net, Precision::kFP16, 1, false, mb256), uuid, 91400).text(), base.text());
  const std::vector<ConvAlgoKey> others = {
      conv_algo_key(cuda_model(*net, Precision::kFP32, 1, false, mb256), uuid, 91400),
      conv_algo_key(cuda_model(*net, Precision::kFP16, 0, false, mb256), uuid, 91400),
      conv_algo_key(cuda_model(*net, Precision::kFP16, 1, true, mb256), uuid, 91400),
      conv_algo_key(cuda_model(*net, Precision::kFP16, 1, false, 0), uuid, 91400),
      conv_algo_key(cuda_model(*net, Precision::kFP16, 1, false, mb256), uuid, 90100),
      conv_algo_key(cuda_model(*net, Precision::kFP16, 1, false, mb256), "ffffffffffffffffffffffffffffffff", 91400)};
  for (size_t i = 0; i < others.size(); ++i) EXPECT_NE(others[i].text(), base.text()) << i;
  EXPECT_EQ(others[1].layout, "NCHW");
  // Another input size is another plan, so another model identity.
  co.width = co.height = 416;
  const Expected<NetworkDesc> net416 = parse_network_cfg(cfg, co);
  ASSERT_TRUE(net416.ok());
  EXPECT_NE(conv_algo_key(cuda_model(*net416, Precision::kFP16, 1, false, mb256), uuid, 91400).model, base.model);
}

}  // namespace
}  // namespace dlr
