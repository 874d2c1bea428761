#include "sim/rank_classes.h"

#include "comm/nccl_model.h"

#include <fmt/format.h>
#include <vector>

namespace overlapsim::sim {

int RankClasses::simulated_ranks() const {
  return folded ? static_cast<int>(simulated_nodes().size()) * gpus_per_node : world;
}

std::vector<int> RankClasses::simulated_nodes() const {
  std::vector<int> nodes;
  for (std::size_t n = 0; n < runs.size(); ++n)
    if (runs[n])
      nodes.push_back(static_cast<int>(n));
  return nodes;
}

std::string RankClasses::describe() const {
  if (folded)
    return fmt::format("classes ({} of {} GPUs simulated{}{})", simulated_ranks(), world,
                       approximation.empty() ? "" : "; ", approximation);
  return fmt::format("full ({})", why_full);
}

std::string rank_classes_obstacle(const scenario::Scenario& s) {
  const auto& c = s.cluster;
  if (c.rank_classes == scenario::RankClassesChoice::off)
    return "cluster.rank_classes: off";
  if (c.nodes < 2)
    return "one node";
  if (s.parallelism.tensor > 1 || s.parallelism.pipeline > 1)
    return "tensor or pipeline parallelism (not folded yet, issue 65.6)";
  if (c.jitter.active())
    return "jitter on every GPU";
  if (s.training.seq_len_distribution.kind != scenario::SeqLenDistribution::Kind::fixed)
    return "sequence lengths drawn per GPU";
  if (c.sites.size() > 1)
    return "WAN sites";
  if (c.collectives == scenario::CollectiveFidelity::steps)
    return "collectives: steps";
  if (c.fabric.topology == hw::FabricSpec::Topology::fat_tree) {
    // Folded, a collective's flows are held to the uplink time of its own bytes
    // (collective::Fabric::uplink_time); concurrent collectives over other groups meet there unseen
    // unless each GPU position has a rail, and so leaf switches, of its own.
    const hw::FatTree tree = hw::build_fat_tree(c.fabric, c.nodes, c.nics_per_node);
    if (tree.levels > 1 && tree.oversubscription() > 1 &&
        (tree.placement == hw::FabricSpec::Placement::node || c.nics_per_node != c.gpus_per_node))
      return "an oversubscribed fat tree whose leaves hold several GPU positions' NICs";
  }
  return "";
}

namespace {
// The node NCCL's two trees over `m` nodes give the most edges (the lowest of equals), among the
// nodes `usable`.
int busiest_tree_node(int m, const std::vector<char>& usable) {
  std::vector<int> edges(static_cast<std::size_t>(m), 0);
  for (int tree : {0, 1})
    for (int i = 0; i < m; ++i)
      if (const int p = comm::nccl_tree_parent(i, tree, m); p >= 0) {
        ++edges[static_cast<std::size_t>(i)];
        ++edges[static_cast<std::size_t>(p)];
      }
  int best = -1;
  for (int i = 0; i < m; ++i)
    if (usable[static_cast<std::size_t>(i)] &&
        (best < 0 || edges[static_cast<std::size_t>(i)] > edges[static_cast<std::size_t>(best)]))
      best = i;
  return best;
}
} // namespace

RankClasses choose_rank_classes(const scenario::Scenario& s, const Algorithm& algorithm) {
  RankClasses rc;
  rc.world = s.cluster.world_size();
  rc.gpus_per_node = s.cluster.gpus_per_node;
  rc.why_full = rank_classes_obstacle(s);
  if (rc.why_full.empty() && !algorithm.node_symmetric())
    rc.why_full = algorithm.name() + " sends point to point";
  if (!rc.why_full.empty())
    return rc;
  // Nodes with a straggler run as themselves; one of the others stands for the rest.
  const auto nodes = static_cast<std::size_t>(s.cluster.nodes);
  std::vector<char> alike(nodes, 1);
  for (const auto& st : s.cluster.stragglers)
    if (st.slowdown != 1.0)
      alike[static_cast<std::size_t>(st.gpu / rc.gpus_per_node)] = 0;
  int representative = -1;
  if (s.cluster.fabric.topology == hw::FabricSpec::Topology::fat_tree) {
    // Which cables d-mod-k routing gives a node's flows tells nodes apart; folded, each NIC gets
    // its even share of the cables above its leaf (sim/platform.h). A representative whose ring
    // neighbours share its leaf switches keeps a ring's hops off that share, as most nodes' are.
    const hw::FatTree tree =
        hw::build_fat_tree(s.cluster.fabric, s.cluster.nodes, s.cluster.nics_per_node);
    rc.approximation = "fat tree: leaf uplinks loaded evenly";
    const int m = s.cluster.nodes;
    std::vector<char> interior = alike;
    for (int n = 0; n < m; ++n)
      for (int r = 0; r < s.cluster.nics_per_node; ++r)
        for (const int peer : {(n + 1) % m, (n + m - 1) % m})
          if (tree.common_level(tree.slot_of(n, r), tree.slot_of(peer, r)) > 1)
            interior[static_cast<std::size_t>(n)] = 0;
    representative = busiest_tree_node(m, interior);
  }
  rc.node = representative >= 0 ? representative : busiest_tree_node(s.cluster.nodes, alike);
  if (rc.node < 0) {
    rc.why_full = "a straggler on every node";
    return rc;
  }
  rc.folded = true;
  rc.runs.assign(nodes, 0);
  for (std::size_t n = 0; n < nodes; ++n)
    rc.runs[n] = alike[n] ? 0 : 1;
  rc.runs[static_cast<std::size_t>(rc.node)] = 1;
  // Folding hides GPUs from the trace; it is worth that only where it saves time (issue 62.7).
  if (const int left_out = rc.world - rc.simulated_ranks(); left_out < kFoldFromGpusLeftOut) {
    rc.folded = false;
    rc.runs.clear();
    rc.why_full = left_out == 0
                      ? "folding would simulate every GPU"
                      : fmt::format("folding would leave out only {} GPU{} (rank classes "
                                    "fold from {})",
                                    left_out, left_out == 1 ? "" : "s", kFoldFromGpusLeftOut);
  }
  return rc;
}

} // namespace overlapsim::sim
