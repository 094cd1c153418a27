// dlrun public API: logging. The library never writes to stdout. Its messages
// (warnings about the cfg or the weights at open, and at "info" what it opened and
// chose) go to stderr as "[dlrun] [level] message", or to the application's
// callback. The level starts at kWarn, or DLR_LOG_LEVEL (trace, debug, info, warn,
// error, off) from the environment. Process-wide; thread-safe.
#pragma once

#include <functional>
#include <string>

namespace dlrun {

enum class LogLevel { kTrace, kDebug, kInfo, kWarn, kError, kOff };

void set_log_level(LogLevel level);
LogLevel log_level();

// Messages at or above the level go to `callback` (level, one message without
// prefix or newline) instead of stderr; an empty function restores stderr. It runs
// on the thread that logs, with the logger locked: it must not call dlrun.
using LogCallback = std::function<void(LogLevel level, const std::string& message)>;
void set_log_callback(LogCallback callback);

}  // namespace dlrun
