// Text form of the session options (options_text.h).
#include "runtime/options_text.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <utility>

namespace dlr {
namespace {

std::string trimmed(const std::string& s) {
  size_t a = 0, e = s.size();
  while (a < e && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (e > a && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(a, e - a);
}

Status expected(const std::string& what) { return invalid_argument("expected " + what); }

template <class T>
Status parse_integer(const std::string& text, T* out) {
  const std::string t = trimmed(text);
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(t.c_str(), &end, 10);
  if (t.empty() || end != t.c_str() + t.size() || errno == ERANGE || v < (long long)std::numeric_limits<T>::min() ||
      v > (long long)std::numeric_limits<T>::max())
    return expected("an integer");
  *out = T(v);
  return Status();
}

template <class T>
Status parse_number(const std::string& text, T* out) {
  const std::string t = trimmed(text);
  char* end = nullptr;
  const double v = std::strtod(t.c_str(), &end);
  if (t.empty() || end != t.c_str() + t.size() || !std::isfinite(v)) return expected("a number");
  *out = T(v);
  return Status();
}

// One of an enum's names (name(value) for each value in `all`).
template <class E, size_t N>
Status parse_name(const std::string& text, const E (&all)[N], const char* (*name)(E), E* out) {
  const std::string t = trimmed(text);
  std::string list;
  for (size_t i = 0; i < N; ++i) {
    if (t == name(all[i])) {
      *out = all[i];
      return Status();
    }
    list += std::string(i == 0 ? "" : ", ") + name(all[i]);
  }
  return expected("one of " + list);
}

std::string number_text(double v) {
  char buf[40];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

}  // namespace

Status parse_value(const std::string& text, int* out) { return parse_integer(text, out); }
Status parse_value(const std::string& text, int64_t* out) { return parse_integer(text, out); }
Status parse_value(const std::string& text, float* out) { return parse_number(text, out); }
Status parse_value(const std::string& text, double* out) { return parse_number(text, out); }

Status parse_value(const std::string& text, bool* out) {
  const std::string t = trimmed(text);
  if (t == "true" || t == "on" || t == "yes" || t == "1") *out = true;
  else if (t == "false" || t == "off" || t == "no" || t == "0") *out = false;
  else return expected("true or false (on/off, yes/no, 1/0)");
  return Status();
}

Status parse_value(const std::string& text, std::string* out) {
  *out = text;
  return Status();
}

Status parse_value(const std::string& text, DeviceKind* out) {
  static const DeviceKind all[] = {DeviceKind::kCPU, DeviceKind::kCUDA};
  return parse_name(text, all, device_name, out);
}
Status parse_value(const std::string& text, Precision* out) {
  static const Precision all[] = {Precision::kFP32, Precision::kTF32, Precision::kFP16};
  return parse_name(text, all, precision_name, out);
}
Status parse_value(const std::string& text, WeightMode* out) {
  static const WeightMode all[] = {WeightMode::kPreload, WeightMode::kStream};
  return parse_name(text, all, weight_mode_name, out);
}
Status parse_value(const std::string& text, PoolLayout* out) {
  static const PoolLayout all[] = {PoolLayout::kAuto, PoolLayout::kSlots, PoolLayout::kRing};
  return parse_name(text, all, pool_layout_name, out);
}
Status parse_value(const std::string& text, Residency* out) {
  static const Residency all[] = {Residency::kNone, Residency::kLargestLate, Residency::kGreedy};
  return parse_name(text, all, residency_name, out);
}
Status parse_value(const std::string& text, SliceBy* out) {
  static const SliceBy all[] = {SliceBy::kAuto, SliceBy::kFilters, SliceBy::kChannels};
  return parse_name(text, all, slice_by_name, out);
}
Status parse_value(const std::string& text, WeightFormat* out) {
  static const WeightFormat all[] = {WeightFormat::kFp, WeightFormat::kInt8};
  return parse_name(text, all, weight_format_name, out);
}
Status parse_value(const std::string& text, Fusion* out) {
  static const Fusion all[] = {Fusion::kAuto, Fusion::kOff, Fusion::kEpilogue, Fusion::kCudnn};
  return parse_name(text, all, fusion_name, out);
}
Status parse_value(const std::string& text, Decode* out) {
  static const Decode all[] = {Decode::kAuto, Decode::kCpu, Decode::kGpu};
  return parse_name(text, all, decode_name, out);
}
Status parse_value(const std::string& text, WeightsFrom* out) {
  static const WeightsFrom all[] = {WeightsFrom::kHost, WeightsFrom::kStorage};
  return parse_name(text, all, weights_from_name, out);
}
Status parse_value(const std::string& text, ReaderKind* out) {
  static const ReaderKind all[] = {ReaderKind::kAuto, ReaderKind::kUring, ReaderKind::kThreads};
  return parse_name(text, all, reader_kind_name, out);
}

Status parse_value(const std::string& text, ThreadPriority* out) {
  static const ThreadPriority all[] = {ThreadPriority::kNormal, ThreadPriority::kHigh, ThreadPriority::kRealtime};
  return parse_name(text, all, thread_priority_name, out);
}
Status parse_value(const std::string& text, CpuList* out) {
  DLR_ASSIGN_OR_RETURN(*out, CpuList::parse(text));
  return Status();
}

Status parse_value(const std::string& text, WeightBudget* out) {
  Expected<WeightBudget> b = WeightBudget::parse(text);
  if (!b.ok()) {  // without parse's own 'weight budget "TEXT": ' (the caller names the option)
    const std::string m = b.status().message(), prefix = "weight budget \"" + text + "\": ";
    return invalid_argument(m.rfind(prefix, 0) == 0 ? m.substr(prefix.size()) : m);
  }
  *out = *b;
  return Status();
}

std::string value_text(int v) { return std::to_string(v); }
std::string value_text(int64_t v) { return std::to_string(v); }
std::string value_text(float v) { return number_text(double(v)); }
std::string value_text(double v) { return number_text(v); }
std::string value_text(bool v) { return v ? "true" : "false"; }
std::string value_text(const std::string& v) { return v; }
std::string value_text(DeviceKind v) { return device_name(v); }
std::string value_text(Precision v) { return precision_name(v); }
std::string value_text(WeightMode v) { return weight_mode_name(v); }
std::string value_text(PoolLayout v) { return pool_layout_name(v); }
std::string value_text(Residency v) { return residency_name(v); }
std::string value_text(SliceBy v) { return slice_by_name(v); }
std::string value_text(WeightFormat v) { return weight_format_name(v); }
std::string value_text(Fusion v) { return fusion_name(v); }
std::string value_text(Decode v) { return decode_name(v); }
std::string value_text(WeightsFrom v) { return weights_from_name(v); }
std::string value_text(ReaderKind v) { return reader_kind_name(v); }
std::string value_text(const WeightBudget& v) { return v.to_string(); }
std::string value_text(ThreadPriority v) { return thread_priority_name(v); }
std::string value_text(const CpuList& v) { return v.to_string(); }

const std::vector<std::string>& option_names() {
  static const std::vector<std::string> names = {
#define DLR_OPTION_NAME_(name, Type, def, scope, valid, msg) #name,
      DLR_SESSION_OPTIONS(DLR_OPTION_NAME_)
#undef DLR_OPTION_NAME_
  };
  return names;
}

Status set_option_text(SessionOptions* o, const std::string& name, const std::string& text) {
#define DLR_OPTION_SET_(option, Type, def, scope, valid, msg)                           \
  if (name == #option) {                                                                   \
    const Status st = parse_value(text, &o->option);                                       \
    if (!st.ok()) return invalid_argument(#option " '" + text + "': " + st.message());      \
    return Status();                                                                       \
  }
  DLR_SESSION_OPTIONS(DLR_OPTION_SET_)
#undef DLR_OPTION_SET_
  return invalid_argument("unknown option '" + name + "'");
}

Expected<std::string> option_text(const SessionOptions& o, const std::string& name) {
#define DLR_OPTION_GET_(option, Type, def, scope, valid, msg) \
  if (name == #option) return value_text(o.option);
  DLR_SESSION_OPTIONS(DLR_OPTION_GET_)
#undef DLR_OPTION_GET_
  return invalid_argument("unknown option '" + name + "'");
}

}  // namespace dlr
