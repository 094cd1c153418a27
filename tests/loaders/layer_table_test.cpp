// The list of layer kinds (DLR_OPS, kernels/op_params.h) and the loaders' layer table
// (loaders/layer_table*.cpp) cover every kind, and the places a weightless op touches stay
// the ones docs/architecture.md "Adding an op" lists: no hand-written per-kind dispatch
// (`case LayerKind::`) outside the list, and each weightless kind of issue 9 named only
// by its DLR_OPS line, its table row and its two kernel files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_ops.h"
#include "loaders/layer_table.h"
#include "tests/common/test_paths.h"

namespace dlr {
namespace {

TEST(LayerTable, EveryKindHasARowAName) {
  std::set<std::string> names, sections;
  for (int k = 0; k < kLayerKindCount; ++k) {
    const LayerKind kind = static_cast<LayerKind>(k);
    const LayerRow& row = layer_row(kind);
    const std::string name = layer_kind_name(kind);
    EXPECT_EQ(row.kind, kind) << name << ": the row at its position is another kind's";
    EXPECT_NE(name, "?");
    EXPECT_TRUE(names.insert(name).second) << "two kinds named " << name;
    ASSERT_NE(row.sections[0], nullptr) << name;
    for (const char* s : row.sections) {
      if (s == nullptr) continue;
      EXPECT_TRUE(sections.insert(s).second) << "section [" << s << "] belongs to two rows";
      EXPECT_EQ(find_layer_section(s), &row) << s;
    }
    EXPECT_NE(row.parse, nullptr) << name;
    EXPECT_NE(row.summary, nullptr) << name;
    EXPECT_NE(row.moments, nullptr) << name;
    // A network output needs the layout of the conv that feeds it (synthetic weights).
    EXPECT_EQ(row.head != nullptr, is_output_kind(kind)) << name;
  }
  EXPECT_EQ(find_layer_section("connected"), nullptr);
  EXPECT_EQ(find_layer_section("net"), nullptr);
}

TEST(LayerTable, ParamsVariantHoldsEveryKindsStruct) {
  // Each kind's struct is an alternative of LayerParams (kinds may share one: reorg, reorg3d).
  EXPECT_TRUE((std::is_same_v<LayerParamsOf<LayerKind::kReorg3d>, ReorgParams>));
  EXPECT_TRUE((std::is_same_v<std::variant_alternative_t<0, LayerParams>, ConvParams>));
  EXPECT_EQ(std::variant_size_v<LayerParams>, size_t(kLayerKindCount) - 1);  // reorg and reorg3d share
}

// Source files (not tests) under the folders that hold product code, relative to the source root.
std::vector<std::string> product_sources() {
  std::vector<std::string> out;
  for (const char* dir : {"kernels", "loaders", "runtime", "tools"}) {
    const std::filesystem::path root = test::source_file(dir);
    if (!std::filesystem::exists(root)) continue;
    for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".h" || ext == ".cpp" || ext == ".cu" || ext == ".cuh"))
        out.push_back(std::filesystem::relative(e.path(), test::source_file("")).generic_string());
    }
  }
  return out;
}

std::string read_all(const std::string& rel) {
  std::ifstream in(test::source_file(rel));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The engines, the planner, the loaders and the JSON dispatch on a kind through tables
// generated from DLR_OPS; only the decoders of network outputs (runtime/detect) have
// per-kind code, since each output kind is decoded its own way.
TEST(LayerTable, NoHandWrittenPerKindSwitch) {
  const std::vector<std::string> files = product_sources();
  ASSERT_GT(files.size(), 50u) << "source tree not found";
  for (const std::string& f : files) {
    if (f.rfind("runtime/detect/", 0) == 0) continue;
    const std::string text = read_all(f);
    EXPECT_EQ(text.find("case LayerKind::k"), std::string::npos)
        << f << " dispatches on LayerKind by hand; generate it from DLR_OPS (kernels/op_params.h) or read "
                "loaders/layer_table.h";
  }
}

// A weightless kind lives in 4 product files (docs/architecture.md "Adding an op"):
// its DLR_OPS line and params struct, its layer table row (in the table file of its
// group), its CPU and its CUDA kernel file.
TEST(LayerTable, AWeightlessKindLivesInFourProductFiles) {
  struct Kind {
    const char* pattern;  // what names the kind: its enumerator, its params struct
    std::set<std::string> files;  // its row's file, its CPU and CUDA kernel files
  };
  const Kind kinds[] = {
      {R"(\bLayerKind::kAvgPool\b|\bAvgPoolParams\b)",
       {"loaders/layer_table_pool.cpp", "kernels/cpu/avgpool.cpp", "kernels/cuda/avgpool.cu"}},
      {R"(\bLayerKind::kScaleChannels\b|\bScaleChannelsParams\b)",
       {"loaders/layer_table_merge.cpp", "kernels/cpu/scale_channels.cpp", "kernels/cuda/scale_channels.cu"}},
      {R"(\bLayerKind::kSam\b|\bSamParams\b)",
       {"loaders/layer_table_merge.cpp", "kernels/cpu/sam.cpp", "kernels/cuda/sam.cu"}},
      {R"(\bLayerKind::kReorg3?d?\b|\bReorgParams\b)",
       {"loaders/layer_table_reshape.cpp", "kernels/cpu/reorg.cpp", "kernels/cuda/reorg.cu"}},
  };
  const std::vector<std::string> files = product_sources();
  ASSERT_GT(files.size(), 50u) << "source tree not found";
  for (const Kind& k : kinds) {
    std::set<std::string> allowed = k.files;
    allowed.insert("kernels/op_params.h");
    const std::regex re(k.pattern);
    for (const std::string& f : files) {
      if (!std::regex_search(read_all(f), re)) continue;
      EXPECT_TRUE(allowed.count(f)) << k.pattern << " is named in " << f
                                    << ": a weightless op must not need code outside its four places";
    }
  }
}

// Every kind's entry point links (a DLR_OPS line without cpu::run_<ident> does not), and
// the generated dispatch reaches the right one: route copies, dropout does nothing.
TEST(LayerTable, CpuDispatchReachesTheKindsEntryPoint) {
  std::vector<float> src = {1, 2, 3, 4}, dst(4, 0.f);
  const Shape3 s{1, 2, 2};
  const TensorView a = TensorView::packed(src.data(), DType::kF32, Layout::kNCHW, 1, s);
  const TensorView b = TensorView::packed(dst.data(), DType::kF32, Layout::kNCHW, 1, s);
  const std::pair<TensorView, TensorView> copy(a, b);
  const LayerParams route = RouteParams{};
  cpu::OpCall call;
  call.params = &route;
  call.copies = &copy;
  call.n_copies = 1;
  cpu::run_op(LayerKind::kDropout, call);
  EXPECT_EQ(dst, std::vector<float>(4, 0.f));
  cpu::run_op(LayerKind::kRoute, call);
  EXPECT_EQ(dst, src);
}

}  // namespace
}  // namespace dlr
