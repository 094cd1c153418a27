// The options table (runtime/options_table.h) is the one list of session options:
// adding one touches its row, the public field (if applications may set it) and the
// code that uses it (docs/architecture.md, "Adding an option"). This test keeps that
// true: the public fields are exactly the PUBLIC rows, the plumbing (public mapping,
// Python keywords, JSON record, text form) names no option, and every option reads back
// from its text, its JSON and its public setter.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "dlrun/options.h"
#include "loaders/network_desc.h"
#include "runtime/compile/compile.h"
#include "runtime/options_text.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

std::string read_text(const std::string& rel) {
  std::ifstream f(test::source_file(rel));
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

struct Row {
  std::string name;
  std::string scope;
};

std::vector<Row> rows() {
  std::vector<Row> r;
#define DLR_ROW_(name, Type, def, scope, valid, message) r.push_back({#name, #scope});
  DLR_SESSION_OPTIONS(DLR_ROW_)
#undef DLR_ROW_
  return r;
}

// The fields of dlrun::Options as its header declares them ("Type name = default;").
std::set<std::string> public_fields() {
  const std::string h = read_text("runtime/include/dlrun/options.h");
  const size_t a = h.find("struct Options {"), b = h.find("\n};", a);
  const std::string body = h.substr(a, b - a);
  static const std::regex field(R"(\n\s+[A-Za-z_:0-9<>]+\s+([a-z_0-9]+)\s*[=;])");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), field); it != std::sregex_iterator(); ++it)
    out.insert((*it)[1]);
  return out;
}

TEST(OptionsTable, PublicFieldsAreThePublicRows) {
  std::set<std::string> from_table;
  for (const Row& r : rows()) {
    if (r.scope == "PUBLIC") from_table.insert(r.name);
    if (r.scope == "PUBLIC_STORAGE") from_table.insert("weights_from_storage");
  }
  const std::set<std::string> fields = public_fields();
  ASSERT_GT(fields.size(), 30u) << "dlrun::Options not found";
  EXPECT_EQ(fields, from_table);
  const std::vector<std::string>& names = dlrun::option_names();
  EXPECT_EQ(std::set<std::string>(names.begin(), names.end()), from_table);
}

// The plumbing is generated from the table: no option is named there by hand. The
// public mapping and the text form name none at all; the JSON writer reads no option;
// the Python module's keyword conversion names none (comments aside).
TEST(OptionsTable, ThePlumbingNamesNoOption) {
  struct File {
    const char* rel;
    std::string pattern;  // $ = the option's name
  };
  const std::vector<File> files = {{"runtime/public/options_map.cpp", "\\b$\\b"},
                                   {"runtime/public/options.cpp", "\\b$\\b"},
                                   {"runtime/options_text.cpp", "\\b$\\b"},
                                   {"runtime/compile/compile_json.cpp", "(options->|options\\.|\\bo\\.)$\\b"},
                                   {"runtime/python/dlrun_module.cpp", "\\b$\\b"}};
  for (const File& f : files) {
    std::string text = read_text(f.rel);
    ASSERT_FALSE(text.empty()) << f.rel;
    if (std::string(f.rel).find("python") != std::string::npos) {  // the keyword conversion only
      const size_t a = text.find("std::string option_text("), b = text.find("dlrun::ImageView view_of(");
      ASSERT_TRUE(a != std::string::npos && b != std::string::npos && a < b) << f.rel;
      text = text.substr(a, b - a);
    }
    text = std::regex_replace(text, std::regex("//[^\\n]*"), "");  // comments may name an option
    for (const Row& r : rows()) {
      std::string p = f.pattern;
      p.replace(p.find('$'), 1, r.name);
      EXPECT_FALSE(std::regex_search(text, std::regex(p))) << f.rel << " names the option " << r.name;
    }
  }
}

TEST(OptionsTable, EveryOptionReadsBackFromItsText) {
  const SessionOptions defaults;
  for (const std::string& name : option_names()) {
    const Expected<std::string> text = option_text(defaults, name);
    ASSERT_TRUE(text.ok()) << name;
    SessionOptions o;
    ASSERT_TRUE(set_option_text(&o, name, *text).ok()) << name << " '" << *text << "'";
    EXPECT_EQ(*option_text(o, name), *text) << name;
  }
  SessionOptions o;
  ASSERT_TRUE(set_option_text(&o, "weight_budget", "50%").ok());
  EXPECT_EQ(o.weight_budget.kind, WeightBudget::Kind::kFraction);
  ASSERT_TRUE(set_option_text(&o, "device", "cuda").ok());
  EXPECT_EQ(o.device, DeviceKind::kCUDA);
  ASSERT_TRUE(set_option_text(&o, "arena_staging", "off").ok());
  EXPECT_FALSE(o.arena_staging);
  EXPECT_EQ(set_option_text(&o, "threads", "two").message(), "threads 'two': expected an integer");
  EXPECT_EQ(set_option_text(&o, "residency", "most").message(),
            "residency 'most': expected one of none, largest-late, greedy");
  EXPECT_EQ(set_option_text(&o, "slice_by", "rows").message(),
            "slice_by 'rows': expected one of auto, filters, channels");
  ASSERT_TRUE(set_option_text(&o, "decode", "gpu").ok());
  EXPECT_EQ(o.decode, Decode::kGpu);
  EXPECT_EQ(set_option_text(&o, "decode", "true").message(), "decode 'true': expected one of auto, cpu, gpu");
  EXPECT_EQ(set_option_text(&o, "no_such", "1").message(), "unknown option 'no_such'");
}

TEST(OptionsTable, TheJsonRecordHoldsEveryOption) {
  SessionOptions o;
  o.device = DeviceKind::kCUDA;
  o.precision = Precision::kFP16;
  o.mode = WeightMode::kStream;
  o.threads = 3;
  o.max_slowdown = 0.25;
  Target t;
  t.device = DeviceKind::kCUDA;
  t.map_granularity = int64_t(2) << 20;
  t.copy_profile = *CopyProfile::builtin("h100");
  Expected<NetworkDesc> net = parse_network_cfg(test::source_file("models/yolov4-tiny.cfg"));
  ASSERT_TRUE(net.ok());
  Expected<CompiledModel> m = compile(*net, t, o);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  const std::string json = compiled_model_to_json(*m);
  for (const std::string& name : option_names())
    EXPECT_NE(json.find("\"" + name + "\":"), std::string::npos) << name;
  Expected<CompiledModel> back = compiled_model_from_json(json, "round trip");
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  for (const std::string& name : option_names()) EXPECT_EQ(*option_text(*back->options, name), *option_text(o, name));
}

// option_is_text: the text fields (which bindings must not fill from a number), no other.
TEST(OptionsTable, TextFieldsAreKnownByName) {
  EXPECT_TRUE(dlrun::option_is_text("weight_budget"));
  EXPECT_TRUE(dlrun::option_is_text("copy_profile"));
  EXPECT_TRUE(dlrun::option_is_text("prepared_path"));
  EXPECT_TRUE(dlrun::option_is_text("cpu_affinity"));
  EXPECT_FALSE(dlrun::option_is_text("thread_priority"));
  EXPECT_FALSE(dlrun::option_is_text("threads"));
  EXPECT_FALSE(dlrun::option_is_text("device"));
  EXPECT_FALSE(dlrun::option_is_text("weights_from_storage"));
  EXPECT_FALSE(dlrun::option_is_text("no_such_option"));
}

TEST(OptionsTable, PublicSetterReadsEveryPublicField) {
  dlrun::Options o;
  for (const auto& [name, text] : std::vector<std::pair<std::string, std::string>>{
           {"device", "cuda"}, {"precision", "fp16"}, {"mode", "stream"}, {"weight_pool", "ring"},
           {"residency", "largest-late"}, {"batch", "4"}, {"thresh", "0.5"}, {"weight_budget", "40%"},
           {"weights_from_storage", "true"}, {"reader", "threads"}, {"read_block_bytes", "65536"},
           {"arena_staging", "false"}, {"slice_by", "channels"}, {"thread_priority", "realtime"},
           {"cpu_affinity", "0-1"}}) {
    const dlrun::Status st = dlrun::set_option(o, name, text);
    EXPECT_TRUE(st.ok()) << name << ": " << st.error().message;
  }
  EXPECT_EQ(o.device, dlrun::Device::kCUDA);
  EXPECT_EQ(o.precision, dlrun::Precision::kFP16);
  EXPECT_EQ(o.mode, dlrun::Mode::kStream);
  EXPECT_EQ(o.weight_pool, dlrun::PoolLayout::kRing);
  EXPECT_EQ(o.residency, dlrun::Residency::kLargestLate);
  EXPECT_EQ(o.slice_by, dlrun::SliceBy::kChannels);
  EXPECT_EQ(o.batch, 4);
  EXPECT_FLOAT_EQ(o.thresh, 0.5f);
  EXPECT_EQ(o.weight_budget, "40%");
  EXPECT_TRUE(o.weights_from_storage);
  EXPECT_EQ(o.reader, "threads");
  EXPECT_EQ(o.read_block_bytes, 65536);
  EXPECT_FALSE(o.arena_staging);
  EXPECT_EQ(o.thread_priority, dlrun::ThreadPriority::kRealtime);
  EXPECT_EQ(o.cpu_affinity, "0-1");
  EXPECT_EQ(dlrun::set_option(o, "device", "tpu").error().message, "device 'tpu': expected one of cpu, cuda");
  EXPECT_EQ(dlrun::set_option(o, "prefetch_next", "true").error().message, "unknown option 'prefetch_next'");
}

}  // namespace
}  // namespace dlr
