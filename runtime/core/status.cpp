#include "runtime/core/status.h"

namespace dlr {

const char* status_code_name(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "ok";
    case StatusCode::kInvalidArgument: return "invalid argument";
    case StatusCode::kParseError: return "parse error";
    case StatusCode::kUnsupported: return "unsupported";
    case StatusCode::kIoError: return "i/o error";
    case StatusCode::kOutOfMemory: return "out of memory";
    case StatusCode::kCudaError: return "CUDA error";
    case StatusCode::kCudnnError: return "cuDNN error";
    case StatusCode::kInternal: return "internal error";
  }
  return "unknown";
}

std::string printable(const std::string& text) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (char ch : text) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

std::string Status::to_string() const {
  if (ok()) return "ok";
  return std::string(status_code_name(m_code)) + ": " + m_message;
}

}  // namespace dlr
