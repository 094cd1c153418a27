#include "tools/common/streams.h"

#include <cctype>

namespace dlr::tools {

bool is_stream_url(const std::string& arg) {
  const size_t sep = arg.find("://");
  if (sep == std::string::npos || sep == 0 || !std::isalpha(static_cast<unsigned char>(arg[0]))) return false;
  for (size_t i = 1; i < sep; ++i) {
    const unsigned char c = static_cast<unsigned char>(arg[i]);
    if (!std::isalnum(c) && c != '+' && c != '-' && c != '.') return false;
  }
  return true;
}

bool is_gstreamer_pipeline(const std::string& arg) { return arg.find(" ! ") != std::string::npos; }

bool is_stream_input(const std::string& arg) { return is_gstreamer_pipeline(arg) || is_stream_url(arg); }

StreamBackend stream_backend(const std::string& arg) {
  return is_gstreamer_pipeline(arg) ? StreamBackend::kGStreamer : StreamBackend::kFFmpeg;
}

const char* backend_name(StreamBackend b) { return b == StreamBackend::kGStreamer ? "GStreamer" : "FFmpeg"; }

namespace {

bool url_char(char c) { return !std::isspace(static_cast<unsigned char>(c)) && c != '"' && c != '\''; }

// Every "scheme://user:pass@host" in `s` becomes "scheme://***@host".
std::string hide_url_userinfo(const std::string& s) {
  std::string out;
  size_t from = 0;
  for (size_t p = s.find("://"); p != std::string::npos; p = s.find("://", p + 3)) {
    const size_t start = p + 3;
    size_t end = start;
    while (end < s.size() && url_char(s[end]) && s[end] != '/' && s[end] != '?' && s[end] != '#') ++end;
    const size_t at = s.rfind('@', end == 0 ? 0 : end - 1);
    if (at == std::string::npos || at < start || at >= end) continue;
    out += s.substr(from, start - from) + "***";
    from = at;
  }
  return out + s.substr(from);
}

// The value after "NAME=" of a credential property becomes "***".
std::string hide_properties(std::string s) {
  for (const char* name : {"user-id=", "user-pw=", "proxy-id=", "proxy-pw=", "password="}) {
    const std::string key = name;
    for (size_t p = s.find(key); p != std::string::npos; p = s.find(key, p + 1)) {
      if (p > 0 && !std::isspace(static_cast<unsigned char>(s[p - 1]))) continue;  // part of another name
      const size_t v = p + key.size();
      size_t e = v;
      if (e < s.size() && (s[e] == '"' || s[e] == '\'')) {
        const size_t close = s.find(s[e], e + 1);
        e = close == std::string::npos ? s.size() : close + 1;
      } else {
        while (e < s.size() && !std::isspace(static_cast<unsigned char>(s[e]))) ++e;
      }
      s.replace(v, e - v, "***");
    }
  }
  return s;
}

}  // namespace

std::string hide_credentials(const std::string& text) { return hide_properties(hide_url_userinfo(text)); }

}  // namespace dlr::tools
