#include "tools/common/class_names.h"

#include <filesystem>
#include <fstream>

#include "runtime/session.h"

namespace dlr::tools {
namespace fs = std::filesystem;

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

Expected<std::string> data_file_names_path(const std::string& data_path) {
  std::ifstream f(data_path);
  if (!f) return io_error(data_path + ": cannot open the .data file");
  std::string line, names;
  int n = 0;
  while (std::getline(f, line)) {
    ++n;
    std::string s;
    for (char c : line)
      if (c != ' ' && c != '\t' && c != '\r' && c != '\n') s.push_back(c);
    if (s.empty() || s[0] == '#' || s[0] == ';') continue;
    const size_t eq = s.find('=');
    if (eq == std::string::npos)
      return parse_error(data_path + ":" + std::to_string(n) + ": expected key=value, got '" + line + "'");
    if (s.compare(0, eq, "names") == 0 && names.empty()) names = s.substr(eq + 1);
  }
  if (names.empty()) return parse_error(data_path + ": no names= line (the class names file of a .data file)");
  std::error_code ec;
  if (fs::path(names).is_relative() && !fs::exists(names, ec)) {
    const fs::path dir = fs::path(data_path).parent_path();
    // data/coco.names beside the .data file, else coco.names beside it (a .data copied with its names).
    for (const fs::path& p : {dir / names, dir / fs::path(names).filename()})
      if (fs::is_regular_file(p, ec)) return p.string();
  }
  return names;
}

Expected<std::vector<std::string>> read_class_names(const std::string& path) {
  if (!ends_with(path, ".data")) return read_names(path);
  DLR_ASSIGN_OR_RETURN(std::string names, data_file_names_path(path));
  auto r = read_names(names);
  if (!r.ok()) return Status(r.status().code(), r.status().message() + " (names= of " + path + ")");
  return r;
}

}  // namespace dlr::tools
