// Leaving a tool's device state to the end of the process.
//
// A CUDA session's teardown (device memory, pinned host stores, CUDA graphs, the cuDNN
// handle, then the CUDA runtime's own exit handlers and the context) runs after the
// last result is printed, and the operating system and the driver reclaim all of it
// when the process ends anyway. A tool that has written every output may hand its
// sessions to hold_until_exit() and end with finish_process(): when something is held,
// stdio and the library's log are flushed and the process ends at once (std::_Exit: no
// destructors, no atexit handlers); otherwise finish_process returns its argument.
// Only for the end of a tool's main: every file the tool writes must be closed before.
// DLR_FULL_EXIT=1 (the sanitizer scripts set it) keeps the full teardown.
#pragma once

#include <memory>
#include <utility>

namespace dlr::tools {

// True unless DLR_FULL_EXIT=1.
bool exit_without_teardown();

namespace detail {
struct Held {
  virtual ~Held() = default;
};
template <class T>
struct HeldObject final : Held {
  explicit HeldObject(T v) : value(std::move(v)) {}
  T value;
};
void hold(std::unique_ptr<Held> object);
}  // namespace detail

// Keeps `object` alive until the process ends (never destroyed when finish_process ends
// the process; destroyed at static destruction otherwise).
template <class T>
void hold_until_exit(T object) {
  detail::hold(std::make_unique<detail::HeldObject<T>>(std::move(object)));
}

// Asks finish_process to end the process without teardown although nothing is held (a
// process whose device state lives in the CUDA runtime itself: the context, cuDNN).
void end_without_teardown();

// The tool's exit code: ends the process with `rc` when an object is held or
// end_without_teardown() was called, else returns rc.
int finish_process(int rc);

}  // namespace dlr::tools
