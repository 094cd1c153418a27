#include "tools/common/inputs.h"

#include <glob.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace dlr::tools {
namespace fs = std::filesystem;

const std::vector<std::string>& image_extensions() {
  static const std::vector<std::string> e = {".jpg", ".jpeg", ".png", ".bmp", ".ppm", ".pgm", ".pbm", ".pnm",
                                             ".tif", ".tiff", ".webp", ".jp2", ".sr",  ".ras", ".dib", ".jpe"};
  return e;
}

const std::vector<std::string>& video_extensions() {
  static const std::vector<std::string> e = {".mp4", ".avi", ".mkv", ".mov", ".webm", ".m4v", ".mpg",
                                             ".mpeg", ".wmv", ".flv", ".3gp", ".ts",  ".mjpeg", ".mjpg"};
  return e;
}

namespace {

std::string lower_extension(const std::string& path) {
  std::string ext = fs::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return char(std::tolower(c)); });
  return ext;
}

bool has_extension(const std::string& path, const std::vector<std::string>& list) {
  const std::string ext = lower_extension(path);
  return !ext.empty() && std::find(list.begin(), list.end(), ext) != list.end();
}

bool has_glob_chars(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

InputItem file_item(const std::string& path) {
  InputItem it;
  if (is_stream_input(path)) {
    it.kind = InputKind::kStream;
    it.path = hide_credentials(path);
    it.source = path;
    return it;
  }
  it.kind = is_video_path(path) ? InputKind::kVideo : InputKind::kImage;
  it.path = path;
  return it;
}

Status add_directory(const std::string& dir, bool recursive, std::vector<InputItem>* out) {
  std::vector<std::string> found;
  std::error_code ec;
  auto add = [&](const fs::directory_entry& e) {
    std::error_code fec;
    if (e.is_regular_file(fec) && is_image_path(e.path().string())) found.push_back(e.path().string());
  };
  if (recursive) {
    fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) add(*it);
  } else {
    fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
    for (; !ec && it != end; it.increment(ec)) add(*it);
  }
  if (ec) return io_error(dir + ": cannot list the directory (" + ec.message() + ")");
  if (found.empty())
    return invalid_argument(dir + ": no image files in the directory" +
                            std::string(recursive ? " or below it" : " (--recursive looks below it)") +
                            " (extensions .jpg .jpeg .png .bmp .ppm ...)");
  std::sort(found.begin(), found.end());
  for (const std::string& p : found) out->push_back(file_item(p));
  return Status();
}

// The directory glob() could not open and why (glob's error callback takes no context).
thread_local std::string t_glob_dir;
thread_local int t_glob_errno = 0;

int note_glob_error(const char* path, int err) {
  t_glob_dir = path;
  t_glob_errno = err;
  return 1;  // stop: the pattern's directory is missing or unreadable
}

Status add_glob(const std::string& pattern, std::vector<InputItem>* out) {
  glob_t g{};
  t_glob_dir.clear(), t_glob_errno = 0;
  const int rc = ::glob(pattern.c_str(), GLOB_ERR, note_glob_error, &g);
  std::vector<std::string> matches;
  if (rc == 0)
    for (size_t i = 0; i < g.gl_pathc; ++i) matches.emplace_back(g.gl_pathv[i]);  // glob sorts them
  globfree(&g);
  if (rc == GLOB_NOMATCH || (rc == 0 && matches.empty())) return invalid_argument(pattern + ": no file matches");
  if (rc == GLOB_ABORTED && (t_glob_errno == ENOENT || t_glob_errno == ENOTDIR))
    return invalid_argument(pattern + ": no such directory " + t_glob_dir);
  if (rc == GLOB_ABORTED)
    return io_error(pattern + ": cannot read the directory " + t_glob_dir + " (" + std::strerror(t_glob_errno) + ")");
  if (rc != 0) return io_error(pattern + ": glob failed");
  for (const std::string& m : matches) {
    std::error_code ec;
    if (fs::is_directory(m, ec)) continue;  // a pattern names files; directories it happens to match are skipped
    out->push_back(file_item(m));
  }
  return Status();
}

Status add_list(const std::vector<std::string>& paths, std::vector<InputItem>* out) {
  for (const std::string& p : paths) out->push_back(file_item(p));
  return Status();
}

}  // namespace

bool is_image_path(const std::string& path) { return has_extension(path, image_extensions()); }
bool is_video_path(const std::string& path) { return has_extension(path, video_extensions()); }

Expected<std::vector<std::string>> read_path_list(std::istream& in, const std::string& what) {
  std::vector<std::string> paths;
  std::string line;
  while (std::getline(in, line)) {
    const size_t b = line.find_first_not_of(" \t\r\n");
    if (b == std::string::npos || line[b] == '#') continue;
    const size_t e = line.find_last_not_of(" \t\r\n");
    paths.push_back(line.substr(b, e - b + 1));
  }
  if (in.bad()) return io_error(what + ": read failed");
  if (paths.empty()) return invalid_argument(what + ": lists no paths (one image or video path per line)");
  return paths;
}

Expected<std::vector<InputItem>> expand_inputs(const std::vector<std::string>& args, const InputOptions& options,
                                               std::istream& stdin_paths) {
  std::vector<InputItem> out;
  bool stdin_used = false;
  for (const std::string& a : args) {
    if (a.empty()) return invalid_argument("an input argument is empty");
    if (a == "-") {
      if (stdin_used) return invalid_argument("-: standard input can be read only once");
      stdin_used = true;
      DLR_ASSIGN_OR_RETURN(std::vector<std::string> paths, read_path_list(stdin_paths, "standard input (-)"));
      DLR_RETURN_IF_ERROR(add_list(paths, &out));
      continue;
    }
    if (a[0] == '@') {
      const std::string file = a.substr(1);
      std::ifstream f(file);
      if (!f) return io_error(file + ": cannot open the list file (" + a + ")");
      DLR_ASSIGN_OR_RETURN(std::vector<std::string> paths, read_path_list(f, file));
      DLR_RETURN_IF_ERROR(add_list(paths, &out));
      continue;
    }
    if (is_stream_input(a)) {  // a URL may hold '?', a pipeline '[': neither is a glob
      out.push_back(file_item(a));
      continue;
    }
    std::error_code ec;
    if (fs::is_directory(a, ec)) {
      DLR_RETURN_IF_ERROR(add_directory(a, options.recursive, &out));
      continue;
    }
    if (has_glob_chars(a) && !fs::exists(a, ec)) {
      DLR_RETURN_IF_ERROR(add_glob(a, &out));
      continue;
    }
    out.push_back(file_item(a));
  }
  if (out.empty())
    return invalid_argument("no input: give images, videos, streams (URL or pipeline), directories, @LIST, - or "
                            "--camera N");
  return out;
}

}  // namespace dlr::tools
