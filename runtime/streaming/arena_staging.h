// Arena staging: streamed weight blobs copied, every inference, into bytes of the
// activation arena that no activation holds at that point of the network, instead of
// into the ring pool. Where activations need most of the arena early and most weights
// are read late, a blob staged there leaves the ring to the others, so the ring's
// lookahead grows without device memory. Figures: docs/streaming.md section 6, "Arena
// staging".
//
// For a blob b read by step r, arena bytes [o, o + n) are free from step f on when every
// activation buffer (and every blob staged earlier) overlapping them that is written at
// or before r was last read at step f < r; the copy then waits for step f (f >= 0: after
// the inference's input). Blobs are tried largest first, each at the offset free
// earliest with its copy queued late or early (StreamOptions::arena_early), and kept, with
// the faster queue place, when the simulator predicts the inference faster with it
// (plan_streaming with StreamOptions::arena_offset / arena_wait). Each is also tried
// as the first of a run of the ring blobs after it, placed together and copied as one
// unit (StreamOptions::arena_joined), of about two and four times its bytes up to
// max_run_bytes (a copy costs a fixed time besides its bytes). Then neighbouring staged
// units, with the ring blobs between them, are tried as one run (ArenaStagingOptions::join),
// since the greedy pass only grows a run forward from its largest blob. A run taken early can
// hold arena bytes that a later, larger gain needed, so the caller compares the pass
// with and without runs (runtime/compile/placement_passes.cpp). The final plan is
// simulated with every check on (simulate() checks the staged bytes against the
// activations). Ring plans only. Plain C++ (no CUDA); deterministic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/core/status.h"
#include "runtime/compile/plan.h"
#include "runtime/streaming/copy_profile.h"
#include "runtime/streaming/simulator.h"
#include "runtime/streaming/stream_plan.h"

namespace dlr {

struct ArenaStagingOptions {
  SimOptions sim;                       // as the plan will run (prefetch); checks are off while choosing
  int max_simulations = 160;            // bounds the work (one simulation per blob tried)
  int64_t min_blob_bytes = 256 << 10;   // smaller blobs are not worth a copy of their own
  bool early = true;                    // also try each copy queued as soon as its bytes are free
  int64_t max_run_bytes = 0;            // runs (StreamOptions::arena_joined) up to this many bytes; 0: none
  bool join = true;                     // with runs: then neighbouring staged units joined where faster
};

struct ArenaStagingResult {
  std::vector<int64_t> offset;  // per weight blob: arena offset, -1 not staged (StreamOptions::arena_offset)
  std::vector<int> wait;        // per weight blob: the step its copy waits for (StreamOptions::arena_wait)
  std::vector<char> early;      // per weight blob: its copy queued as early as its wait allows (StreamOptions::arena_early)
  std::vector<char> joined;     // per weight blob: copied in one unit with the blob before it (StreamOptions::arena_joined)
  StreamPlan plan;              // plan_streaming with them (equal-chunk ring units)
  double predicted_ms = 0;      // simulated latency of `plan`
  double unstaged_ms = 0;       // the same options without staging
  int staged = 0;
  int early_copies = 0;         // staged blobs whose copies are queued early
  int runs = 0;                 // units carrying more than one staged blob
  int joins = 0;                // neighbouring staged units joined into one (ArenaStagingOptions::join)
  int64_t staged_bytes = 0;
  int simulations = 0;
  std::string how;              // one line for the notes
};

// options: a ring plan's options (resident set and budget included; arena_offset ignored).
// Returns the plan without staging (staged == 0) where nothing is predicted faster, the
// plan does not stream through a ring, or the arena has no room.
Expected<ArenaStagingResult> plan_arena_staging(const ExecutionPlan& plan, const CopyProfile& profile,
                                                const StreamOptions& options, const std::vector<double>& layer_ms,
                                                const ArenaStagingOptions& staging = {});

}  // namespace dlr
