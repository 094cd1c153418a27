// dlrun public logging over runtime/core/log.h.
#include "dlrun/log.h"

#include "runtime/core/log.h"

namespace dlrun {
namespace {

spdlog::level::level_enum to_spd(LogLevel l) {
  switch (l) {
    case LogLevel::kTrace: return spdlog::level::trace;
    case LogLevel::kDebug: return spdlog::level::debug;
    case LogLevel::kInfo: return spdlog::level::info;
    case LogLevel::kWarn: return spdlog::level::warn;
    case LogLevel::kError: return spdlog::level::err;
    case LogLevel::kOff: return spdlog::level::off;
  }
  return spdlog::level::warn;
}

LogLevel from_spd(spdlog::level::level_enum l) {
  switch (l) {
    case spdlog::level::trace: return LogLevel::kTrace;
    case spdlog::level::debug: return LogLevel::kDebug;
    case spdlog::level::info: return LogLevel::kInfo;
    case spdlog::level::warn: return LogLevel::kWarn;
    case spdlog::level::err: return LogLevel::kError;
    case spdlog::level::critical: return LogLevel::kError;
    default: return LogLevel::kOff;
  }
}

}  // namespace

void set_log_level(LogLevel level) { dlr::set_log_level(to_spd(level)); }
LogLevel log_level() { return from_spd(dlr::log_level()); }

void set_log_callback(LogCallback callback) {
  if (!callback) {
    dlr::set_log_callback(nullptr);
    return;
  }
  dlr::set_log_callback([cb = std::move(callback)](spdlog::level::level_enum l, const std::string& m) {
    try {
      cb(from_spd(l), m);
    } catch (...) {
      // An exception from the application's callback must not unwind through dlrun.
    }
  });
}

}  // namespace dlrun
