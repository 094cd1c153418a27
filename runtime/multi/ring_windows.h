// The prefetch windows of a round robin through one shared ring (ring_split.h): how many
// bytes of a model's stream the copy engine brings in while the models before it in the
// round run, given their simulated inferences. Plain C++; used by split_shared_ring.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace dlr {

// One candidate of a model at a ring: its resident set and predicted latency, and its
// simulated inference as the next model's prefetch sees it.
struct RingPoint {
  int64_t resident = 0;     // bytes
  double ms = 0;
  std::vector<char> set;    // per blob
  bool all = false;         // every blob resident (no ring)
  // When its last copy ends (ms), the bytes it streams, and per streamed blob in stream
  // order the end of the blob in the stream (bytes) and when the layer reading it ends (ms).
  double copies_end_ms = 0;
  int64_t streamed = 0;
  std::vector<std::pair<int64_t, double>> releases;
};

// What the windows read of a model.
struct RingWindowModel {
  double bytes_per_ms = 0;  // its copy profile's peak pinned bandwidth
  bool prefetched = false;  // its leading units are copied while the previous model runs
  bool two_ahead = false;   // its prefetch may begin two models ahead
  double lead_ms = 0;       // host time before its run() during which the prefetch goes on
  int64_t input_bytes = 0;  // its input's upload, which shares the link in the lead
};

// A model's prefetch window in the round: `total` bytes in all, `early` of them copied
// two models ahead (RingSplit::prefetch_early).
struct RingWindow {
  int64_t total = 0;
  int64_t early = 0;
};

// What a prefetch reaches while `host` (a model's simulated inference, times from its
// start) runs: the copy engine, free from t_start, moves bw bytes per ms until `end`;
// it copies the prefetched model's bytes y0, y0 + 1, ... below `cap`, where byte y
// overwrites the ring byte that held host's stream byte host.streamed + shift + y - R
// (free when negative; else once host's layer reading it has ended). shift: the bytes of
// the models whose streams lie between host's and the prefetched model's (0: it runs
// right after host). Returns the bytes reached (>= y0, <= cap) and the time.
struct RingFill {
  int64_t y = 0;
  double t = 0;
};
RingFill fill_window(const RingPoint& host, int64_t ring, double bw, double t_start, double end, int64_t shift,
                     int64_t y0, int64_t cap);

// Model i's prefetch window in the round `pts` (round-robin order; i's predecessor
// prev = i - 1, the one before it pp = i - 2):
//  - two ahead (two_ahead, >= 3 models): while pp runs, after pp's copies and prev's own
//    prefetch (as if prev prefetched a whole ring of its stream, or all of a shorter one),
//    up to R - S_prev bytes (prev's whole stream comes after them in the ring and must
//    not overwrite them);
//  - then while prev runs, after prev's copies, until prev ends, or through i's lead
//    less the bytes of its input upload (which shares the link), whichever is more.
RingWindow prefetch_window(const std::vector<RingWindowModel>& models, const std::vector<RingPoint>& pts, size_t i,
                           int64_t ring);

}  // namespace dlr
