#include "runtime/core/log.h"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <memory>
#include <mutex>

namespace dlr {
namespace {

// One sink for the library's logger: stderr (coloured when a terminal) or the
// application's callback. base_sink's mutex guards m_callback.
class DispatchSink final : public spdlog::sinks::base_sink<std::mutex> {
 public:
  DispatchSink() : m_stderr(std::make_shared<spdlog::sinks::stderr_color_sink_st>()) {
    m_stderr->set_pattern("[dlrun] [%^%l%$] %v");
  }
  void set_callback(LogCallback cb) {
    std::lock_guard<std::mutex> lock(mutex_);
    m_callback = std::move(cb);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    if (m_callback) {
      m_callback(msg.level, std::string(msg.payload.data(), msg.payload.size()));
      return;
    }
    m_stderr->log(msg);
  }
  void flush_() override { m_stderr->flush(); }

 private:
  std::shared_ptr<spdlog::sinks::stderr_color_sink_st> m_stderr;
  LogCallback m_callback;
};

struct Logging {
  std::shared_ptr<DispatchSink> sink = std::make_shared<DispatchSink>();
  spdlog::logger log{"dlrun", sink};
  Logging() {
    log.set_level(spdlog::level::warn);
    log.flush_on(spdlog::level::warn);
    if (const char* env = std::getenv("DLR_LOG_LEVEL")) set_level(env);
  }
  bool set_level(const std::string& level) {
    auto lvl = spdlog::level::from_str(level);
    if (lvl == spdlog::level::off && level != "off") return false;
    log.set_level(lvl);
    return true;
  }
};

Logging& logging() {
  static Logging* l = new Logging();  // never destroyed: logging stays valid during static destruction
  return *l;
}

}  // namespace

spdlog::logger& logger() { return logging().log; }

bool set_log_level(const std::string& level) { return logging().set_level(level); }
void set_log_level(spdlog::level::level_enum level) { logging().log.set_level(level); }
spdlog::level::level_enum log_level() { return logging().log.level(); }

void set_log_callback(LogCallback callback) { logging().sink->set_callback(std::move(callback)); }

void init_logging() { logging(); }

}  // namespace dlr
