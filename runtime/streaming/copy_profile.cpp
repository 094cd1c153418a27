// CopyProfile: interpolation, JSON round trip with validation, built-in profiles,
// and the derivation of a profile from dlprobe's measurements.
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/copy_profile_json.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace dlr {
namespace {

constexpr const char* kFormat = "dlrun-copy-profile-1";
constexpr const char* kAutoName = "auto";
constexpr int64_t kKiB = 1024;
constexpr int64_t kMiB = 1024 * 1024;

using nlohmann::json;

// Bandwidth at `bytes`: linear in log(bytes) between points, flat outside.
double interpolate_gbps(const std::vector<BandwidthPoint>& pts, int64_t bytes) {
  if (pts.empty()) return 0;
  if (bytes <= pts.front().bytes) return pts.front().gbps;
  if (bytes >= pts.back().bytes) return pts.back().gbps;
  const auto hi = std::upper_bound(pts.begin(), pts.end(), bytes,
                                   [](int64_t b, const BandwidthPoint& p) { return b < p.bytes; });
  const auto lo = hi - 1;
  const double t = (std::log(double(bytes)) - std::log(double(lo->bytes))) /
                   (std::log(double(hi->bytes)) - std::log(double(lo->bytes)));
  return lo->gbps + t * (hi->gbps - lo->gbps);
}

std::string num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Reads and validates the fields of one JSON document; every error names the
// document (`what`, usually the file path) and the field.
class Reader {
 public:
  explicit Reader(const std::string& what) : m_what(what) {}

  Status error(const std::string& field, const std::string& problem) const {
    return parse_error(m_what + ": copy profile field '" + field + "' " + problem);
  }

  // A required (or, with `required` false, optional) member of `obj`; nullptr when absent.
  Expected<const json*> member(const json& obj, const char* key, const std::string& field, bool required) const {
    const auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) return error(field, "is missing");
      return static_cast<const json*>(nullptr);
    }
    return &*it;
  }

  Status read_string(const json& obj, const char* key, bool required, std::string* out) const {
    DLR_ASSIGN_OR_RETURN(const json* v, member(obj, key, key, required));
    if (!v) return Status();
    if (!v->is_string()) return error(key, "must be a string");
    *out = v->get<std::string>();
    return Status();
  }

  // An integer >= min_value (min_value is 0 or 1).
  Status read_int(const json& obj, const char* key, const std::string& field, int64_t min_value, int64_t* out) const {
    DLR_ASSIGN_OR_RETURN(const json* v, member(obj, key, field, true));
    if (!v->is_number_integer()) return error(field, "must be an integer");
    const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX
                                                                                             : v->get<int64_t>();
    if (x < 0) return error(field, "is negative (" + std::to_string(x) + ")");
    if (x < min_value) return error(field, "must be > 0 (got " + std::to_string(x) + ")");
    *out = x;
    return Status();
  }

  // A number >= 0, or > 0 when `positive`.
  Status read_number(const json& obj, const char* key, const std::string& field, bool positive, double* out) const {
    DLR_ASSIGN_OR_RETURN(const json* v, member(obj, key, field, true));
    if (!v->is_number()) return error(field, "must be a number");
    const double x = v->get<double>();
    if (!std::isfinite(x)) return error(field, "must be finite");
    if (x < 0) return error(field, "is negative (" + num(x) + ")");
    if (positive && x == 0) return error(field, "must be > 0 (got 0)");
    *out = x;
    return Status();
  }

  // An array of objects (empty allowed only when `allow_empty`).
  Expected<const json*> read_array(const json& obj, const char* key, bool required, bool allow_empty) const {
    DLR_ASSIGN_OR_RETURN(const json* v, member(obj, key, key, required));
    if (!v) return v;
    if (!v->is_array()) return error(key, "must be an array");
    if (v->empty() && !allow_empty) return error(key, "is empty");
    for (size_t i = 0; i < v->size(); ++i)
      if (!(*v)[i].is_object()) return error(std::string(key) + "[" + std::to_string(i) + "]", "must be an object");
    return v;
  }

  Status read_curve(const json& obj, const char* key, bool required, std::vector<BandwidthPoint>* out) const {
    DLR_ASSIGN_OR_RETURN(const json* arr, read_array(obj, key, required, !required));
    out->clear();
    if (!arr) return Status();
    for (size_t i = 0; i < arr->size(); ++i) {
      const std::string f = std::string(key) + "[" + std::to_string(i) + "]";
      BandwidthPoint p;
      DLR_RETURN_IF_ERROR(read_int((*arr)[i], "bytes", f + ".bytes", 1, &p.bytes));
      DLR_RETURN_IF_ERROR(read_number((*arr)[i], "gbps", f + ".gbps", true, &p.gbps));
      if (!out->empty() && p.bytes <= out->back().bytes)
        return error(key, "is not sorted by bytes (strictly increasing): " + f + ".bytes " + std::to_string(p.bytes) +
                              " <= " + std::string(key) + "[" + std::to_string(i - 1) + "].bytes " +
                              std::to_string(out->back().bytes));
      out->push_back(p);
    }
    return Status();
  }

  Status read_queue(const json& obj, std::vector<QueueClass>* out) const {
    DLR_ASSIGN_OR_RETURN(const json* arr, read_array(obj, "queue", true, false));
    out->clear();
    for (size_t i = 0; i < arr->size(); ++i) {
      const std::string f = "queue[" + std::to_string(i) + "]";
      QueueClass q;
      int64_t depth = 0;
      DLR_RETURN_IF_ERROR(read_int((*arr)[i], "max_bytes", f + ".max_bytes", 1, &q.max_bytes));
      DLR_RETURN_IF_ERROR(read_int((*arr)[i], "depth", f + ".depth", 0, &depth));
      if (depth > INT_MAX) return error(f + ".depth", "is too large (" + std::to_string(depth) + ")");
      q.depth = int(depth);
      if (!out->empty() && q.max_bytes <= out->back().max_bytes)
        return error("queue", "is not sorted by max_bytes (strictly increasing): " + f + ".max_bytes " +
                                  std::to_string(q.max_bytes) + " <= queue[" + std::to_string(i - 1) +
                                  "].max_bytes " + std::to_string(out->back().max_bytes));
      out->push_back(q);
    }
    return Status();
  }

 private:
  std::string m_what;
};

json curve_json(const std::vector<BandwidthPoint>& pts) {
  json a = json::array();
  for (const BandwidthPoint& p : pts) a.push_back({{"bytes", p.bytes}, {"gbps", p.gbps}});
  return a;
}

CopyProfile make_h100() {
  // Measured with dlprobe on the H100 machine (PCIe Gen5 x16, driver 580, CUDA 13.0;
  // docs/results/h100-2026-11-21-ring/probe.txt): 17.05 GB/s at 64 KB, 55 GB/s from 16 MB.
  CopyProfile p;
  p.name = "h100";
  p.pinned = {{64 * kKiB, 17.05}, {256 * kKiB, 35.87}, {1 * kMiB, 47.42}, {2 * kMiB, 51.13},
              {4 * kMiB, 53.03},  {16 * kMiB, 54.51},  {64 * kMiB, 54.91}, {256 * kMiB, 54.92}};
  p.pageable = {{64 * kKiB, 6.74}, {256 * kKiB, 13.69}, {1 * kMiB, 14.98}, {2 * kMiB, 12.39},
                {4 * kMiB, 11.90}, {16 * kMiB, 11.59},  {64 * kMiB, 8.82}, {256 * kMiB, 8.83}};
  p.call_us = 2.0;  // pinned host call: 1.4 us (64 KB) .. 3.8 us (256 MB); ~2 us at 1-4 MB
  // The host blocked at the 1021st queued copy for every size from 4 KB to 32 MB.
  p.queue = {{256 * kMiB, 1020}};
  p.chunk_bytes = 4 * kMiB;     // 53.0 GB/s = 96.6 % of peak
  p.min_unit_bytes = 1 * kMiB;  // 47.4 GB/s = 86 % of peak
  return p;
}

CopyProfile make_jetson_xavier() {
  CopyProfile p;
  p.name = "jetson-xavier";
  // Queue: measured on Jetson AGX Xavier (Ji et al., RTSS 2022, "Demand
  // Layering for Real-Time DNN Inference with Minimized Memory Usage"): <= 64 KB copies queue
  // about 14 deep (25 at 32 KB: 14 is kept for the whole class), 64 KB-1 MB: 2,
  // 1-2 MB: 1, > 2 MB: the call waits until the queue is empty (depth 0).
  p.queue = {{64 * kKiB, 14}, {1 * kMiB, 2}, {2 * kMiB, 1}, {256 * kMiB, 0}};
  // ASSUMPTIONS (no Jetson was measured for bandwidth): on the integrated GPU a H2D
  // copy is a DRAM-to-DRAM copy through the shared LPDDR4x (137 GB/s nominal, every
  // byte read and written), commonly 10-20 GB/s in practice; we take 16 GB/s at
  // >= 64 MB and give smaller copies the H100 curve's fraction of peak (per-copy
  // overhead). Pageable copies are staged by the ARM cores' memcpy: ~1/3 of pinned.
  // The host call is assumed ~4x the Xeon's (slower CPU cores): 8 us.
  p.pinned = {{64 * kKiB, 5.0},  {256 * kKiB, 10.4}, {1 * kMiB, 13.8}, {2 * kMiB, 14.9},
              {4 * kMiB, 15.5},  {16 * kMiB, 15.9},  {64 * kMiB, 16.0}};
  p.pageable = {{64 * kKiB, 2.0}, {256 * kKiB, 3.5}, {1 * kMiB, 4.5}, {4 * kMiB, 5.0}, {64 * kMiB, 5.0}};
  p.call_us = 8.0;
  // 1 MiB: the largest copy that still queues 2 deep (a 2 MiB chunk would queue 1).
  p.chunk_bytes = 1 * kMiB;
  p.min_unit_bytes = 1 * kMiB;
  return p;
}

CopyProfile make_discrete() {
  // A conservative PCIe Gen4 x16 GPU (not measured): the H100 curve scaled to a
  // 25 GB/s peak (Gen4 is half of Gen5's 64 GB/s per direction; ~25 GB/s pinned is
  // typical). Pageable: 0.6x the H100's (CPU-side staging, slower hosts assumed).
  CopyProfile p;
  p.name = "discrete";
  p.pinned = {{64 * kKiB, 7.8},  {256 * kKiB, 16.3}, {1 * kMiB, 21.6}, {2 * kMiB, 23.3},
              {4 * kMiB, 24.1},  {16 * kMiB, 24.8},  {64 * kMiB, 25.0}, {256 * kMiB, 25.0}};
  p.pageable = {{64 * kKiB, 4.0}, {256 * kKiB, 8.2}, {1 * kMiB, 9.0}, {2 * kMiB, 7.4},
                {4 * kMiB, 7.1},  {16 * kMiB, 7.0},  {64 * kMiB, 5.3}, {256 * kMiB, 5.3}};
  p.call_us = 3.0;
  p.queue = {{256 * kMiB, 1000}};
  p.chunk_bytes = 4 * kMiB;
  p.min_unit_bytes = 1 * kMiB;
  return p;
}

std::string builtin_list() {
  std::string s;
  for (const std::string& n : CopyProfile::builtin_names()) s += (s.empty() ? "" : ", ") + n;
  return s;
}

}  // namespace

double CopyProfile::copy_ms(int64_t bytes) const {
  if (bytes <= 0 || pinned.empty()) return 0;
  const double gbps = interpolate_gbps(pinned, bytes);
  return gbps > 0 ? double(bytes) / (gbps * 1e6) : 0;
}

double CopyProfile::peak_gbps() const {
  double peak = 0;
  for (const BandwidthPoint& p : pinned) peak = std::max(peak, p.gbps);
  return peak;
}

int CopyProfile::queue_depth(int64_t bytes) const {
  if (queue.empty()) return 0;
  for (const QueueClass& q : queue)
    if (bytes <= q.max_bytes) return q.depth;
  return queue.back().depth;
}

nlohmann::json copy_profile_to_json(const CopyProfile& p) {
  json q = json::array();
  for (const QueueClass& c : p.queue) q.push_back({{"max_bytes", c.max_bytes}, {"depth", c.depth}});
  return json{{"name", p.name},
              {"device", p.device},
              {"pinned", curve_json(p.pinned)},
              {"pageable", curve_json(p.pageable)},
              {"call_us", p.call_us},
              {"queue", std::move(q)},
              {"chunk_bytes", p.chunk_bytes},
              {"min_unit_bytes", p.min_unit_bytes},
              {"format", kFormat}};
}

std::string CopyProfile::to_json_text(int indent) const { return copy_profile_to_json(*this).dump(indent); }

Expected<CopyProfile> CopyProfile::from_json_text(const std::string& text, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    return parse_error(what + ": not valid JSON: " + printable(e.what()));
  }
  Expected<CopyProfile> p = copy_profile_from_json(j, what);
  // Messages quote field values, which JSON escapes can fill with control bytes.
  if (!p.ok()) return Status(p.status().code(), printable(p.status().message()));
  return p;
}

Expected<CopyProfile> copy_profile_from_json(const nlohmann::json& j, const std::string& what) {
  if (!j.is_object()) return parse_error(what + ": a copy profile must be a JSON object");
  const Reader r(what);
  std::string format;
  DLR_RETURN_IF_ERROR(r.read_string(j, "format", true, &format));
  if (format != kFormat) return r.error("format", "is '" + format + "', expected '" + kFormat + "'");
  CopyProfile p;
  DLR_RETURN_IF_ERROR(r.read_string(j, "name", true, &p.name));
  DLR_RETURN_IF_ERROR(r.read_string(j, "device", false, &p.device));
  DLR_RETURN_IF_ERROR(r.read_curve(j, "pinned", true, &p.pinned));
  DLR_RETURN_IF_ERROR(r.read_curve(j, "pageable", false, &p.pageable));
  DLR_RETURN_IF_ERROR(r.read_number(j, "call_us", "call_us", false, &p.call_us));
  DLR_RETURN_IF_ERROR(r.read_queue(j, &p.queue));
  DLR_RETURN_IF_ERROR(r.read_int(j, "chunk_bytes", "chunk_bytes", 1, &p.chunk_bytes));
  DLR_RETURN_IF_ERROR(r.read_int(j, "min_unit_bytes", "min_unit_bytes", 1, &p.min_unit_bytes));
  return p;
}

Expected<CopyProfile> CopyProfile::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return io_error("cannot open copy profile '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return io_error("cannot read copy profile '" + path + "'");
  return from_json_text(text.str(), path);
}

Status CopyProfile::save(const std::string& path) const {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return io_error("cannot write copy profile '" + path + "': " + std::strerror(errno));
  out << to_json_text(2) << "\n";
  out.flush();
  if (!out) return io_error("cannot write copy profile '" + path + "'");
  return Status();
}

Expected<CopyProfile> CopyProfile::builtin(const std::string& name) {
  if (name == "h100") return make_h100();
  if (name == "jetson-xavier") return make_jetson_xavier();
  if (name == "discrete") return make_discrete();
  return invalid_argument("unknown built-in copy profile '" + name + "' (built-in profiles: " + builtin_list() + ")");
}

std::vector<std::string> CopyProfile::builtin_names() { return {"discrete", "h100", "jetson-xavier"}; }

namespace {
bool names_a_file(const std::string& s) {
  return s.find('/') != std::string::npos || (s.size() >= 5 && s.compare(s.size() - 5, 5, ".json") == 0);
}
}  // namespace

Status CopyProfile::check_name(const std::string& file_or_name) {
  if (file_or_name.empty())
    return invalid_argument("copy profile: empty; expected auto, a built-in name or a JSON file");
  if (names_a_file(file_or_name) || file_or_name == kAutoName) return Status();
  for (const std::string& n : builtin_names())
    if (n == file_or_name) return Status();
  return invalid_argument("copy profile '" + file_or_name + "' is neither auto, a file nor a built-in profile (" +
                          builtin_list() + "; a file is a path with '/' or ending in .json)");
}

Expected<CopyProfile> CopyProfile::resolve(const std::string& file_or_name) {
  DLR_RETURN_IF_ERROR(check_name(file_or_name));
  if (file_or_name == kAutoName)
    return invalid_argument("copy profile auto is this GPU's measured profile: it is resolved when a CUDA target is "
                            "made (cuda_target), not without a device; give a built-in name or a JSON file here");
  if (names_a_file(file_or_name)) return load(file_or_name);
  return builtin(file_or_name);
}

Expected<CopyProfile> derive_copy_profile(const std::string& name, const std::string& device,
                                          std::vector<BandwidthPoint> pinned, std::vector<BandwidthPoint> pageable,
                                          double call_us, std::vector<QueueSample> queue) {
  auto by_bytes = [](const auto& a, const auto& b) { return a.bytes < b.bytes; };
  std::sort(pinned.begin(), pinned.end(), by_bytes);
  std::sort(pageable.begin(), pageable.end(), by_bytes);
  std::sort(queue.begin(), queue.end(), by_bytes);
  // A DMA engine's per-copy bandwidth does not fall as copies grow; a dip in the
  // measured curve is interference (seen on the H100: 8 MiB at 23 GB/s between 4 MiB
  // at 49 and 64 MiB at 54), so the pinned curve is made non-decreasing (running max).
  for (size_t i = 1; i < pinned.size(); ++i) pinned[i].gbps = std::max(pinned[i].gbps, pinned[i - 1].gbps);
  CopyProfile p;
  p.name = name;
  p.device = device;
  p.pinned = std::move(pinned);
  p.pageable = std::move(pageable);
  p.call_us = call_us;

  for (const QueueSample& s : queue) {
    if (!p.queue.empty()) {
      QueueClass& last = p.queue.back();
      const int tolerance = int(0.01 * std::max(last.depth, s.depth));  // measurement noise of deep queues
      if (std::abs(last.depth - s.depth) <= tolerance) {
        last.depth = std::min(last.depth, s.depth);
        last.max_bytes = s.bytes;
        continue;
      }
    }
    p.queue.push_back({s.bytes, s.depth});
  }

  const double peak = p.peak_gbps();
  int64_t chunk = 0, unit = 0;
  for (const BandwidthPoint& b : p.pinned) {
    if (unit == 0 && b.gbps >= 0.80 * peak) unit = b.bytes;
    if (chunk == 0 && b.gbps >= 0.95 * peak) chunk = b.bytes;
  }
  chunk = std::min<int64_t>(chunk == 0 ? 8 * kMiB : chunk, 8 * kMiB);
  if (!p.queue.empty() && p.queue_depth(chunk) == 0) {
    int64_t best = 0;
    for (const QueueClass& q : p.queue)
      if (q.depth > 0 && q.max_bytes < chunk) best = q.max_bytes;
    if (best > 0) chunk = best;
  }
  p.chunk_bytes = chunk;
  p.min_unit_bytes = std::min(unit, chunk);
  // Validate the result exactly as a loaded file would be.
  return copy_profile_from_json(copy_profile_to_json(p), "derived profile '" + name + "'");
}

}  // namespace dlr
