#include "tools/dlrun/cache_command.h"

#include <cstdio>
#include <ctime>
#include <string>

#include "runtime/storage/prepared_cache.h"
#include "tools/common/tool_support.h"
#include "runtime/core/units.h"

namespace dlr::tools {
namespace {

constexpr const char* kTool = "dlrun";

std::string local_time(int64_t ns) {
  const std::time_t t = std::time_t(ns / 1000000000);
  std::tm tm {};
  char b[32];
  if (!localtime_r(&t, &tm) || std::strftime(b, sizeof b, "%Y-%m-%d %H:%M:%S", &tm) == 0) return "?";
  return b;
}

std::string what_it_is(const CacheEntry& e) {
  if (e.temporary)
    return e.locked ? "temporary: being written" : "temporary: left by a writer that died (removed on the next use)";
  std::string s = e.model.empty() ? std::string("?") : e.model;
  s += " " + (e.precision.empty() ? std::string("(not a valid prepared file: rebuilt when used)") : e.precision);
  return e.locked ? s + ", in use" : s;
}

int list(const std::string& dir) {
  Expected<std::vector<CacheEntry>> all = list_prepared_cache(dir);
  if (!all.ok()) return fail(kTool, all.status());
  Expected<int64_t> bound = cache_bound_bytes(-1, dir);
  if (!bound.ok()) return fail(kTool, bound.status());
  int64_t total = 0;
  for (const CacheEntry& e : *all) total += e.bytes;
  std::printf("prepared weight cache %s: %zu files, %s, bound %s (least recently used first)\n", dir.c_str(),
              all->size(), mib_text(total).c_str(), *bound == INT64_MAX ? "none" : mib_text(*bound).c_str());
  for (const CacheEntry& e : *all)
    std::printf("%s  %s  last use %s  %s\n", e.name.c_str(), mib_text(e.bytes).c_str(), local_time(e.last_use_ns).c_str(),
                what_it_is(e).c_str());
  return kExitOk;
}

int clear(const std::string& dir) {
  const ClearReport r = clear_prepared_cache(dir);
  std::printf("removed %d files (%s) from %s; kept %d in use or being written\n", r.removed,
              mib_text(r.removed_bytes).c_str(), dir.c_str(), r.kept);
  return kExitOk;
}

}  // namespace

int run_cache_command(const Args& a) {
  if (a.cache.empty()) return -1;
  if (a.cache != "list" && a.cache != "clear") {
    std::fprintf(stderr, "%s: --cache %s: expected list or clear\n", kTool, a.cache.c_str());
    return kExitUsage;
  }
  if (!a.cfg.empty() || !a.weights.empty() || !a.models.empty() || !a.inputs.empty() || !a.lists.empty()) {
    std::fprintf(stderr, "%s: --cache %s works on the prepared weight cache alone: give no model or inputs\n", kTool,
                 a.cache.c_str());
    return kExitUsage;
  }
  Expected<std::string> dir = prepared_cache_dir();
  if (!dir.ok()) return fail(kTool, dir.status());
  return a.cache == "list" ? list(*dir) : clear(*dir);
}

}  // namespace dlr::tools
