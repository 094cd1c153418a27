// Status and Expected<T>: how errors cross every dlrun library boundary.
//
// Contract: library code never calls exit() or throws across a boundary; it
// returns a Status (or Expected<T>) whose message is one line naming the file,
// line, layer or call and what was expected. Only tools/ turn a Status into
// stderr text and an exit code.
#pragma once

#include <cassert>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <variant>

namespace dlr {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,  // a caller passed a bad value (option, size, path)
  kParseError,       // a cfg / weights / json file is malformed
  kUnsupported,      // valid Darknet input that dlrun does not implement
  kIoError,          // open/read/mmap/write failed
  kOutOfMemory,      // host or device allocation failed or budget exceeded
  kCudaError,        // a CUDA runtime call or kernel launch failed
  kCudnnError,       // a cuDNN call failed
  kInternal,         // anything else that is not a programming bug
};

const char* status_code_name(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : m_code(code), m_message(std::move(message)) {}

  static Status ok_status() { return Status(); }
  bool ok() const { return m_code == StatusCode::kOk; }
  StatusCode code() const { return m_code; }
  const std::string& message() const { return m_message; }
  // "<code name>: <message>" or "ok".
  std::string to_string() const;

 private:
  StatusCode m_code = StatusCode::kOk;
  std::string m_message;
};

inline Status invalid_argument(std::string m) { return Status(StatusCode::kInvalidArgument, std::move(m)); }
inline Status parse_error(std::string m) { return Status(StatusCode::kParseError, std::move(m)); }

// `text` with every control byte (below 0x20, and 0x7f) written as \xNN, for quoting
// untrusted input (e.g. a JSON parser's message that echoes the file) in a one-line error.
std::string printable(const std::string& text);
inline Status unsupported(std::string m) { return Status(StatusCode::kUnsupported, std::move(m)); }
inline Status io_error(std::string m) { return Status(StatusCode::kIoError, std::move(m)); }
inline Status out_of_memory(std::string m) { return Status(StatusCode::kOutOfMemory, std::move(m)); }
inline Status internal_error(std::string m) { return Status(StatusCode::kInternal, std::move(m)); }

// Expected<T>: a value or a non-ok Status.
template <class T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : m_v(std::in_place_index<0>, std::move(value)) {}  // NOLINT: implicit on purpose
  Expected(Status status) : m_v(std::in_place_index<1>, std::move(status)) {  // NOLINT
    if (std::get<1>(m_v).ok()) m_v.template emplace<1>(internal_error("Expected constructed from an ok Status"));
  }

  bool ok() const { return m_v.index() == 0; }
  explicit operator bool() const { return ok(); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<1>(m_v);
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
      std::fprintf(stderr, "dlrun: Expected::value() on error: %s\n", std::get<1>(m_v).to_string().c_str());
      std::abort();
    }
  }
  std::variant<T, Status> m_v;
};

}  // namespace dlr

#define DLR_CONCAT_INNER(a, b) a##b
#define DLR_CONCAT(a, b) DLR_CONCAT_INNER(a, b)

// Returns the Status of `expr` from the enclosing function when it is not ok.
#define DLR_RETURN_IF_ERROR(expr)                   \
  do {                                              \
    ::dlr::Status dlr_status_ = (expr);             \
    if (!dlr_status_.ok()) return dlr_status_;      \
  } while (0)

// `lhs = value of expr` or return its Status. lhs may declare a variable.
#define DLR_ASSIGN_OR_RETURN(lhs, expr) DLR_ASSIGN_OR_RETURN_IMPL(DLR_CONCAT(dlr_expected_, __LINE__), lhs, expr)
#define DLR_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  lhs = std::move(tmp).value()

// Programming errors (broken invariants) abort; they are not Status values.
#define DLR_ASSERT(cond)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      std::fprintf(stderr, "dlrun: assertion failed: %s (%s:%d)\n", #cond, __FILE__, __LINE__); \
      std::abort();                                                                        \
    }                                                                                      \
  } while (0)
