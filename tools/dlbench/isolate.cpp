#include "tools/dlbench/isolate.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "tools/dlbench/stats.h"

extern char** environ;

namespace dlr::tools {
namespace {

// The parent's arguments less the ones the child gets its own way.
// `s` is --NAME or --NAME=VALUE for one of `names`.
bool is_flag(const std::string& s, const std::vector<std::string>& names) {
  for (const std::string& n : names)
    if (s == n || s.rfind(n + "=", 0) == 0) return true;
  return false;
}

std::vector<std::string> child_args(const std::vector<std::string>& argv, int index,
                                    const std::string& synthetic_weights, const ChildArgs& more) {
  std::vector<std::string> with_value = {"--json", "--config-index"};
  with_value.insert(with_value.end(), more.strip.begin(), more.strip.end());
  std::vector<std::string> out;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (i > 0 && (s == "--isolate" || s == "--no-isolate")) continue;
    if (i > 0 && !synthetic_weights.empty() && s == "--synthetic") continue;
    if (i > 0 && is_flag(s, with_value)) {
      if (s.find('=') == std::string::npos) ++i;  // and its value
      continue;
    }
    out.push_back(s);
  }
  out.insert(out.end(), more.add.begin(), more.add.end());
  if (!synthetic_weights.empty()) {
    out.push_back("--weights");
    out.push_back(synthetic_weights);
  }
  out.push_back("--config-index");
  out.push_back(std::to_string(index));
  return out;
}

// The only element of the array `key` of the child's JSON file; an error says how the
// child ended (its wait status).
Expected<nlohmann::json> child_result(int status, const std::string& json, const std::string& key) {
  if (WIFSIGNALED(status)) return internal_error("its process was killed by signal " + std::to_string(WTERMSIG(status)));
  const int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream f(json);
  if (!f) return internal_error("its process exited with code " + std::to_string(code) + " and wrote no result");
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  nlohmann::json out;
  if (!j.is_discarded() && j.contains(key) && j[key].is_object()) {
    out = j[key];
  } else if (j.is_discarded() || !j.contains(key) || !j[key].is_array() || j[key].size() != 1) {
    return internal_error("failed in its own process (exit code " + std::to_string(code) +
                          ", no result row; its message is above)");
  } else {
    out = j[key][0];
  }
  if (out.is_object() && j.contains("process_clock") && j["process_clock"].is_object())
    out["process_clock"] = j["process_clock"];
  return out;
}

}  // namespace

Expected<nlohmann::json> run_self_in_child(const std::vector<std::string>& args_in, const std::string& key) {
  static int children = 0;  // a JSON file of its own per child of this process
  const std::string json =
      "/tmp/dlbench-" + std::to_string(::getpid()) + "-child" + std::to_string(children++) + ".json";
  std::remove(json.c_str());
  std::vector<std::string> args = args_in;
  args.push_back("--json");
  args.push_back(json);
  std::vector<char*> cargs;
  for (const std::string& s : args) cargs.push_back(const_cast<char*>(s.c_str()));
  cargs.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  if (posix_spawn_file_actions_init(&actions) != 0) return internal_error("posix_spawn_file_actions_init failed");
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const double spawn_ms = steady_clock_ms();
  const int rc = posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, cargs.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    return internal_error(std::string("could not start its own process (/proc/self/exe): ") + std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return internal_error(std::string("waitpid failed: ") + std::strerror(errno));
  }
  const double reaped_ms = steady_clock_ms();
  Expected<nlohmann::json> result = child_result(status, json, key);
  if (result.ok() && result->is_object()) {
    (*result)["process_clock"]["spawn_ms"] = spawn_ms;
    (*result)["process_clock"]["reaped_ms"] = reaped_ms;
  }
  std::remove(json.c_str());
  return result;
}

Expected<nlohmann::json> run_config_in_child(const std::vector<std::string>& argv, int index,
                                             const std::string& synthetic_weights, const ChildArgs& more) {
  return run_self_in_child(child_args(argv, index, synthetic_weights, more), "results");
}

}  // namespace dlr::tools
