// dlrun public API: errors are values. Result<T> holds a T or an Error; Status is
// the Result of a call that returns nothing. No exception crosses the API.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace dlrun {

enum class ErrorCode {
  kInvalidArgument = 1,  // a bad value: option, size, path, image
  kParseError,           // a cfg / weights / names file is malformed
  kUnsupported,          // valid Darknet input dlrun does not implement, or a backend not built
  kIoError,              // open/read/mmap failed
  kOutOfMemory,          // host or device allocation failed, or a budget is too small
  kCudaError,            // a CUDA runtime call or kernel failed
  kCudnnError,           // a cuDNN call failed
  kInternal,             // anything else
};

// "invalid argument", "parse error", "i/o error", ... (the names the runtime's Status::to_string() prints).
const char* error_code_name(ErrorCode code);

// One line naming the file, option or call and what was expected.
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
  std::string to_string() const { return std::string(error_code_name(code)) + ": " + message; }
};

// A T or an Error. value() on an error is a programming error: it prints the error
// on stderr and aborts (check ok() first).
template <class T>
class Result {
 public:
  Result(T value) : m_v(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit on purpose
  Result(Error error) : m_v(std::in_place_index<1>, std::move(error)) {}  // NOLINT

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }
  // The error; an Error with an empty message when ok().
  const Error& error() const {
    static const Error kNone{ErrorCode::kInternal, ""};
    return ok() ? kNone : std::get<1>(m_v);
  }
  T& value() & { check(); return std::get<0>(m_v); }
  const T& value() const& { check(); return std::get<0>(m_v); }
  T&& value() && { check(); return std::get<0>(std::move(m_v)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check() const {
    if (!ok()) {
      std::fprintf(stderr, "dlrun: Result::value() on error: %s\n", std::get<1>(m_v).to_string().c_str());
      std::abort();
    }
  }
  std::variant<T, Error> m_v;
};

// The result of a call that returns nothing: ok, or an Error.
class Status {
 public:
  Status() = default;
  Status(Error error) : m_ok(false), m_error(std::move(error)) {}  // NOLINT
  bool ok() const { return m_ok; }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return m_error; }

 private:
  bool m_ok = true;
  Error m_error;
};

}  // namespace dlrun
