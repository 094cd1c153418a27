// Prefetch windows of a round through one shared ring (ring_windows.h).
#include "runtime/multi/ring_windows.h"

#include <algorithm>

namespace dlr {

RingFill fill_window(const RingPoint& host, int64_t ring, double bw, double t_start, double end, int64_t shift,
                     int64_t y0, int64_t cap) {
  RingFill f{y0, t_start};
  if (bw <= 0 || ring <= 0 || y0 >= cap) return f;
  // Copies `len` bytes once `ready`; false when the window ends first (y then holds what fitted).
  auto copy = [&](int64_t len, double ready) {
    f.t = std::max(f.t, ready);
    if (f.t >= end) return false;
    const double fits = (end - f.t) * bw;
    if (fits < double(len)) {
      f.y += int64_t(fits);
      f.t = end;
      return false;
    }
    f.y += len;
    f.t += double(len) / bw;
    return true;
  };
  const int64_t untouched = std::min(cap, std::max<int64_t>(0, ring - shift - host.streamed));  // host never wrote them
  if (f.y < untouched && !copy(untouched - f.y, 0)) return f;
  int64_t from = host.streamed + shift + f.y - ring;  // host's stream byte the next byte y reuses
  for (const auto& [blob_end, released] : host.releases) {
    if (blob_end <= from) continue;
    if (f.y >= cap) break;
    const int64_t len = std::min(blob_end - from, cap - f.y);
    if (!copy(len, released)) return f;
    from = blob_end;
  }
  if (f.y >= ring && f.y < cap) copy(cap - f.y, 0);  // a cap past the ring: bytes that only take time
  f.y = std::min(f.y, cap);
  return f;
}

RingWindow prefetch_window(const std::vector<RingWindowModel>& models, const std::vector<RingPoint>& pts, size_t i,
                           int64_t ring) {
  const size_t n = pts.size();
  const RingWindowModel& m = models[i];
  const RingPoint& prev = pts[(i + n - 1) % n];
  const double bw = m.bytes_per_ms;
  RingWindow w;
  if (m.two_ahead && n >= 3) {
    const size_t ip = (i + n - 1) % n;
    const RingPoint& pp = pts[(i + n - 2) % n];
    double t = pp.copies_end_ms;
    if (!prev.all && models[ip].prefetched)  // its leading units: at most a ring of its stream
      t = fill_window(pp, ring, models[ip].bytes_per_ms, pp.copies_end_ms, pp.ms, 0, 0,
                      std::min(prev.streamed, ring)).t;
    w.early = fill_window(pp, ring, bw, t, pp.ms, prev.streamed, 0, std::max<int64_t>(0, ring - prev.streamed)).y;
  }
  w.total = fill_window(prev, ring, bw, prev.copies_end_ms, prev.ms, 0, w.early, ring).y;
  if (m.lead_ms > 0)  // the upload's bytes as if they followed the prefetch's
    w.total = std::max(w.total, std::min(ring, fill_window(prev, ring, bw, prev.copies_end_ms, prev.ms + m.lead_ms, 0,
                                                           w.early, ring + m.input_bytes)
                                                       .y -
                                                   m.input_bytes));
  w.early = std::min(w.early, w.total);
  return w;
}

}  // namespace dlr
