#include "sim/collective/nvls_tree.h"

namespace overlapsim::sim::collective {

bool aggregate_nvls_tree_flows(Fabric& fabric, const Group& g, std::vector<Flow>& flows) {
  // Only on a star (a node's NICs pooled into one link): a fat tree routes each GPU position's
  // flow on its own rail, which these flows would mix.
  const Split* sp = fabric.split(g);
  if (!fabric.platform().nics.empty() || !sp || fabric.has_sites())
    return false;
  const std::size_t per_node = sp->intra.front()->ranks.size();
  const int m = static_cast<int>(sp->intra.size());
  // A node takes part in at most 6 tree edges (a parent and two children per tree): each gets a
  // GPU of its own, so no GPU link carries two of them in one direction.
  if (per_node < 6 || m < 2)
    return false;
  // NVLS inside the nodes: NCCL's model prices it (the wait the NCCL algorithm sleeps); its flows
  // would share nothing with the tree's but the GPUs' own NVLink links (issue 64.1). A tree edge
  // between two nodes: one flow each way with the edge's bytes, where NCCL's channels (a flow
  // per same-position GPU pair) cross the same pooled NIC links with the same bytes in all.
  std::vector<Flow> fewer;
  std::vector<std::size_t> used(static_cast<std::size_t>(m), 0);
  const auto gpu = [&](int node) {
    const auto& ranks = sp->intra[static_cast<std::size_t>(node)]->ranks;
    return ranks[used[static_cast<std::size_t>(node)]++ % per_node];
  };
  for (int tree : {0, 1})
    for (int i = 0; i < m; ++i) {
      const int p = comm::nccl_tree_parent(i, tree, m);
      if (p < 0)
        continue;
      const int child = gpu(i), parent = gpu(p);
      fewer.push_back({child, parent, 0.5});
      fewer.push_back({parent, child, 0.5});
    }
  flows = std::move(fewer);
  return true;
}

} // namespace overlapsim::sim::collective
