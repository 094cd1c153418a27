// Helpers shared by the placement passes (placement.cpp, placement_passes.cpp); not
// for use outside runtime/compile.
#pragma once

#include <cstdio>
#include <string>

#include "runtime/compile/placement.h"
#include "runtime/core/units.h"

namespace dlr {

// printf-style formatting of up to three numbers, for one-line notes.
inline std::string fmt_text(const char* f, double a, double b = 0, double c = 0) {
  char buf[256];
  std::snprintf(buf, sizeof(buf), f, a, b, c);
  return buf;
}

// Transfer units chosen by simulation: a streamed ring with unit search on and no chunk size.
bool searchable(const PlacementState& s);
// Streamed blobs staged in the activation arena: CUDA ring plans with weights from host.
bool stageable(const PlacementState& s);
// The residency choice itself, without the pass's gating (predict_at_budget).
Status choose_residency(PlacementState& s);
// Tail copies can run: tail_prefetch on, a session's own ring from host memory.
bool tail_possible(const PlacementState& s);
// The note naming the pool the budget gave (after the automatic budget).
Status pool_note_pass(PlacementState& s);

}  // namespace dlr
