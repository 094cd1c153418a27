// Small POSIX helpers of runtime/storage: an owned file descriptor and errno as text.
// Plain C++ (no CUDA).
#pragma once

#include <cstring>
#include <string>

#include <unistd.h>

namespace dlr {

// An owned file descriptor (closed by the destructor or reset()).
class Fd {
 public:
  explicit Fd(int fd = -1) : m_fd(fd) {}
  Fd(Fd&& o) noexcept : m_fd(o.m_fd) { o.m_fd = -1; }
  Fd& operator=(Fd&& o) noexcept {
    if (this != &o) {
      reset();
      m_fd = o.m_fd;
      o.m_fd = -1;
    }
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  int get() const { return m_fd; }
  void reset() {
    if (m_fd >= 0) ::close(m_fd);
    m_fd = -1;
  }
  // Gives up ownership: returns the descriptor, which the caller closes.
  int release() {
    const int fd = m_fd;
    m_fd = -1;
    return fd;
  }

 private:
  int m_fd;
};

// "No such file or directory (errno 2)".
inline std::string errno_text(int e) { return std::string(std::strerror(e)) + " (errno " + std::to_string(e) + ")"; }

}  // namespace dlr
