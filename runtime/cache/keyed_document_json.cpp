#include "runtime/cache/keyed_document_json.h"

#include <sys/stat.h>

#include <cerrno>
#include <fstream>
#include <sstream>

namespace dlr {
namespace {

// The first line where two key texts differ, for the message.
std::string first_difference(const std::string& a, const std::string& b) {
  std::istringstream sa(a), sb(b);
  std::string la, lb;
  while (true) {
    const bool ha = bool(std::getline(sa, la)), hb = bool(std::getline(sb, lb));
    if (!ha && !hb) return "";
    if (!ha) la.clear();
    if (!hb) lb.clear();
    if (la != lb) return "'" + la + "' where this open has '" + lb + "'";
  }
}

}  // namespace

std::string format_keyed_document(const KeyedDocument& d, nlohmann::json entries) {
  nlohmann::json j = {{"format", d.format}, {"key", d.key_text}, {d.section, std::move(entries)}};
  return j.dump(1) + "\n";
}

Expected<nlohmann::json> parse_keyed_document(const std::string& text, const KeyedDocument& d) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception&) {
    return parse_error("not a JSON document");
  }
  if (!j.is_object()) return parse_error("not a JSON object");
  const auto format = j.find("format");
  if (format == j.end() || !format->is_number_integer() || format->get<int64_t>() != d.format) {
    const bool older = format != j.end() && format->is_number_integer() && format->get<int64_t>() < d.format;
    return parse_error("format is not " + std::to_string(d.format) + (older ? d.older_note : std::string()));
  }
  const auto k = j.find("key");
  if (k == j.end() || !k->is_string()) return parse_error("no key");
  if (k->get<std::string>() != d.key_text)
    return parse_error("made for another GPU, cuDNN or model: " + first_difference(k->get<std::string>(), d.key_text));
  const auto section = j.find(d.section);
  if (section == j.end() || !section->is_object()) return parse_error("no " + d.section + " object");
  return *section;
}

CacheRead read_cache_file(const std::string& path, std::string* text, std::string* reason) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return CacheRead::kAbsent;
  std::ifstream f(path, std::ios::binary);
  if (!f || !S_ISREG(st.st_mode)) {
    *reason = path + ": cannot be read as a file";
    return CacheRead::kUnreadable;
  }
  std::stringstream ss;
  ss << f.rdbuf();
  *text = ss.str();
  return CacheRead::kRead;
}

}  // namespace dlr
