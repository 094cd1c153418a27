#include "runtime/core/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>

namespace dlr {

void init_logging() {
  static bool done = false;
  if (done) return;
  done = true;
  auto logger = spdlog::stderr_color_mt("dlrun");
  logger->set_pattern("[dlrun] [%^%l%$] %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::warn);
  if (const char* env = std::getenv("DLR_LOG_LEVEL")) set_log_level(env);
}

bool set_log_level(const std::string& level) {
  auto lvl = spdlog::level::from_str(level);
  if (lvl == spdlog::level::off && level != "off") return false;
  spdlog::set_level(lvl);
  return true;
}

}  // namespace dlr
