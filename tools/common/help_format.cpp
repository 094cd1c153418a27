#include "tools/common/help_format.h"

#include <sstream>
#include <vector>

namespace dlr::tools {
namespace {

constexpr size_t kDescriptionColumn = 30;  // where option descriptions start (CLI11's default)

std::vector<std::string> words_of(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

}  // namespace

std::string wrap_text(const std::string& text, size_t width, size_t indent, size_t start_column) {
  std::string out;
  size_t column = start_column;  // of the line being written
  std::istringstream lines(text);
  bool first_line = true;
  for (std::string line; std::getline(lines, line);) {
    if (!first_line) out += "\n" + std::string(indent, ' '), column = indent;
    first_line = false;
    bool line_start = true;
    for (const std::string& w : words_of(line)) {
      if (!line_start && column + 1 + w.size() > width) {
        out += "\n" + std::string(indent, ' ');
        column = indent;
        line_start = true;
      }
      if (!line_start) out += ' ', ++column;
      out += w;
      column += w.size();
      line_start = false;
    }
  }
  return out;
}

HelpFormatter::HelpFormatter() { column_width(kDescriptionColumn); }

std::string HelpFormatter::make_option(const CLI::Option* opt, bool is_positional) const {
  const std::string name = "  " + make_option_name(opt, is_positional) + make_option_opts(opt);
  const std::string desc = make_option_desc(opt);
  if (desc.empty()) return name + "\n";
  const size_t col = get_column_width();
  std::string out = name;
  if (name.size() + 1 > col) out += "\n" + std::string(col, ' ');
  else out += std::string(col - name.size(), ' ');
  return out + wrap_text(desc, kHelpColumns, col, col) + "\n";
}

std::string HelpFormatter::make_description(const CLI::App* app) const {
  const std::string desc = app->get_description();
  return desc.empty() ? std::string() : wrap_text(desc, kHelpColumns, 0, 0) + "\n";
}

std::shared_ptr<HelpFormatter> help_formatter() { return std::make_shared<HelpFormatter>(); }

}  // namespace dlr::tools
