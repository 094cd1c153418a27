#include "tools/common/process_exit.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <vector>

#include "runtime/core/log.h"

namespace dlr::tools {
namespace {

std::vector<std::unique_ptr<detail::Held>>& held() {
  static std::vector<std::unique_ptr<detail::Held>> objects;
  return objects;
}

bool& asked() {  // set by end_without_teardown(), so by every hold as well
  static bool ask = false;
  return ask;
}

}  // namespace

bool exit_without_teardown() {
  const char* full = std::getenv("DLR_FULL_EXIT");
  return !(full && std::strcmp(full, "1") == 0);
}

void end_without_teardown() { asked() = true; }

void detail::hold(std::unique_ptr<Held> object) {
  held().push_back(std::move(object));
  end_without_teardown();
}

int finish_process(int rc) {
  if (!asked()) return rc;
  logger().flush();
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}

}  // namespace dlr::tools
