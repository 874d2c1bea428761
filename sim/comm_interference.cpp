#include "sim/comm_interference.h"

namespace overlapsim::sim {

CommInterference::CommInterference(const Platform& platform)
    : platform_(platform), open_(platform.gpus.size(), 0) {}

// The count changes and the power state is set in one step of the calling actor, so however
// actors interleave, the last state set matches the count.
void CommInterference::begin(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (open_[r]++ == 0 && platform_.interference_pstate)
    platform_.gpus[r]->set_pstate(1);
}

void CommInterference::end(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (--open_[r] == 0 && platform_.interference_pstate)
    platform_.gpus[r]->set_pstate(0);
}

} // namespace overlapsim::sim
