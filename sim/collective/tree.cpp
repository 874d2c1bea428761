#include "sim/collective/tree.h"

#include "comm/nccl_model.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::sim::collective {

namespace {
int tree_depth(int n) {
  return n <= 1 ? 0 : static_cast<int>(std::floor(std::log2(n)));
}
} // namespace

std::vector<Flow> tree_flows(Fabric& fabric, const Group& g, double bytes, double* worst_latency,
                             int* depth, bool nvls_intra) {
  // Chains inside the nodes carry the whole array each way; the two trees over the nodes' first
  // GPUs carry half each, up (reduce) and down (broadcast), all pipelined.
  const Split* sp = fabric.split(g);
  std::vector<std::vector<int>> nodes; // members per node
  if (sp)
    for (const Group* intra : sp->intra)
      nodes.push_back(intra->ranks);
  else
    nodes.push_back(g.ranks); // one node (or uneven): a single chain
  std::vector<Flow> flows;    // every rank builds it: trees serve small messages and groups
  double worst = 0;
  auto edge = [&](int a, int b, double amount) {
    flows.push_back({a, b, amount});
    flows.push_back({b, a, amount});
    worst = std::max(worst, fabric.latency(a, b));
  };
  for (const auto& members : nodes) {
    if (nvls_intra && members.size() > 1) {
      // NVLink SHARP: every GPU sends S to the switch and gets S back (as a ring of S flows).
      for (std::size_t i = 0; i < members.size(); ++i)
        flows.push_back({members[i], members[(i + 1) % members.size()], bytes});
      continue;
    }
    for (std::size_t i = 0; i + 1 < members.size(); ++i)
      edge(members[i], members[i + 1], bytes);
  }
  const int m = static_cast<int>(nodes.size());
  for (int tree : {0, 1}) // NCCL's double binary tree over the nodes
    for (int i = 0; i < m; ++i) {
      const int p = comm::nccl_tree_parent(i, tree, m);
      if (p < 0)
        continue;
      // NCCL runs a tree per channel and spreads the channels over the node's GPUs and NICs: the
      // tree edges between two nodes join every pair of same-position GPUs, each with its share.
      const auto& child = nodes[static_cast<std::size_t>(i)];
      const auto& parent = nodes[static_cast<std::size_t>(p)];
      const std::size_t lanes = std::min(child.size(), parent.size());
      for (std::size_t k = 0; k < lanes; ++k)
        edge(child[k], parent[k], bytes / 2 / static_cast<double>(lanes));
    }
  *worst_latency = worst;
  *depth = static_cast<int>(nodes.front().size()) - 1 + tree_depth(m);
  // Each member's bytes by link class, once per group: a tree's flows scale with the array, so
  // the shares hold for every size (classify splits a tree all-reduce's bytes with them).
  if (auto [it, fresh] = fabric.tree_shares().try_emplace({g.id, nvls_intra}); fresh) {
    std::vector<std::array<double, 3>> own(static_cast<std::size_t>(g.size()));
    for (const auto& f : flows)
      own[static_cast<std::size_t>(g.index_of(f.src))]
         [static_cast<std::size_t>(fabric.link_class(f.src, f.dst))] += f.bytes;
    for (auto& shares : own)
      if (const double total = shares[0] + shares[1] + shares[2]; total > 0)
        for (double& x : shares)
          x /= total;
    it->second = std::move(own);
  }
  return flows;
}

CollectiveOutcome Tree::run(int /*rank*/, const Scope& s, double bytes, int root) {
  return s.op == CollectiveOp::broadcast ? broadcast(s, bytes, root) : all_reduce(s, bytes);
}

CollectiveOutcome Tree::all_reduce(const Scope& s, double bytes) {
  double worst = 0;
  int depth = 0;
  const auto flows = tree_flows(fabric_, s.group, bytes, &worst, &depth, false);
  fabric_.fused(s, (2 * depth - 1) * worst, [&] { return flows; });
  return {bytes, "tree/fused"};
}

CollectiveOutcome Tree::broadcast(const Scope& s, double bytes, int root) {
  // Two binary trees rooted at the root (group order rotated so the root is index 0), half each.
  const Group& g = s.group;
  const int n = g.size();
  const int r = g.index_of(root);
  auto rank_at = [&](int i) { return g.ranks[static_cast<std::size_t>((i + r) % n)]; };
  std::vector<Flow> flows;
  double worst = 0;
  for (bool mirrored : {false, true})
    for (int i = 1; i < n; ++i) {
      // The mirrored tree over indices 1..n-1 keeps the root at 0 on top of both.
      const int j = mirrored ? n - i : i;
      const int p = (j - 1) / 2;
      const int parent_index = mirrored && p > 0 ? n - p : p;
      flows.push_back({rank_at(parent_index), rank_at(i), bytes / 2});
      worst = std::max(worst, fabric_.latency(rank_at(parent_index), rank_at(i)));
    }
  fabric_.fused(s, (tree_depth(n) - 1) * worst, [&] { return flows; });
  return {bytes, "tree/fused"};
}

} // namespace overlapsim::sim::collective
