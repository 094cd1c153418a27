// Parsing a tool's command line (CLI11) the way every tool reports its errors: --help (100
// columns wide at most) and --version on stdout, exit 0; a parse error as one line "<tool>: <what>" on stderr, exit 2
// (tool_support.h's kExitUsage). A Darknet spelling (-thresh, -ext_output, -dont_show, -i 0)
// gets a hint naming the tool's own flag instead of CLI11's message.
#pragma once

#include <string>
#include <vector>

#include <CLI/CLI.hpp>

namespace dlr::tools {

// Parses argv into `app`, whose --help then fits 100 columns (help_format.h). Returns -1 when the tool goes on; otherwise the exit code (0 after
// --help or --version, kExitUsage after the one-line error).
int parse_command_line(CLI::App& app, int argc, char** argv, const char* tool);

// The one-line message of a parse error of `args` (argv without the program name): the hint
// for the first Darknet-style option among `args` (before "--") that `app` does not take,
// else CLI11's message `what` on one line. Without the "<tool>: " prefix.
std::string parse_error_line(const CLI::App& app, const std::vector<std::string>& args, const std::string& what,
                             const char* tool);

// The hint for one argument spelt as Darknet spells its options ("-thresh", "-ext_output",
// "-i"), or "" when `arg` is not one: "unknown option -thresh (Darknet spelling; dlrun takes
// --thresh)" when `app` has the flag, else what Darknet's option is in `tool`.
std::string darknet_option_hint(const CLI::App& app, const std::string& arg, const char* tool);

}  // namespace dlr::tools
