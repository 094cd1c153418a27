#include "tests/common/test_paths.h"

#include <cstdio>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

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

// Owns the scratch directory: created on first use, removed (recursively) when the
// process exits normally. Only the process that created it removes it (a forked
// child that exits must not delete its parent's files).
class ScratchDir {
 public:
  ScratchDir() {
    std::error_code ec;
    std::filesystem::path base = std::filesystem::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / "dlr_test_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) != nullptr) {
      m_path = tmpl;
      m_owner = ::getpid();
    }
  }
  ~ScratchDir() {
    if (m_path.empty() || ::getpid() != m_owner) return;
    std::error_code ec;
    std::filesystem::remove_all(m_path, ec);
  }
  const std::string& path() const { return m_path; }

 private:
  std::string m_path;
  pid_t m_owner = 0;
};
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

std::string required_shared_file(const std::string& rel) {
  const std::string p = shared_file(rel);
  if (p.empty() && !shared_dir().empty()) ADD_FAILURE() << "shared data folder " << shared_dir() << " lacks " << rel;
  return p;
}

bool is_source_root(const std::string& dir) {
  return is_file(dir + "/CMakeLists.txt") && is_dir(dir + "/runtime") && is_dir(dir + "/docs") && is_dir(dir + "/tests");
}

std::string find_source_root(const std::vector<std::string>& starts) {
  for (const std::string& start : starts) {
    if (start.empty()) continue;
    std::error_code ec;
    std::filesystem::path p = std::filesystem::absolute(start, ec);
    if (ec) continue;
    for (; !p.empty(); p = p.parent_path()) {
      if (is_source_root(p.string())) return p.string();
      if (p == p.parent_path()) break;
    }
  }
  return "";
}

const std::string& source_dir() {
  static const std::string dir = [] {
    if (const char* env = std::getenv("DLR_SOURCE_DIR"); env && is_source_root(env)) return std::string(env);
    if (is_source_root(DLR_SOURCE_DIR)) return std::string(DLR_SOURCE_DIR);
    std::error_code ec;
    const std::string exe = std::filesystem::read_symlink("/proc/self/exe", ec).parent_path().string();
    const std::string cwd = std::filesystem::current_path(ec).string();
    const std::string found = find_source_root({exe, cwd});
    return found.empty() ? std::string(DLR_SOURCE_DIR) : found;
  }();
  return dir;
}

std::string source_file(const std::string& rel) { return source_dir() + "/" + rel; }

std::string temp_dir() {
  static const ScratchDir dir;
  if (dir.path().empty()) ADD_FAILURE() << "could not create a scratch directory (mkdtemp)";
  return dir.path();
}

std::string synthetic_dir() {
  if (const char* env = std::getenv("DLR_SYNTHETIC_DIR"); env && *env) return env;
  return DLR_SYNTHETIC_DIR;
}

std::string read_bytes(const std::string& path) {
  std::string bytes;
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return bytes;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
  std::fclose(f);
  return bytes;
}

bool write_bytes_in_place(const std::string& path, const std::string& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  if (!f) return false;
  const bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

}  // namespace dlr::test
