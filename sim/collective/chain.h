// Broadcast and reduce as a pipelined chain along the ring: broadcast flows away from the root,
// reduce towards it. Every rank but the chain's end forwards the whole array; the pipeline costs
// (n-1) latencies plus one transfer of S at the bottleneck (NCCL's ring broadcast with many small
// chunks).
#pragma once

#include "sim/collective/algorithm.h"

namespace overlapsim::sim::collective {

class Chain final : public Algorithm {
public:
  explicit Chain(Fabric& fabric) : fabric_(fabric) {}
  // s.op: broadcast or reduce.
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  Fabric& fabric_;
};

} // namespace overlapsim::sim::collective
