// Where each model's stream starts in a Runtime's shared ring (plain C++, no GPU).
//
// Stream i (bytes, in the ring: staged blobs excluded) occupies ring offsets
// [start_i, start_i + stream_i) mod ring. The joint plan (ring_split.h) assumes that a
// model's stream starts where its predecessor's ended, so that its prefetch, copied
// while the predecessor runs, overwrites first the bytes the predecessor released first.
// The round is a cycle, and the streams of one round sum to T: the starts leave
// G = (-T) mod ring bytes of gap between some stream's end and the next one's start.
// A gap after stream i pushes stream i+1's prefetch further around the ring, onto bytes
// stream i may still have to read: its copies then wait for them, up to the end of
// stream i's inference, and every copy behind them on the copy engine waits too (the
// next model's input upload included). So the gap goes where it costs nothing: after a
// stream whose successor prefetches nothing, or within slack_i = ring - min(stream_i,
// ring) - prefetch_{i+1} (the successor's prefetch then stays clear of stream i's bytes),
// largest first; what no slack holds goes after the stream whose successor prefetches
// least.
#pragma once

#include <cstdint>
#include <vector>

namespace dlr {

// stream[i], prefetch[i]: model i's ring stream and prefetch bytes, in round order
// (prefetch[i] is copied while model i-1 runs). ring > 0. Returns each stream's start
// offset in [0, ring); the first starts at 0. Streams must be >= 0 and prefetches in
// [0, ring] (asserted).
std::vector<int64_t> ring_starts(const std::vector<int64_t>& stream, const std::vector<int64_t>& prefetch,
                                 int64_t ring);

}  // namespace dlr
