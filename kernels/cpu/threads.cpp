#include "kernels/cpu/threads.h"

namespace dlr::cpu {
namespace {
thread_local int t_max_team = 0;
}

void note_team_size(int n) {
  if (n > t_max_team) t_max_team = n;
}

int take_team_size() {
  const int n = t_max_team;
  t_max_team = 0;
  return n;
}

}  // namespace dlr::cpu
