// The JSON document of a keyed cache file (conv-algos/, fused-plans/; cache_dir.h's
// keyed_cache_file): {"format": N, "key": <the key's text>, <section>: {<name>: <entry>}}.
// What such a file's reader shares: the read of the whole file, the checks of format and
// key, the section object. Plain C++; private to runtime/cache (a JSON value in its
// interface, like runtime/streaming/copy_profile_json.h: no other header includes it).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "runtime/core/status.h"

namespace dlr {

struct KeyedDocument {
  int format = 1;
  std::string key_text;     // the key this open computed (ConvAlgoKey::text())
  std::string section;      // "algos", "plans"
  std::string older_note;   // appended when the file has an older integer format, e.g. " (format 1, ...)"
};

// A document of `d` with `entries` (an object) as its section, as written to the file.
std::string format_keyed_document(const KeyedDocument& d, nlohmann::json entries);

// The section's object. Errors (one line): not JSON, not an object, another format
// (older_note added when the file's is an older integer), no key, another key (the first
// line where the keys differ), no section object.
Expected<nlohmann::json> parse_keyed_document(const std::string& text, const KeyedDocument& d);

// The whole of `path` into *text: kAbsent when there is no such file, kUnreadable when it
// cannot be read as a regular file (*reason says so, naming it).
enum class CacheRead { kAbsent, kRead, kUnreadable };
CacheRead read_cache_file(const std::string& path, std::string* text, std::string* reason);

}  // namespace dlr
