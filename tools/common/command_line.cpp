#include "tools/common/command_line.h"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "tools/common/help_format.h"
#include "tools/common/tool_support.h"

namespace dlr::tools {
namespace {

// Darknet's options whose dlrun counterpart is not the same name with "--" and '-' for '_':
// {Darknet's spelling, the flag the app must have for the hint ("" none), the hint}.
struct DarknetOption {
  const char* spelling;
  const char* needs;
  const char* hint;
};
constexpr DarknetOption kDarknetOptions[] = {
    {"-dont_show", "", "opens a window only with --show: leave it out"},
    {"-i", "--device", "takes --device cuda; CUDA_VISIBLE_DEVICES=N picks GPU N"},
    {"-c", "--camera", "takes --camera N"},
    {"-out", "--darknet-json", "takes --darknet-json FILE"},
    {"-out_filename", "--out-video", "takes --out-video FILE"},
    {"-letter_box", "--letterbox", "takes --letterbox"},
    {"-json_port", "--json", "serves no port; --json prints JSON on stdout"},
    {"-mjpeg_port", "--out-video", "serves no port; --out-video FILE writes the annotated frames"},
};

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

bool has_option(const CLI::App& app, const std::string& name) { return app.get_option_no_throw(name) != nullptr; }

}  // namespace

std::string darknet_option_hint(const CLI::App& app, const std::string& arg, const char* tool) {
  // A single dash and a letter: Darknet's spelling; a negative number or an option of the app's is not.
  if (arg.size() < 2 || arg[0] != '-' || !std::isalpha(static_cast<unsigned char>(arg[1])) || has_option(app, arg))
    return "";
  const std::string head = "unknown option " + arg + " (Darknet spelling; " + tool + " ";
  for (const DarknetOption& d : kDarknetOptions)
    if (arg == d.spelling && (*d.needs == '\0' || has_option(app, d.needs))) return head + d.hint + ")";
  if (arg.size() < 3) return "";  // -x: one of the app's short flags misspelt, not Darknet's
  std::string flag = "-" + arg;
  for (char& c : flag)
    if (c == '_') c = '-';
  return has_option(app, flag) ? head + "takes " + flag + ")" : "";
}

std::string parse_error_line(const CLI::App& app, const std::vector<std::string>& args, const std::string& what,
                             const char* tool) {
  for (const std::string& a : args) {
    if (a == "--") break;
    const std::string hint = darknet_option_hint(app, a, tool);
    if (!hint.empty()) return hint;
  }
  return one_line(what);
}

int parse_command_line(CLI::App& app, int argc, char** argv, const char* tool) {
  app.formatter(help_formatter());
  try {
    app.parse(argc, argv);
    return -1;
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e) == 0 ? kExitOk : kExitUsage;
    const std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
    std::fprintf(stderr, "%s: %s\n", tool, parse_error_line(app, args, e.what(), tool).c_str());
    return kExitUsage;
  }
}

}  // namespace dlr::tools
