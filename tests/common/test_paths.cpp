#include "tests/common/test_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "runtime/core/log.h"

namespace dlr::test {
namespace {

// Tests log like the tools: warnings and errors only, unless DLR_LOG_LEVEL says otherwise.
struct LogInit {
  LogInit() { init_logging(); }
} g_log_init;

bool is_dir(const std::string& p) {
  struct stat st;
  return !p.empty() && ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}
bool is_file(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}
}  // namespace

const std::string& shared_dir() {
  static const std::string dir = [] {
    if (const char* env = std::getenv("DLR_SHARED_DIR"); env && is_dir(env)) return std::string(env);
    for (const char* cand : {DLR_SHARED_DIR, "/work/shared"})
      if (is_dir(cand)) return std::string(cand);
    return std::string();
  }();
  return dir;
}

std::string shared_file(const std::string& rel) {
  if (shared_dir().empty()) return "";
  std::string p = shared_dir() + "/" + rel;
  return is_file(p) ? p : "";
}

std::string source_file(const std::string& rel) { return std::string(DLR_SOURCE_DIR) + "/" + rel; }

std::string temp_dir() {
  static const std::string dir = [] {
    std::string d = std::string(DLR_BINARY_DIR) + "/test_tmp/" + std::to_string(::getpid());
    std::string cmd = "mkdir -p '" + d + "'";
    if (std::system(cmd.c_str()) != 0) return std::string("/tmp");
    return d;
  }();
  return dir;
}

}  // namespace dlr::test
