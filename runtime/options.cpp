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
  if (t.empty()) return bad("empty; expected min, all, a percentage (25%) or a size (64MiB, 1.5GB, bytes)");
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
    return bad("expected min, all, a percentage (25%) or a size (64MiB, 1.5GB, bytes)");
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

Status validate_options(const SessionOptions& o) {
  if (o.threads < 0 || o.threads > 1024)
    return invalid_argument("threads " + std::to_string(o.threads) + " is out of range (0 = auto, 1..1024)");
  if (o.batch < 1 || o.batch > 64) return invalid_argument("batch " + std::to_string(o.batch) + " is out of range (1..64)");
  if (o.width < 0 || o.height < 0)
    return invalid_argument("network width/height overrides must be > 0 (0 keeps the cfg's)");
  if (o.letterbox < -1 || o.letterbox > 1) return invalid_argument("letterbox must be -1 (cfg), 0 or 1");
  if (!(o.thresh >= 0.0f && o.thresh < 1.0f)) return invalid_argument("thresh must be in [0, 1)");
  if (!(o.nms > 0.0f && o.nms <= 1.0f)) return invalid_argument("nms must be in (0, 1]");
  if (!(o.unit_search_min_gain >= 0.0 && o.unit_search_min_gain < 1.0))
    return invalid_argument("unit search minimum gain " + std::to_string(o.unit_search_min_gain) +
                            " must be in [0, 1)");
  if (o.chunk_bytes < 0) return invalid_argument("chunk size must be >= 0 bytes (0: the copy profile's)");
  if (o.workspace_limit < 0) return invalid_argument("cuDNN workspace limit must be >= 0 bytes");
  if (o.layout < -1 || o.layout > 1) return invalid_argument("layout must be -1 (auto), 0 (NCHW) or 1 (NHWC)");
  if (o.max_image_width < 1 || o.max_image_height < 1)
    return invalid_argument("image staging size must be at least 1x1");
  DLR_RETURN_IF_ERROR(CopyProfile::check_name(o.copy_profile));  // syntax only: no file is read here
  if (!(o.max_slowdown >= 0 && o.max_slowdown <= 10))
    return invalid_argument("max slowdown " + std::to_string(o.max_slowdown * 100) + " % must be in [0, 1000] %");
  if (!(o.prefetch_lead_ms >= 0 && o.prefetch_lead_ms <= 1000))
    return invalid_argument("prefetch lead " + std::to_string(o.prefetch_lead_ms) + " ms: expected 0 to 1000 ms");
  if (!(o.alone_ms >= 0 && o.alone_ms <= 1e6))
    return invalid_argument("latency alone " + std::to_string(o.alone_ms) + " ms: expected 0 (unknown) to 1000000 ms");
  if (!(o.latency_target_ms >= 0 && o.latency_target_ms < 1e9))
    return invalid_argument("latency target must be >= 0 ms (0: use the max slowdown)");
  if (o.latency_target_ms > 0 && o.weight_budget.kind != WeightBudget::Kind::kAuto)
    return invalid_argument("a latency target needs the weight budget auto");
  switch (o.weight_budget.kind) {
    case WeightBudget::Kind::kFraction:
      if (!(o.weight_budget.fraction > 0 && o.weight_budget.fraction <= 1))
        return invalid_argument("weight budget: a percentage must be in (0, 100]");
      break;
    case WeightBudget::Kind::kBytes:
      if (o.weight_budget.bytes < 1) return invalid_argument("weight budget: must be at least 1 byte");
      break;
    default:
      break;
  }
  if (o.host_budget < 0) return invalid_argument("host budget must be >= 0 bytes (0: the minimum)");
  if (o.zero_copy < -1 || o.zero_copy > 1) return invalid_argument("zero copy must be -1 (auto), 0 or 1");
  if (o.read_depth < 1 || o.read_depth > 64)
    return invalid_argument("read depth " + std::to_string(o.read_depth) + " is out of range (1..64)");
  if (o.read_block_bytes < 4096 || o.read_block_bytes > (int64_t(64) << 20) || o.read_block_bytes % 4096 != 0)
    return invalid_argument("read block " + std::to_string(o.read_block_bytes) +
                            " bytes: expected a multiple of 4096 from 4 KiB to 64 MiB");
  if (o.weights_from == WeightsFrom::kHost && (o.zero_copy == 1 || o.host_budget > 0 || !o.prepared_path.empty()))
    return invalid_argument("zero copy, a host budget and a prepared file need --weights-from storage");
  if (o.weights_from == WeightsFrom::kStorage && o.device == DeviceKind::kCUDA && o.mode != WeightMode::kStream)
    return invalid_argument("--weights-from storage on the GPU streams weights: it needs --mode stream");
  if (o.weights_from == WeightsFrom::kStorage && o.device == DeviceKind::kCPU && o.zero_copy == 0)
    return invalid_argument("the CPU backend reads weights where it computes from them: zero copy cannot be off");
  if (o.prefetch_next && o.weights_from == WeightsFrom::kStorage)
    return invalid_argument("prefetch of the next inference copies from the host store: it needs --weights-from host");
  if (o.device == DeviceKind::kCPU) {
    if (o.mode != WeightMode::kPreload)
      return invalid_argument("the CPU backend keeps every weight in host memory (--mode stream needs --device cuda)");
    if (o.precision != Precision::kFP32)
      return invalid_argument(std::string("the CPU backend runs fp32 only (asked for ") + precision_name(o.precision) +
                              ")");
  } else if (o.cuda_device < 0) {
    return invalid_argument("CUDA device index must be >= 0");
  }
  return Status();
}

}  // namespace dlr
