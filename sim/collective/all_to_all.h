// All-to-all as direct messages: every member sends S/N to every other member at once (NCCL's
// all-to-all is grouped point-to-point sends, not a ring).
#pragma once

#include "sim/collective/algorithm.h"

namespace overlapsim::sim::collective {

class AllToAll final : public Algorithm {
public:
  explicit AllToAll(Fabric& fabric) : fabric_(fabric) {}
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  Fabric& fabric_;
};

} // namespace overlapsim::sim::collective
