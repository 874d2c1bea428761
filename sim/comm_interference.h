// Communication slowing computation (cluster.gpu.comm_interference; issue 25.4). While a
// collective or a message moves a GPU's data, NCCL's kernels hold some of that GPU's SMs and HBM
// bandwidth: whatever the GPU computes meanwhile runs at (1 - share) of its speed, and nothing is
// lost when it computes nothing.
//
// Only while data moves: a collective waiting for a slower peer, or a posted receive whose send
// has not started, slows nothing (Lee et al. measured overlapped collectives that were moving
// data). Bounded per GPU: however many transfers of a GPU are open at once, the GPU is slowed
// once, so concurrent ops (CDP's sends and receives, ACCO's two streams) do not add up.
//
// Mechanism: every GPU host has two power states, its speed and (1 - share) of it (sim/platform.h);
// the first open transfer switches to the second, the last one to end switches back, and SimGrid
// rescales the executions in flight. (Before, a background Exec bounded to share x speed ran while
// transfers were open: SimGrid cancels an actor's activities when it exits, and an Exec started
// per busy period by whichever actor closed a collective sometimes ended at once, leaving one
// node's GPUs unslowed.)
#pragma once

#include "sim/platform.h"

#include <vector>

namespace overlapsim::sim {

class CommInterference {
public:
  explicit CommInterference(const Platform& platform);

  // A transfer of `rank`'s data starts or ends; any actor may call these.
  void begin(int rank);
  void end(int rank);

private:
  const Platform& platform_;
  std::vector<int> open_; // transfers open per rank
};

} // namespace overlapsim::sim
