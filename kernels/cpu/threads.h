// The OpenMP team size the CPU kernels actually ran with, per calling thread:
// conv2d (the kernel that dominates every network) notes its team size from the
// team's master thread, which is the thread that called it. Session reads it
// after each inference (InferTiming::threads) and the tests check it.
#pragma once

namespace dlr::cpu {

// Called by a team's master: records max(n, the largest since the last take).
void note_team_size(int n);
// The largest team size noted on this thread since the last call (0 if none); resets it.
int take_team_size();

}  // namespace dlr::cpu
