// Logging: the only header that includes spdlog (header-only build).
//
// The library logs through its own logger (logger()), never spdlog's default one,
// so an application that uses spdlog itself is not affected and nothing goes to
// stdout: messages go to stderr as "[dlrun] [level] msg" (coloured on a terminal),
// or to a callback the application sets (set_log_callback). The level starts at
// "warn", or DLR_LOG_LEVEL from the environment when it names a level.
// Thread-safe: every function here may be called from any thread at any time.
#pragma once

#include <spdlog/spdlog.h>

#include <functional>
#include <string>

namespace dlr {

// The library's logger (created on first use; lives until exit).
spdlog::logger& logger();
// Sets the library's level from "trace|debug|info|warn|error|off"; false if unknown.
bool set_log_level(const std::string& level);
void set_log_level(spdlog::level::level_enum level);
spdlog::level::level_enum log_level();
// Every message at or above the level goes to `callback` (level, message without
// prefix or newline) instead of stderr; an empty function restores stderr. The
// callback runs on the thread that logs, under the logger's lock: it must not log.
using LogCallback = std::function<void(spdlog::level::level_enum, const std::string&)>;
void set_log_callback(LogCallback callback);
// Tools: the level from DLR_LOG_LEVEL (default warn). Kept for the tools; the
// library needs no initialisation.
void init_logging();

}  // namespace dlr

#define DLR_LOG_DEBUG(...) ::dlr::logger().debug(__VA_ARGS__)
#define DLR_LOG_INFO(...) ::dlr::logger().info(__VA_ARGS__)
#define DLR_LOG_WARN(...) ::dlr::logger().warn(__VA_ARGS__)
#define DLR_LOG_ERROR(...) ::dlr::logger().error(__VA_ARGS__)
