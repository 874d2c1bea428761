// NCCL's double binary tree for all-reduce: inside a node the GPUs form a chain, across nodes two
// complementary binary trees over the nodes each carry half the data (reduce up, broadcast down,
// pipelined); a group within one node is a single chain. Broadcast: two binary trees rooted at the
// root, half the array each. Trees always run fused (NCCL pipelines them in small chunks; fused is
// that pipeline's limit).
#pragma once

#include "sim/collective/algorithm.h"

#include <vector>

namespace overlapsim::sim::collective {

// The flows of NCCL's double binary tree all-reduce of `bytes` over `g` (NCCL's model runs them
// too: nccl.h); `nvls_intra`: NVLS inside the nodes instead of chains. Sets the slowest edge's
// latency and the pipeline's depth, and records each member's bytes by link class
// (Fabric::tree_shares) once per group.
std::vector<Flow> tree_flows(Fabric& fabric, const Group& g, double bytes, double* worst_latency,
                             int* depth, bool nvls_intra);

class Tree final : public Algorithm {
public:
  explicit Tree(Fabric& fabric) : fabric_(fabric) {}
  // s.op: all-reduce or broadcast.
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  CollectiveOutcome all_reduce(const Scope& s, double bytes);
  CollectiveOutcome broadcast(const Scope& s, double bytes, int root);
  Fabric& fabric_;
};

} // namespace overlapsim::sim::collective
