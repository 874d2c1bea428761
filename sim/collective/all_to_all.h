// All-to-all as direct messages: every member sends S/N to every other member at once (NCCL's
// all-to-all is grouped point-to-point sends, not a ring). Under `collectives: nccl` the flows run
// at the pace of NCCL's grouped sends and receives (comm/nccl_alltoall.h: its channels and
// protocol, the GPU's own NICs across nodes): alone they take that price, sharing links longer.
#pragma once

#include "sim/collective/algorithm.h"

namespace overlapsim::sim::collective {

class AllToAll final : public Algorithm {
public:
  explicit AllToAll(Fabric& fabric) : fabric_(fabric) {}
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  // The NCCL model's all-to-all (the last rank to arrive runs every flow); what ran.
  const char* run_nccl(const Scope& s, double bytes);

  Fabric& fabric_;
};

} // namespace overlapsim::sim::collective
