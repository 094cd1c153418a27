#include "runtime/cache/cache_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace dlr {
namespace {

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

// mkdir -p with mode 0700 for the directories it creates.
Status make_dirs(const std::string& dir) {
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    const std::string part = dir.substr(0, i);
    struct stat st {};
    if (::stat(part.c_str(), &st) == 0) {
      if (!S_ISDIR(st.st_mode))
        return io_error("cache directory " + dir + ": " + part +
                        " exists and is not a directory (set DLR_CACHE_DIR to a writable directory)");
      continue;
    }
    if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST)
      return io_error("cache directory " + dir + ": cannot create " + part + ": " + std::strerror(errno) +
                      " (set DLR_CACHE_DIR to a writable directory)");
  }
  return Status();
}

}  // namespace

Expected<std::string> user_cache_dir() {
  std::string dir = env("DLR_CACHE_DIR");
  if (dir.empty()) {
    const std::string xdg = env("XDG_CACHE_HOME");
    const std::string home = env("HOME");
    if (!xdg.empty())
      dir = xdg + "/dlrun";
    else if (!home.empty())
      dir = home + "/.cache/dlrun";
    else
      return io_error("no cache directory: neither DLR_CACHE_DIR, XDG_CACHE_HOME nor HOME is set");
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  DLR_RETURN_IF_ERROR(make_dirs(dir));
  return dir;
}

}  // namespace dlr
