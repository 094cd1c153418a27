// Logging: the only header that includes spdlog (header-only build).
// Logs go to stderr; results go to stdout (tools decide what to print).
#pragma once

#include <spdlog/spdlog.h>

namespace dlr {

// Sets the global level from "trace|debug|info|warn|error|off"; false if unknown.
bool set_log_level(const std::string& level);
// Makes the default logger write to stderr with a short "[dlrun] [level] msg" pattern.
void init_logging();

}  // namespace dlr

#define DLR_LOG_DEBUG(...) spdlog::debug(__VA_ARGS__)
#define DLR_LOG_INFO(...) spdlog::info(__VA_ARGS__)
#define DLR_LOG_WARN(...) spdlog::warn(__VA_ARGS__)
#define DLR_LOG_ERROR(...) spdlog::error(__VA_ARGS__)
