#include "runtime/cache/cache_dir.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <cstdio>
#include <fstream>

#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

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

Expected<std::string> keyed_cache_file(const std::string& subdir, const std::string& model_name,
                                       const std::string& key_text) {
  DLR_ASSIGN_OR_RETURN(std::string dir, user_cache_dir());
  dir += "/" + subdir;
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST)
    return io_error("cache directory " + dir + ": cannot create it: " + std::strerror(errno) +
                    " (set DLR_CACHE_DIR to a writable directory)");
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx",
                static_cast<unsigned long long>(XXH3_64bits(key_text.data(), key_text.size())));
  return dir + "/" + model_name + "-" + hex + ".json";
}

Status write_file_atomic(const std::string& path, const std::string& text, const std::string& what) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      return io_error(tmp + ": cannot write " + what);
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    return io_error(path + ": cannot write " + what + ": " + why);
  }
  return Status();
}

}  // namespace dlr
