// arena_room.h: the arena's taken bytes and the earliest free place for a blob.
#include "runtime/streaming/arena_room.h"

#include <algorithm>
#include <limits>

namespace dlr {
namespace {
constexpr int64_t kAlign = 256;
}  // namespace

std::vector<ArenaTaken> arena_taken(const ExecutionPlan& plan) {
  std::vector<ArenaTaken> taken;
  for (const Buffer& b : plan.buffers) taken.push_back({b.offset, b.bytes, b.first_step, b.last_step});
  for (const WeightBlob& w : plan.weights)
    if (w.arena_offset >= 0) taken.push_back({w.arena_offset, w.bytes, w.arena_wait + 1, w.step});
  return taken;
}

int64_t place_in_arena(const std::vector<ArenaTaken>& taken, int64_t arena, int64_t bytes, int reader,
                       int* free_after) {
  return place_run_in_arena(taken, arena, bytes, reader, reader, free_after);
}

int64_t place_run_in_arena(const std::vector<ArenaTaken>& taken, int64_t arena, int64_t bytes, int first_reader,
                           int last_reader, int* free_after) {
  std::vector<int64_t> offsets = {0};
  for (const ArenaTaken& t : taken) offsets.push_back(align_up(t.offset + t.bytes, kAlign));
  std::sort(offsets.begin(), offsets.end());
  offsets.erase(std::unique(offsets.begin(), offsets.end()), offsets.end());
  int64_t best = -1;
  int best_f = std::numeric_limits<int>::max();
  for (int64_t o : offsets) {
    if (o + bytes > arena) break;
    int f = 0;  // after step 0 at the earliest: after the input's upload and the arena's clearing
    bool ok = true;
    for (const ArenaTaken& t : taken) {
      if (t.offset >= o + bytes || o >= t.offset + t.bytes || t.first > last_reader) continue;
      if (t.last >= first_reader) {
        ok = false;
        break;
      }
      f = std::max(f, t.last);
    }
    if (ok && f < first_reader && f < best_f) {
      best = o;
      best_f = f;
    }
  }
  *free_after = best_f;
  return best;
}

}  // namespace dlr
