// Darknet .cfg lexing: text -> sections of key=value options, nothing more.
//
// Rules (Darknet parser.c:read_cfg, utils.c:strip, option_list.c):
// - every whitespace character is removed from each line, even inside values;
// - empty lines and lines starting with '#' or ';' are skipped;
// - a line starting with '[' must be exactly "[name]" and opens a section;
// - any other line is split at its first '=' into key and value (the value may
//   be empty, the key may not); a line without '=' is an error;
// - an option before the first section is an error;
// - duplicate keys in a section: the FIRST one wins (Darknet's option_find
//   walks from the front); later ones are kept in `duplicates` so callers can
//   warn about them.
// - (dlrun) a control character other than whitespace (NUL, ESC, DEL...) is an
//   error naming its line and column, so no message can carry one.
// Values are not interpreted here (no comment stripping, no number parsing).
// Errors are one line: "NAME:LINE: what was found: what was expected".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"

namespace dlr {

struct CfgOption {
  std::string key;
  std::string value;
  int line = 0;  // 1-based
};

struct CfgSection {
  std::string name;  // without brackets, e.g. "convolutional"
  int line = 0;      // line of the "[name]" header, 1-based
  std::vector<CfgOption> options;     // unique keys, in file order (first occurrence)
  std::vector<CfgOption> duplicates;  // later occurrences of a key already in `options` (ignored)

  // The first option with this key, or nullptr.
  const CfgOption* find(const std::string& key) const;
};

// Lexes cfg text. `name` (usually the path) prefixes error messages.
Expected<std::vector<CfgSection>> lex_cfg_text(const std::string& text, const std::string& name);

// Reads the file and lexes it. A missing or unreadable file is an kIoError.
Expected<std::vector<CfgSection>> lex_cfg_file(const std::string& path);

// Value parsing, Darknet-compatible but strict. A trailing inline comment
// starting with '#' is ignored (as atoi/atof would); anything else that is not
// part of the number makes the value malformed. Each returns false when
// malformed; the caller owns the message.
bool parse_cfg_int(const std::string& value, int* out);      // [+-]digits, fits in int
bool parse_cfg_float(const std::string& value, float* out);  // strtod syntax, finite
// Comma-separated lists; the list ends at the first '#'. Empty elements
// ("1,,2", "1,") and an empty list are malformed.
bool parse_cfg_int_list(const std::string& value, std::vector<int>* out);
bool parse_cfg_float_list(const std::string& value, std::vector<float>* out);

// Largest .cfg text read (docs/reliability.md); real cfgs are below 40 KiB.
constexpr uint64_t kMaxCfgBytes = uint64_t(4) << 20;

// Reads a whole regular file of at most `max_bytes` into `out`. Without blocking:
// a FIFO, device, directory or socket is refused ("PATH: not a regular file (a FIFO);
// expected a file"), as is a larger file; io_error "PATH: cannot open: <reason>" otherwise.
Status read_text_file(const std::string& path, std::string* out, uint64_t max_bytes);
// "a directory", "a FIFO", "a character device", ... for a stat() st_mode.
const char* file_type_name(unsigned mode);

}  // namespace dlr
