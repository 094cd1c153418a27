// dlrun and the compile step: options checked before any file work (usage errors,
// exit 2), stream-only options refused outside stream mode, --print-plan and
// --save-plan (the JSON loads back into the same compiled model).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "runtime/compile/compile.h"
#include "tests/common/model_fixtures.h"
#include "tests/common/test_paths.h"
#include "tests/e2e/tool_runner.h"
#include "tools/common/tool_support.h"

namespace dlr {
namespace {

using test::run_tool;

TEST(DlrunPlan, BadOptionValuesAreUsageErrorsBeforeAnyFile) {
  // The files do not exist: each error must be the option's.
  struct Case {
    std::string args, message;
  };
  const Case cases[] = {
      {"--device cuda --mode stream --weight-budget 25x",
       "dlrun: --weight-budget: weight budget \"25x\": unknown unit 'x'; expected %, B, KB, MB, GB, KiB, MiB or GiB"},
      {"--weight-budget 25%", "dlrun: --weight-budget applies to --device cuda --mode stream only"},
      {"--device cuda --weight-pool slots", "dlrun: --weight-pool applies to --device cuda --mode stream only"},
      {"--copy-profile /nonexistent.json", "dlrun: --copy-profile applies to --device cuda --mode stream only"},
      {"--units chunks", "dlrun: --units applies to --device cuda --mode stream only"},
      {"--no-calibrate", "dlrun: --no-calibrate applies to --device cuda --mode stream only"},
      {"--no-graph", "dlrun: --no-graph applies to --device cuda only"},
      {"--precision fp16", "dlrun: the CPU backend runs fp32 only (asked for fp16)"},
      // weights from storage
      {"--host-budget 64MiB", "dlrun: --host-budget applies to --weights-from storage only"},
      {"--prepared x.dlrw", "dlrun: --prepared applies to --weights-from storage only"},
      {"--prefetch-reads off", "dlrun: --prefetch-reads applies to --weights-from storage only"},
      {"--weights-from storage --host-budget 64x",
       "dlrun: --host-budget \"64x\": expected min or a size such as 64MiB, 8MB or a byte count"},
      {"--weights-from storage --read-block 1000",
       "dlrun: read block 1000 bytes: expected a multiple of 4096 from 4 KiB to 64 MiB"},
      {"--device cuda --weights-from storage",
       "dlrun: weights_from storage on the GPU streams weights: it needs mode stream"},
      {"--weights-from storage --zero-copy off",
       "dlrun: the CPU backend reads weights where it computes from them: zero copy cannot be off"},
  };
  for (const Case& c : cases) {
    const test::ToolResult r = run_tool("dlrun /nonexistent.cfg /nonexistent.weights x.jpg " + c.args);
    EXPECT_EQ(r.code, 2) << c.args << ": " << r.err;
    EXPECT_EQ(r.err, c.message + "\n") << c.args;
  }
}

TEST(DlrunPlan, PrintAndSavePlan) {
  const std::string cfg = test::source_file("models/yolov4-tiny.cfg");
  const std::string w = test::synthetic_weights(cfg);
  ASSERT_FALSE(w.empty());
  const std::string ppm = test::temp_dir() + "/plan_gray.ppm";
  tools::LoadedImage img;
  img.width = 64;
  img.height = 48;
  img.pixels.assign(size_t(64) * 48 * 3, 128);
  ASSERT_TRUE(tools::save_ppm(ppm, img).ok());
  const std::string json = test::temp_dir() + "/plan.json";
  const test::ToolResult r =
      run_tool("dlrun " + cfg + " " + w + " " + ppm + " --width 160 --height 160 --print-plan --save-plan " + json);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("model: yolov4-tiny ("), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("note: weights: preload"), std::string::npos) << r.out;
  std::ifstream f(json);
  std::stringstream ss;
  ss << f.rdbuf();
  Expected<CompiledModel> m = compiled_model_from_json(ss.str(), json);
  ASSERT_TRUE(m.ok()) << m.status().to_string();
  EXPECT_EQ(m->model_name, "yolov4-tiny");
  EXPECT_EQ(m->plan.input_shape, (Shape3{3, 160, 160}));
  EXPECT_FALSE(m->streaming);
  EXPECT_EQ(compiled_model_to_json(*m), ss.str());
  // The printed plan is the saved model's text.
  EXPECT_NE(r.out.find(m->to_text()), std::string::npos);

  // Without an input: the model is compiled, printed and saved, nothing is detected.
  const std::string json2 = test::temp_dir() + "/plan2.json";
  const test::ToolResult alone =
      run_tool("dlrun " + cfg + " " + w + " --width 160 --height 160 --print-plan --save-plan " + json2);
  ASSERT_EQ(alone.code, 0) << alone.err;
  EXPECT_EQ(alone.out, m->to_text());
  std::ifstream f2(json2);
  std::stringstream ss2;
  ss2 << f2.rdbuf();
  EXPECT_EQ(ss2.str(), ss.str());
  const test::ToolResult none = run_tool("dlrun " + cfg + " " + w);
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.err.find("no input: give images"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace dlr
