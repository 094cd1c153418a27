// Runs a tool of the build (DLR_TOOLS_DIR) through the shell and captures its
// exit code, stdout and stderr. `args` starts with the tool name and may hold
// shell redirections (e.g. "< list.txt"); run_shell takes any command line.
#pragma once

#include <sys/wait.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/common/test_paths.h"

namespace dlr::test {

struct ToolResult {
  int code = -1;
  std::string out, err;
};

// Runs a shell command line (sh -c), stderr captured through a file.
inline ToolResult run_shell(const std::string& command) {
  const std::string err_file = temp_dir() + "/stderr.txt";
  const std::string cmd = "{ " + command + "; } 2>" + err_file;
  ToolResult r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : (WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1);
  std::ifstream f(err_file);
  r.err.assign(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  return r;
}

inline ToolResult run_tool(const std::string& args) { return run_shell(std::string(DLR_TOOLS_DIR) + "/" + args); }

inline int count_lines(const std::string& s) { return int(std::count(s.begin(), s.end(), '\n')); }

inline int count_of(const std::string& s, const std::string& needle) {
  int n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + needle.size())) ++n;
  return n;
}

}  // namespace dlr::test
