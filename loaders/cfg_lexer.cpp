#include "loaders/cfg_lexer.h"

#include "runtime/core/fault_injection.h"

#include <cctype>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <cstdio>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dlr {

const CfgOption* CfgSection::find(const std::string& key) const {
  for (const CfgOption& o : options)
    if (o.key == key) return &o;
  return nullptr;
}

namespace {

// Darknet's strip(): removes every whitespace character from the line.
std::string strip_all_space(const std::string& line) {
  std::string out;
  out.reserve(line.size());
  for (char ch : line)
    if (!std::isspace(static_cast<unsigned char>(ch))) out.push_back(ch);
  return out;
}

bool valid_section_name(const std::string& s) {
  if (s.empty()) return false;
  for (char ch : s)
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '-')) return false;
  return true;
}

}  // namespace

Expected<std::vector<CfgSection>> lex_cfg_text(const std::string& text, const std::string& name) {
  std::vector<CfgSection> sections;
  size_t pos = 0;
  int line_no = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    const std::string raw = text.substr(pos, end - pos);
    pos = end + 1;
    ++line_no;
    // A control byte (NUL included) would cut or garble every message that quotes the line.
    for (size_t col = 0; col < raw.size(); ++col) {
      const unsigned char ch = static_cast<unsigned char>(raw[col]);
      if ((ch < 0x20 && !std::isspace(ch)) || ch == 0x7f) {
        char hex[8];
        std::snprintf(hex, sizeof(hex), "0x%02x", ch);
        return parse_error(name + ":" + std::to_string(line_no) + ": control character " + hex + " at column " +
                           std::to_string(col + 1) + ": expected text (is this a .cfg file?)");
      }
    }

    const std::string line = strip_all_space(raw);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const std::string where = name + ":" + std::to_string(line_no) + ": ";

    if (line[0] == '[') {
      if (line.back() != ']' || !valid_section_name(line.substr(1, line.size() - 2)))
        return parse_error(where + "'" + line + "': expected a section header '[name]' alone on its line");
      CfgSection s;
      s.name = line.substr(1, line.size() - 2);
      s.line = line_no;
      sections.push_back(std::move(s));
      continue;
    }

    const size_t eq = line.find('=');
    if (eq == std::string::npos)
      return parse_error(where + "'" + line + "': expected 'key=value', '[section]' or a comment ('#' or ';')");
    if (eq == 0) return parse_error(where + "'" + line + "': expected a key before '='");
    if (sections.empty())
      return parse_error(where + "'" + line + "': option before the first section (expected '[net]' first)");

    CfgOption opt;
    opt.key = line.substr(0, eq);
    opt.value = line.substr(eq + 1);
    opt.line = line_no;
    CfgSection& cur = sections.back();
    if (cur.find(opt.key) != nullptr)
      cur.duplicates.push_back(std::move(opt));
    else
      cur.options.push_back(std::move(opt));
  }
  return sections;
}

namespace {

// The part of a value before an inline '#' comment.
std::string before_comment(const std::string& v) { return v.substr(0, v.find('#')); }

bool parse_int_token(const std::string& t, int* out) {
  if (t.empty()) return false;
  size_t i = (t[0] == '+' || t[0] == '-') ? 1 : 0;
  if (i == t.size()) return false;
  for (size_t k = i; k < t.size(); ++k)
    if (!std::isdigit(static_cast<unsigned char>(t[k]))) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (errno != 0 || v < INT_MIN || v > INT_MAX) return false;
  *out = static_cast<int>(v);
  return true;
}

bool parse_float_token(const std::string& t, float* out) {
  if (t.empty()) return false;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (end != t.c_str() + t.size() || !std::isfinite(v) || std::fabs(v) > FLT_MAX) return false;
  *out = static_cast<float>(v);
  return true;
}

template <class T, class F>
bool parse_list(const std::string& value, std::vector<T>* out, F parse_one) {
  const std::string v = before_comment(value);
  if (v.empty()) return false;
  std::vector<T> items;
  size_t start = 0;
  while (true) {
    const size_t comma = v.find(',', start);
    const std::string tok = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    T x{};
    if (!parse_one(tok, &x)) return false;
    items.push_back(x);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  *out = std::move(items);
  return true;
}

}  // namespace

bool parse_cfg_int(const std::string& value, int* out) { return parse_int_token(before_comment(value), out); }
bool parse_cfg_float(const std::string& value, float* out) { return parse_float_token(before_comment(value), out); }
bool parse_cfg_int_list(const std::string& value, std::vector<int>* out) {
  return parse_list(value, out, parse_int_token);
}
bool parse_cfg_float_list(const std::string& value, std::vector<float>* out) {
  return parse_list(value, out, parse_float_token);
}

Status read_text_file(const std::string& path, std::string* out, uint64_t max_bytes) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below.
  int fd = -1;
  do {
    fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return io_error(path + ": cannot open: " + std::strerror(errno));
  if (fault::hit("file_read")) {
    ::close(fd);
    return io_error(path + ": cannot read: " + std::strerror(EIO) + fault::tag("file_read"));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return io_error(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return io_error(path + ": not a regular file (" + file_type_name(st.st_mode) + "); expected a file");
  if (static_cast<uint64_t>(st.st_size) > max_bytes)
    return io_error(path + ": file has " + std::to_string(st.st_size) + " bytes; expected at most " +
                    std::to_string(max_bytes));
  std::string data;
  data.reserve(static_cast<size_t>(st.st_size));
  char buf[65536];
  while (true) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      return io_error(path + ": cannot read: " + std::strerror(errno));
    }
    if (n == 0) break;
    // The size may change after fstat (a growing file, /proc): the cap holds for what is read.
    if (data.size() + static_cast<size_t>(n) > max_bytes)
      return io_error(path + ": file has more than " + std::to_string(max_bytes) + " bytes; expected at most " +
                      std::to_string(max_bytes));
    data.append(buf, static_cast<size_t>(n));
  }
  *out = std::move(data);
  return Status::ok_status();
}

const char* file_type_name(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISREG(mode)) return "a regular file";
  return "not a regular file";
}

Expected<std::vector<CfgSection>> lex_cfg_file(const std::string& path) {
  std::string text;
  DLR_RETURN_IF_ERROR(read_text_file(path, &text, kMaxCfgBytes));
  return lex_cfg_text(text, path);
}

}  // namespace dlr
