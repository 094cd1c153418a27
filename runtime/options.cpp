#include "runtime/options.h"

#include "runtime/streaming/copy_profile.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace dlr {

const char* residency_name(Residency r) {
  switch (r) {
    case Residency::kNone: return "none";
    case Residency::kLargestLate: return "largest-late";
    case Residency::kGreedy: return "greedy";
  }
  return "greedy";
}

bool parse_residency(const std::string& s, Residency* out) {
  for (Residency r : {Residency::kNone, Residency::kLargestLate, Residency::kGreedy})
    if (s == residency_name(r)) {
      *out = r;
      return true;
    }
  return false;
}

const char* slice_by_name(SliceBy s) {
  switch (s) {
    case SliceBy::kAuto: return "auto";
    case SliceBy::kFilters: return "filters";
    case SliceBy::kChannels: return "channels";
  }
  return "auto";
}

const char* weights_from_name(WeightsFrom w) { return w == WeightsFrom::kStorage ? "storage" : "host"; }

bool parse_weights_from(const std::string& s, WeightsFrom* out) {
  if (s == "host") *out = WeightsFrom::kHost;
  else if (s == "storage") *out = WeightsFrom::kStorage;
  else return false;
  return true;
}

const char* weight_mode_name(WeightMode m) { return m == WeightMode::kStream ? "stream" : "preload"; }

bool parse_weight_mode(const std::string& s, WeightMode* out) {
  if (s == "preload") *out = WeightMode::kPreload;
  else if (s == "stream") *out = WeightMode::kStream;
  else return false;
  return true;
}



namespace {

std::string lower(std::string s) {
  for (char& c : s) c = char(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

// Accepted (case-insensitive, surrounding blanks ignored):
//   "min"              the minimal pool: returns minimal_bytes (0: plan_streaming picks the layout's minimum)
//   "all"              every weight byte (resident)
//   "auto"             chosen by the compile step (SessionOptions::max_slowdown)
//   "P%"               P percent of the weight bytes, 0 < P <= 100 (decimals allowed)
//   "N" + unit         decimals allowed; KB/MB/GB are decimal (1e3/1e6/1e9 bytes),
//                      KiB/MiB/GiB binary (2^10/2^20/2^30), B = bytes
//   "N"                an integer number of bytes
// The result is rounded down to whole bytes; it is not checked against the minimum
// here (plan_streaming reports a budget below it with both sizes).
Expected<WeightBudget> WeightBudget::parse(const std::string& text) {
  const auto bad = [&](const std::string& why) -> Status {
    return invalid_argument("weight budget \"" + text + "\": " + why);
  };
  size_t a = 0, e = text.size();
  while (a < e && std::isspace(static_cast<unsigned char>(text[a]))) ++a;
  while (e > a && std::isspace(static_cast<unsigned char>(text[e - 1]))) --e;
  const std::string t = lower(text.substr(a, e - a));
  if (t.empty()) return bad("empty; expected min, all, auto, a percentage (25%) or a size (64MiB, 1.5GB, bytes)");
  if (t == "min") return WeightBudget::min();
  if (t == "all") return WeightBudget::all();
  if (t == "auto") return WeightBudget::automatic();
  if (t[0] == '-') return bad("negative");

  // number: digits [. digits]
  size_t i = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
  const size_t int_digits = i;
  bool has_fraction = false;
  if (i < t.size() && t[i] == '.') {
    ++i;
    const size_t frac_begin = i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i;
    has_fraction = i > frac_begin;
    if (!has_fraction) return bad("expected digits after '.'");
  }
  if (int_digits == 0 && !has_fraction)
    return bad("expected min, all, auto, a percentage (25%) or a size (64MiB, 1.5GB, bytes)");
  const std::string number = t.substr(0, i);
  size_t j = i;
  while (j < t.size() && t[j] == ' ') ++j;
  const std::string unit = t.substr(j);
  const double value = std::strtod(number.c_str(), nullptr);
  if (!(value > 0)) return bad("must be greater than zero");

  double bytes = 0;
  if (unit == "%") {
    if (value > 100) return bad("a percentage must be in (0, 100]");
    return WeightBudget::percent(value);
  } else {
    double mult = 0;
    if (unit.empty()) {
      if (has_fraction) return bad("a plain byte count must be an integer (or add a unit: KB, MB, GB, KiB, MiB, GiB)");
      mult = 1;
    } else if (unit == "b") {
      mult = 1;
    } else if (unit == "kb") {
      mult = 1e3;
    } else if (unit == "mb") {
      mult = 1e6;
    } else if (unit == "gb") {
      mult = 1e9;
    } else if (unit == "kib") {
      mult = double(int64_t(1) << 10);
    } else if (unit == "mib") {
      mult = double(int64_t(1) << 20);
    } else if (unit == "gib") {
      mult = double(int64_t(1) << 30);
    } else {
      return bad("unknown unit '" + text.substr(a + j, e - a - j) + "'; expected %, B, KB, MB, GB, KiB, MiB or GiB");
    }
    bytes = std::floor(value * mult);
  }
  if (bytes >= 9.0e18) return bad("too large");
  if (bytes < 1) return bad("rounds to zero bytes");
  return WeightBudget::of_bytes(int64_t(bytes));
}

int64_t WeightBudget::resolve(int64_t total, int64_t minimal) const {
  switch (kind) {
    case Kind::kMin: return minimal;
    case Kind::kAuto: return minimal;
    case Kind::kAll: return total;
    case Kind::kFraction: return int64_t(std::floor(double(total) * fraction));
    case Kind::kBytes: return bytes;
  }
  return minimal;
}

std::string WeightBudget::to_string() const {
  switch (kind) {
    case Kind::kMin: return "min";
    case Kind::kAuto: return "auto";
    case Kind::kAll: return "all";
    case Kind::kFraction: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "%.17g%%", fraction * 100.0);
      return buf;
    }
    case Kind::kBytes: return std::to_string(bytes);
  }
  return "min";
}

ThreadPlacement thread_placement(const SessionOptions& o) { return {o.thread_priority, o.cpu_affinity}; }

Expected<double> parse_percentage(const std::string& text, const std::string& what) {
  std::string t = text;
  if (!t.empty() && t.back() == '%') t.pop_back();
  size_t used = 0;
  double v = -1;
  bool ok = !t.empty() && (std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '.');
  if (ok) {
    try {
      v = std::stod(t, &used);
    } catch (...) {
      ok = false;
    }
  }
  if (!ok || used != t.size() || !(v >= 0) || !std::isfinite(v))
    return invalid_argument(what + " \"" + text + "\": expected a percentage such as 5% (>= 0)");
  return v / 100.0;
}

namespace {

bool weight_budget_valid(const WeightBudget& b) {
  switch (b.kind) {
    case WeightBudget::Kind::kFraction: return b.fraction > 0 && b.fraction <= 1;
    case WeightBudget::Kind::kBytes: return b.bytes >= 1;
    default: return true;
  }
}

std::string weight_budget_error(const WeightBudget& b) {
  return b.kind == WeightBudget::Kind::kFraction ? "weight budget: a percentage must be in (0, 100]"
                                                 : "weight budget: must be at least 1 byte";
}

// Syntax only: no file is read here.
bool copy_profile_name_valid(const std::string& name) { return CopyProfile::check_name(name).ok(); }
std::string copy_profile_name_error(const std::string& name) { return CopyProfile::check_name(name).message(); }

// The table's check of every option (runtime/options_table.h).
Status check_each_option(const SessionOptions& o) {
#define DLR_OPTION_CHECK_(name, Type, def, scope, valid, message) \
  {                                                               \
    const Type& v = o.name;                                       \
    (void)v;                                                      \
    if (!(valid)) return invalid_argument(message);               \
  }
  DLR_SESSION_OPTIONS(DLR_OPTION_CHECK_)
#undef DLR_OPTION_CHECK_
  return Status();
}

// Weights from storage: what needs it, and what it needs.
Status check_storage(const SessionOptions& o) {
  if (o.weights_from == WeightsFrom::kHost && (o.zero_copy == 1 || o.host_budget > 0 || !o.prepared_path.empty()))
    return invalid_argument("zero_copy, host_budget and prepared_path need weights_from storage");
  if (o.weights_from == WeightsFrom::kStorage && o.device == DeviceKind::kCUDA && o.mode != WeightMode::kStream)
    return invalid_argument("weights_from storage on the GPU streams weights: it needs mode stream");
  if (o.weights_from == WeightsFrom::kStorage && o.device == DeviceKind::kCPU && o.zero_copy == 0)
    return invalid_argument("the CPU backend reads weights where it computes from them: zero copy cannot be off");
  if (o.prefetch_next && o.weights_from == WeightsFrom::kStorage)
    return invalid_argument("prefetch of the next inference copies from the host store: it needs weights_from host");
  if (o.tail_prefetch && o.weights_from == WeightsFrom::kStorage)
    return invalid_argument("tail_prefetch copies the next inference's first weights from the host store: it needs "
                            "weights_from host (from storage, prefetch_reads reads them ahead)");
  return Status();
}

// Tail copies: a streamed session's own ring.
Status check_tail(const SessionOptions& o) {
  if (!o.tail_prefetch) return Status();
  if (o.device != DeviceKind::kCUDA || o.mode != WeightMode::kStream)
    return invalid_argument("tail_prefetch copies streamed weights: it needs device cuda and mode stream");
  if (o.prefetch_next)
    return invalid_argument("tail_prefetch is for a session alone: a Runtime's models prefetch across models "
                            "(prefetch_next)");
  return Status();
}

}  // namespace

Status validate_options(const SessionOptions& o) {
  DLR_RETURN_IF_ERROR(check_each_option(o));
  if (o.latency_target_ms > 0 && o.weight_budget.kind != WeightBudget::Kind::kAuto)
    return invalid_argument("a latency target needs the weight budget auto");
  DLR_RETURN_IF_ERROR(check_storage(o));
  DLR_RETURN_IF_ERROR(check_tail(o));
  if (o.device == DeviceKind::kCPU) {
    if (o.mode != WeightMode::kPreload)
      return invalid_argument("the CPU backend keeps every weight in host memory (mode stream needs device cuda)");
    if (o.precision != Precision::kFP32)
      return invalid_argument(std::string("the CPU backend runs fp32 only (asked for ") + precision_name(o.precision) +
                              ")");
  } else if (o.cuda_device < 0) {
    return invalid_argument("CUDA device index must be >= 0");
  }
  return Status();
}

}  // namespace dlr
