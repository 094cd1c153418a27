// The tools' --help layout: CLI11's, with every line at most kHelpColumns wide. An
// option's description starts at the formatter's column (on the next line where the
// option's name is wider) and wraps at word boundaries; the app's description too.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>

namespace dlr::tools {

constexpr size_t kHelpColumns = 100;

// `text` in lines of at most `width` columns, broken at spaces (a word longer than the
// width stays whole): the first line continues a line at `start_column`, each further one
// is indented by `indent` spaces; existing line breaks are kept. No trailing newline.
std::string wrap_text(const std::string& text, size_t width, size_t indent, size_t start_column);

class HelpFormatter : public CLI::Formatter {
 public:
  HelpFormatter();
  std::string make_option(const CLI::Option* opt, bool is_positional) const override;
  std::string make_description(const CLI::App* app) const override;
};

std::shared_ptr<HelpFormatter> help_formatter();

}  // namespace dlr::tools
