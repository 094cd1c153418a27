// The layering rules of docs/architecture.md ("Dependencies point one way"), checked on
// the sources: includes (directly and through every project header they reach) and, for
// engines, what their text names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/common/test_paths.h"

namespace dlr {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::vector<std::string> includes_of(const std::string& rel) {
  static const std::regex re("#include [\"<]([^\">]+)[\">]");
  std::vector<std::string> out;
  const std::string text = read_text(test::source_file(rel));
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

// Project headers reachable from `rel` (project-relative paths) plus third-party includes.
std::set<std::string> closure(const std::string& rel) {
  std::set<std::string> seen;
  std::vector<std::string> todo{rel};
  while (!todo.empty()) {
    const std::string f = todo.back();
    todo.pop_back();
    if (!seen.insert(f).second) continue;
    if (!std::ifstream(test::source_file(f))) continue;  // a system header
    for (const std::string& inc : includes_of(f)) todo.push_back(inc);
  }
  seen.erase(rel);
  return seen;
}

// Project-relative paths of the files under `dir` (recursively), sources and headers.
std::vector<std::string> files_under(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::recursive_directory_iterator(test::source_file(dir)))
    if (e.is_regular_file()) out.push_back(dir + "/" + fs::relative(e.path(), test::source_file(dir)).string());
  return out;
}

bool starts(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(Dependencies, SessionAndEngineHeadersStayNarrow) {
  ASSERT_FALSE(includes_of("runtime/session.h").empty()) << "source tree not found";
  for (const std::string& h : closure("runtime/session.h")) {
    EXPECT_EQ(h.find("nlohmann"), std::string::npos) << "runtime/session.h reaches " << h;
    EXPECT_FALSE(starts(h, "runtime/streaming/")) << "runtime/session.h reaches " << h;
  }
  for (const char* e : {"runtime/engine.h", "runtime/engine_sharing.h"})
    for (const std::string& h : closure(e)) {
      EXPECT_TRUE(!starts(h, "kernels/") || h == "kernels/op_params.h") << e << " reaches " << h;
      EXPECT_FALSE(starts(h, "runtime/streaming/")) << e << " reaches " << h;
      EXPECT_NE(h, "runtime/options.h") << e << " reaches " << h;
    }
}

// kernels/ (every file): no loaders/, no runtime/ but runtime/core/.
TEST(Dependencies, KernelsSeeTheCoreOnly) {
  int files = 0;
  for (const std::string& rel : files_under("kernels")) {
    ++files;
    for (const std::string& inc : includes_of(rel)) {
      EXPECT_FALSE(starts(inc, "loaders/")) << rel << " includes " << inc;
      EXPECT_TRUE(!starts(inc, "runtime/") || starts(inc, "runtime/core/")) << rel << " includes " << inc;
    }
  }
  EXPECT_GT(files, 20);
}

// loaders/ never includes CUDA; no header of the library reaches a JSON library, except
// the private ones with a JSON value in their interface: a copy profile's (for
// compile_json.cpp and tests) and the keyed cache documents' (for the caches' .cpp files),
// which no other header includes.
TEST(Dependencies, NoCudaInLoadersNoJsonInHeaders) {
  for (const std::string& rel : files_under("loaders"))
    for (const std::string& inc : includes_of(rel)) EXPECT_EQ(inc.find("cuda"), std::string::npos) << rel << " includes " << inc;
  int headers = 0;
  for (const char* dir : {"runtime", "loaders", "kernels"})
    for (const std::string& rel : files_under(dir)) {
      if (fs::path(rel).extension() != ".h" || rel == "runtime/streaming/copy_profile_json.h" ||
          rel == "runtime/cache/keyed_document_json.h")
        continue;
      ++headers;
      for (const std::string& h : closure(rel)) EXPECT_EQ(h.find("nlohmann"), std::string::npos) << rel << " reaches " << h;
    }
  EXPECT_GT(headers, 30);
}

// runtime/storage/ (block reader, prepared weight file, read pipeline) has no CUDA,
// kernels, engine or tool: Linux file I/O (O_DIRECT; io_uring through liburing, or pread
// threads), CRC32C and XXH3; of the runtime it sees the core, itself and the plain-data
// types it reads and fills. It plans nothing: a prepared file is written for a plan the
// compile step made (runtime/prepare.cpp, Session::open_prepared).
TEST(Dependencies, StorageIsFileIoOverPlainData) {
  const std::set<std::string> allowed = {
      "runtime/compile/plan.h", "runtime/options.h", "runtime/weight_source.h", "runtime/streaming/read_plan.h",
      "runtime/report.h", "runtime/cache/cache_dir.h", "runtime/weight_store.h",
      "loaders/network_desc.h", "loaders/weights_file.h"};
  int files = 0;
  for (const std::string& rel : files_under("runtime/storage")) {
    ++files;
    for (const std::string& inc : includes_of(rel)) {
      const bool project = starts(inc, "runtime/") || starts(inc, "loaders/") || starts(inc, "kernels/") ||
                           starts(inc, "tools/");
      const bool ok = starts(inc, "runtime/core/") || starts(inc, "runtime/storage/") || allowed.count(inc) > 0;
      EXPECT_TRUE(!project || ok) << rel << " includes " << inc;
      EXPECT_EQ(inc.find("cuda"), std::string::npos) << rel << " includes " << inc;
    }
  }
  EXPECT_GE(files, 4);
}

// The compile step is pure: no engine, no backend, no storage I/O, no device.
TEST(Dependencies, CompileStepIsPure) {
  int files = 0;
  for (const std::string& rel : files_under("runtime/compile")) {
    ++files;
    for (const std::string& h : closure(rel)) {
      EXPECT_FALSE(starts(h, "runtime/cuda/") || starts(h, "runtime/cpu/") || starts(h, "runtime/storage/") ||
                   h == "runtime/engine.h" || h == "runtime/backend.h" || h.find("cuda") != std::string::npos)
          << rel << " reaches " << h;
    }
  }
  EXPECT_GE(files, 8);
}

// Engines execute a compiled model: nothing an engine includes reaches the session
// options (CompiledModel::options is an incomplete type there, so reading one of its
// members does not compile), and no engine source names the options or the network
// description.
TEST(Dependencies, EnginesNeverSeeOptions) {
  int engine_files = 0;
  for (const char* dir : {"runtime/cuda", "runtime/cpu"})
    for (const std::string& rel : files_under(dir)) {
      if (rel == "runtime/cpu/cpu_threads.cpp" || rel == "runtime/cpu/cpu_threads.h") continue;  // the session's
      ++engine_files;
      const std::string text = read_text(test::source_file(rel));
      EXPECT_EQ(text.find("SessionOptions"), std::string::npos) << rel;
      EXPECT_EQ(text.find("NetworkDesc"), std::string::npos) << rel;
      for (const std::string& h : closure(rel)) {
        EXPECT_NE(h, "runtime/options.h") << rel << " reaches " << h;
        EXPECT_NE(h, "runtime/compile/compile.h") << rel << " reaches " << h;
      }
    }
  EXPECT_GE(engine_files, 10);
}

// The session and the runtime of several models create engines, targets and shared
// memory through runtime/backend.h and talk to engines through their facets: they name
// no concrete engine.
TEST(Dependencies, SessionAndRuntimeSeeNoConcreteEngine) {
  std::vector<std::string> files = files_under("runtime/multi");
  for (const char* f : {"runtime/session.cpp", "runtime/session_open.cpp", "runtime/session.h"}) files.push_back(f);
  for (const std::string& rel : files) {
    for (const std::string& inc : includes_of(rel))
      EXPECT_FALSE(starts(inc, "runtime/cuda/") || starts(inc, "runtime/cpu/cpu_engine")) << rel << " includes " << inc;
    const std::string text = read_text(test::source_file(rel));
    for (const char* name : {"CudaEngine", "CpuEngine", "DLR_HAVE_CUDA"})
      EXPECT_EQ(text.find(name), std::string::npos) << rel << " names " << name;
  }
}

// The library speaks of its options by their names (weight_budget, weights_from): no string
// literal under runtime/ names a command-line flag ("--weight-budget"); the tools add their
// flags. Naming the dlrun tool's own command (dlrun --prepare) is allowed.
TEST(Dependencies, LibraryMessagesNameOptionsNotFlags) {
  static const std::regex literal(R"re("((?:[^"\\\n]|\\.)*)")re"), flag(R"re((^|[^-\w])--[a-z])re");
  for (const std::string& rel : files_under("runtime")) {
    const std::string ext = fs::path(rel).extension().string();
    if (ext != ".cpp" && ext != ".h" && ext != ".cu" && ext != ".cuh") continue;
    std::istringstream lines(read_text(test::source_file(rel)));
    std::string line;
    for (int n = 1; std::getline(lines, line); ++n) {
      const size_t code = line.find_first_not_of(" \t");
      if (code == std::string::npos || line.compare(code, 2, "//") == 0) continue;
      for (auto it = std::sregex_iterator(line.begin(), line.end(), literal); it != std::sregex_iterator(); ++it) {
        const std::string text = std::regex_replace((*it)[1].str(), std::regex("dlrun --prepare"), "");
        EXPECT_FALSE(std::regex_search(text, flag)) << rel << ":" << n << ": " << line;
      }
    }
  }
}

}  // namespace
}  // namespace dlr
