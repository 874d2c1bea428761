#include "sim/rank_classes.h"

#include "sim/nccl_model.h"

#include <fmt/format.h>
#include <vector>

namespace overlapsim::sim {

std::string RankClasses::describe() const {
  if (folded)
    return fmt::format("classes ({} of {} GPUs simulated)", gpus_per_node, world);
  return fmt::format("full ({})", why_full);
}

std::string rank_classes_obstacle(const scenario::Scenario& s) {
  const auto& c = s.cluster;
  if (c.rank_classes == scenario::RankClassesChoice::off)
    return "cluster.rank_classes: off";
  if (c.nodes < 2)
    return "one node";
  if (!c.stragglers.empty())
    return fmt::format("a straggler on GPU {}", c.stragglers.front().gpu);
  if (c.jitter.distribution != scenario::JitterDistribution::none && c.jitter.sigma > 0)
    return "jitter on every GPU";
  if (s.training.seq_len_distribution.kind != scenario::SeqLenDistribution::Kind::fixed)
    return "sequence lengths drawn per GPU";
  if (c.sites.size() > 1)
    return "WAN sites";
  if (c.collectives == scenario::CollectiveFidelity::steps)
    return "collectives: steps";
  return "";
}

namespace {
// The node NCCL's two trees over `m` nodes give the most edges (the lowest of equals).
int busiest_tree_node(int m) {
  std::vector<int> edges(static_cast<std::size_t>(m), 0);
  for (int tree : {0, 1})
    for (int i = 0; i < m; ++i)
      if (const int p = nccl_tree_parent(i, tree, m); p >= 0) {
        ++edges[static_cast<std::size_t>(i)];
        ++edges[static_cast<std::size_t>(p)];
      }
  int best = 0;
  for (int i = 1; i < m; ++i)
    if (edges[static_cast<std::size_t>(i)] > edges[static_cast<std::size_t>(best)])
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
  rc.folded = true;
  rc.node = busiest_tree_node(s.cluster.nodes);
  return rc;
}

} // namespace overlapsim::sim
