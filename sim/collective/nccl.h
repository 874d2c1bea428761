// A collective timed by NCCL's model (comm/nccl_model.h; `collectives: nccl`): the cheapest
// (algorithm, protocol) pair, or the cheapest protocol of one algorithm; its latency is slept and
// flows that move what that algorithm moves (a ring to the next rank, NCCL's trees, NVLS to the
// switch and back, NVLSTree: nvls_tree.h, broadcast's chain from the root) run at its pace: alone
// they take the model's time, sharing links with other traffic longer.
#pragma once

#include "sim/collective/algorithm.h"

#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace overlapsim::sim::collective {

// The flows of one shape (group, op, NCCL algorithm, broadcast's root) for an array of 1 byte and
// what they take alone: the latency of their slowest route and their time per byte at link speed.
// Shared by the NcclModel algorithms of one Network: the shape depends on the group and the
// algorithm only, their bytes scale with the array.
struct NcclFlowShape {
  std::vector<Flow> flows;
  double route_s = 0;
  double unpaced_s_per_byte = 0;
  double uplink_s_per_byte = 0; // folded fat tree: uplink_time for 1 byte
};
using NcclFlowShapes = std::map<std::tuple<int, int, int, int>, NcclFlowShape>;

class NcclModel final : public Algorithm {
public:
  // `only`: the cheapest protocol of that algorithm; none: NCCL's tuner picks both.
  NcclModel(Fabric& fabric, NcclFlowShapes& shapes, std::optional<comm::NcclAlgorithm> only)
      : fabric_(fabric), shapes_(shapes), only_(only) {}
  // s.op: all-reduce, reduce-scatter, all-gather or broadcast (from `root`).
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  // The price every member of one collective asks for in turn: the last one's, kept with its key
  // (group, op, array bytes), so that an N-rank collective prices once instead of N times.
  const comm::NcclCost& cost_of(const Group& g, CollectiveOp op, double bytes);

  Fabric& fabric_;
  NcclFlowShapes& shapes_;
  std::optional<comm::NcclAlgorithm> only_;
  std::optional<std::tuple<int, CollectiveOp, double>> last_key_;
  comm::NcclCost last_cost_{};
};

} // namespace overlapsim::sim::collective
