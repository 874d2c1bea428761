// Communication slowing computation (cluster.gpu.comm_interference; issue 25.4). While a
// collective or a message moves a GPU's data, NCCL's kernels hold some of that GPU's SMs and HBM
// bandwidth: a background Exec bounded to `share x speed` runs on the GPU's host, and max-min
// sharing leaves the rest to whatever computes meanwhile (it costs nothing when nothing does).
//
// Only while data moves: a collective waiting for a slower peer, or a posted receive whose send
// has not started, slows nothing (Lee et al. measured overlapped collectives that were moving
// data). Bounded per GPU: however many transfers of a GPU are open at once, one Exec of `share`
// runs, so concurrent ops (CDP's sends and receives, ACCO's two streams) do not add up.
#pragma once

#include "sim/platform.h"

#include <simgrid/s4u.hpp>
#include <vector>

namespace overlapsim::sim {

class CommInterference {
public:
  CommInterference(const Platform& platform, double share);

  // A transfer of `rank`'s data starts or ends; any actor may call these.
  void begin(int rank);
  void end(int rank);

private:
  const Platform& platform_;
  double share_;
  std::vector<int> open_; // transfers open per rank
  std::vector<simgrid::s4u::ExecPtr> exec_;
};

} // namespace overlapsim::sim
