#include "sim/rank_classes.h"

#include "comm/nccl_model.h"
#include "hw/site_fat_trees.h"
#include "parallel/layout.h"
#include "sim/site_classes.h"
#include "sim/slowest_of.h"
#include "sim/type_classes.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <numeric>
#include <optional>
#include <stdexcept>
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

std::vector<int> RankClasses::slowest_of(int of) const {
  if (of < 0)
    of = extreme;
  const auto type = [&](int r) {
    return node_type.empty() ? 0 : node_type[static_cast<std::size_t>(r / gpus_per_node)];
  };
  std::vector<int> ranks;
  for (int r = 0; r < world; ++r)
    if (r == of || (!simulated(r) && type(r) == type(of)))
      ranks.push_back(r);
  return ranks;
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
  const bool statistical = c.rank_classes == scenario::RankClassesChoice::statistical;
  if (c.jitter.active() && !statistical)
    return "jitter on every GPU";
  if (s.training.seq_len_distribution.kind != scenario::SeqLenDistribution::Kind::fixed &&
      !statistical)
    return "sequence lengths drawn per GPU";
  if (std::string why = site_fold_obstacle(s); !why.empty())
    return why;
  if (c.collectives == scenario::CollectiveFidelity::steps)
    return "collectives: steps";
  return "";
}

std::string statistical_differences(const scenario::Scenario& s) {
  std::vector<std::string> what;
  if (s.cluster.jitter.active())
    what.emplace_back("jitter");
  if (s.training.seq_len_distribution.kind != scenario::SeqLenDistribution::Kind::fixed)
    what.emplace_back("sequence lengths");
  for (const auto& st : s.cluster.stragglers)
    if (st.slowdown != 1.0) {
      what.emplace_back("stragglers");
      break;
    }
  return fmt::format("{}", fmt::join(what, ", "));
}

std::vector<std::vector<int>> alike_node_groups(const scenario::Scenario& s, std::string& why) {
  const int nodes = s.cluster.nodes, per_node = s.cluster.gpus_per_node;
  std::vector<std::vector<int>> groups = site_node_groups(s); // a flat ring across sites
  if (!groups.empty())
    return groups;
  if (s.parallelism.tensor == 1 && s.parallelism.pipeline == 1) {
    for (int n = 0; n < nodes; ++n)
      groups.push_back({n});
    return groups;
  }
  std::optional<parallel::ParallelLayout> placed;
  try {
    placed.emplace(parallel::ParallelLayout::of(s));
  } catch (const std::invalid_argument& e) {
    why = e.what(); // the simulation reports it
    return {};
  }
  const parallel::ParallelLayout& layout = *placed;
  const int world = layout.world_size();
  // The rank a pipeline message or a TP group joins `rank` to next (-1: none): the next stage's,
  // the next TP rank's.
  const auto next = [&](int rank, bool stage) {
    auto c = layout.coordinates(rank);
    int& along = stage ? c.pipeline : c.tensor;
    if (++along == (stage ? layout.pipeline() : layout.tensor()))
      return -1;
    return layout.rank_of(c);
  };
  // Union-find over nodes, joined where a message or a TP group crosses between them.
  std::vector<int> parent(static_cast<std::size_t>(nodes));
  std::iota(parent.begin(), parent.end(), 0);
  const auto root = [&](int n) {
    while (parent[static_cast<std::size_t>(n)] != n)
      n = parent[static_cast<std::size_t>(n)] =
          parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(n)])];
    return n;
  };
  for (int r = 0; r < world; ++r)
    for (const bool stage : {true, false})
      if (const int peer = next(r, stage); peer >= 0)
        parent[static_cast<std::size_t>(root(r / per_node))] = root(peer / per_node);
  std::vector<int> group_of_root(static_cast<std::size_t>(nodes), -1);
  std::vector<int> index(static_cast<std::size_t>(nodes)); // a node's place in its group
  for (int n = 0; n < nodes; ++n) {
    auto& g = group_of_root[static_cast<std::size_t>(root(n))];
    if (g < 0) {
      g = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    index[static_cast<std::size_t>(n)] =
        static_cast<int>(groups[static_cast<std::size_t>(g)].size());
    groups[static_cast<std::size_t>(g)].push_back(n);
  }
  // Alike: node i of every group holds the GPUs (tensor rank and stage, GPU by GPU) of node i of
  // the first, and its messages and TP peers are theirs, shifted the same way.
  const auto& first = groups.front();
  const auto image = [&](int rank) {
    const int n = rank / per_node;
    if (index[static_cast<std::size_t>(n)] >= static_cast<int>(first.size()))
      return -1;
    return first[static_cast<std::size_t>(index[static_cast<std::size_t>(n)])] * per_node +
           rank % per_node;
  };
  for (const auto& g : groups)
    if (g.size() != first.size()) {
      why = "node groups of unequal size (parallelism.order)";
      return {};
    }
  for (int r = 0; r < world; ++r) {
    const int mirror = image(r);
    const auto a = layout.coordinates(r), b = layout.coordinates(mirror);
    bool alike = a.tensor == b.tensor && a.pipeline == b.pipeline;
    for (const bool stage : {true, false}) {
      const int peer = next(r, stage);
      alike = alike && (peer < 0 ? -1 : image(peer)) == next(mirror, stage);
    }
    if (!alike) {
      why = fmt::format("nodes not alike under parallelism.order {} (GPU {} and GPU {})",
                        scenario::order_string(s.parallelism.order), r, mirror);
      return {};
    }
  }
  return groups;
}

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

std::vector<int> replicas_stood_for(const scenario::Scenario& s, const RankClasses& rc,
                                    const std::vector<int>& group_of,
                                    const std::vector<char>& among, int extreme_group) {
  const auto layout = parallel::ParallelLayout::of(s);
  std::vector<char> left_out(static_cast<std::size_t>(layout.data()), 0);
  int mine = -1;
  for (int r = 0; r < rc.world; ++r) {
    const auto n = static_cast<std::size_t>(r / rc.gpus_per_node);
    const int g = group_of[n];
    const int d = layout.coordinates(r).data;
    if (g == extreme_group && (mine < 0 || d < mine))
      mine = d;
    if (among[static_cast<std::size_t>(g)] && !rc.runs[n])
      left_out[static_cast<std::size_t>(d)] = 1;
  }
  std::vector<int> replicas;
  for (int d = 0; d < layout.data(); ++d)
    if (left_out[static_cast<std::size_t>(d)])
      replicas.push_back(d);
  replicas.push_back(mine);
  return replicas;
}

namespace {

// Under `auto`, where only draws tell the nodes apart: what the statistical fold would simulate
// instead (users learn of the key where it would help); "" where it would not fold.
std::string statistical_hint(const scenario::Scenario& s, const Algorithm& algorithm) {
  if (s.cluster.rank_classes != scenario::RankClassesChoice::automatic ||
      statistical_differences(s).empty())
    return "";
  scenario::Scenario asked = s;
  asked.cluster.rank_classes = scenario::RankClassesChoice::statistical;
  const RankClasses would = choose_rank_classes(asked, algorithm);
  if (!would.statistical())
    return "";
  return fmt::format("; cluster.rank_classes: statistical would simulate {} of {} GPUs, an "
                     "approximation",
                     would.simulated_ranks(), would.world);
}
} // namespace

RankClasses choose_rank_classes(const scenario::Scenario& s, const Algorithm& algorithm) {
  RankClasses rc;
  rc.world = s.cluster.world_size();
  rc.gpus_per_node = s.cluster.gpus_per_node;
  rc.why_full = rank_classes_obstacle(s);
  if (rc.why_full.empty() && !algorithm.node_symmetric())
    rc.why_full = algorithm.name() + " sends point to point";
  if (!rc.why_full.empty()) {
    rc.why_full += statistical_hint(s, algorithm);
    return rc;
  }
  const auto groups = alike_node_groups(s, rc.why_full);
  if (groups.empty())
    return rc;
  // Statistical: what only draws and slowdowns tell apart folds too (sim/slowest_of.h).
  const std::string differences = s.cluster.rank_classes == scenario::RankClassesChoice::statistical
                                      ? statistical_differences(s)
                                      : "";
  // With a pipeline (or TP groups over several nodes) a replica, whose TP groups and stages wait
  // for each other every op, is the unit that runs as the slowest of those left out (issue
  // 64.5). Not for TP inside a node without a pipeline: ACCO's compute stream there accumulates
  // as many micro-batches as fit in a round, so replicas drift apart and the slowest hand-off is
  // not the slowest replica's (8 x 4 A100 TP2, jitter 0.05: -3.4% per replica, -0.35% with one
  // GPU standing for all; ddp +0.000% against +1.06%). docs/ARCHITECTURE.md.
  const bool per_replica =
      !differences.empty() &&
      (s.parallelism.pipeline > 1 || groups.size() != static_cast<std::size_t>(s.cluster.nodes));
  if (!differences.empty()) {
    if (per_replica && groups.size() < 3) {
      rc.why_full = "rank_classes: statistical needs 3 node groups or more (one representative, "
                    "one for the slowest, one left out)";
      return rc;
    }
    if (s.cluster.nodes < 3) {
      rc.why_full = "rank_classes: statistical needs 3 nodes or more (one representative, one "
                    "for the slowest, one left out)";
      return rc;
    }
  }
  const bool typed = !s.cluster.node_types.empty();
  if (std::string why = typed_fold_obstacle(s); !why.empty()) {
    rc.why_full = why;
    return rc;
  }
  // Groups with a straggler run as themselves; one of the others stands for the rest.
  const auto nodes = static_cast<std::size_t>(s.cluster.nodes);
  const int m = static_cast<int>(groups.size());
  std::vector<int> group_of(nodes), index(nodes);
  for (int g = 0; g < m; ++g)
    for (std::size_t i = 0; i < groups[static_cast<std::size_t>(g)].size(); ++i) {
      const auto n = static_cast<std::size_t>(groups[static_cast<std::size_t>(g)][i]);
      group_of[n] = g;
      index[n] = static_cast<int>(i);
    }
  std::vector<char> alike(static_cast<std::size_t>(m), 1);
  for (const auto& st :
       differences.empty() ? s.cluster.stragglers : std::vector<scenario::Straggler>{})
    if (st.slowdown != 1.0)
      alike[static_cast<std::size_t>(
          group_of[static_cast<std::size_t>(st.gpu / rc.gpus_per_node)])] = 0;
  int representative = -1;
  if (s.cluster.fabric.topology == hw::FabricSpec::Topology::fat_tree) {
    // Which cables d-mod-k routing gives a node's flows tells nodes apart; folded, each NIC gets
    // its even share of the cables above its leaf (sim/platform.h). A representative whose ring
    // neighbours share its leaf switches keeps a ring's hops off that share, as most nodes' are.
    // With WAN sites, each site's tree (hw/site_fat_trees.h); a ring inside a site runs over its
    // nodes in order.
    std::vector<std::vector<int>> sites;
    for (const auto& site : s.cluster.sites) {
      sites.push_back(site.nodes);
      std::sort(sites.back().begin(), sites.back().end());
    }
    const hw::SiteFatTrees trees =
        hw::build_site_fat_trees(s.cluster.fabric, s.cluster.nodes, s.cluster.nics_per_node, sites);
    // Oversubscribed (one tree), each collective is held to its busiest cable above the leaves as
    // d-mod-k routes every node's flows (Fabric::uplink_time); across sites, leaves loaded evenly.
    if (sites.size() > 1)
      rc.approximation = "fat tree per WAN site: leaf uplinks loaded evenly";
    else
      rc.approximation = trees.trees.front().oversubscription() > 1
                             ? "fat tree: held to the busiest d-mod-k cable above the leaves"
                             : "fat tree: leaf uplinks loaded evenly";
    if (sites.size() < 2) {
      sites.emplace_back(static_cast<std::size_t>(s.cluster.nodes));
      std::iota(sites.back().begin(), sites.back().end(), 0);
    }
    std::vector<char> interior = alike;
    for (const auto& site : sites) {
      const auto k = site.size();
      for (std::size_t i = 0; i < k; ++i)
        for (int r = 0; r < s.cluster.nics_per_node; ++r)
          for (const std::size_t j : {(i + 1) % k, (i + k - 1) % k})
            if (trees.common_level(site[i], site[j], r) > 1)
              interior[static_cast<std::size_t>(group_of[static_cast<std::size_t>(site[i])])] = 0;
    }
    representative = busiest_tree_node(m, interior);
  }
  // NCCL's trees over a stage's data-parallel group run over the groups, in order.
  if (representative < 0)
    representative = busiest_tree_node(m, alike);
  if (representative < 0) {
    rc.why_full = m == s.cluster.nodes         ? "a straggler on every node"
                  : s.cluster.sites.size() > 1 ? "a straggler in every WAN site"
                                               : "a straggler in every pipeline's nodes";
    return rc;
  }
  const auto& chosen = groups[static_cast<std::size_t>(representative)];
  rc.node = chosen.front();
  rc.folded = true;
  rc.runs.assign(nodes, 0);
  rc.stand_in.assign(nodes, 0);
  if (s.parallelism.pipeline > 1)
    rc.group = group_of;
  // Statistical: the last node (group) other than the representative runs as itself (its
  // shifted copy's traffic on its own links, as a straggler's node), its first GPU (pipeline
  // replica) as the slowest of the GPUs (replicas) left out.
  // With GPU types (groups single nodes): the last node of the representative's type; per
  // replica, the last group of its type pattern.
  const int extreme_group =
      differences.empty() ? -1
      : typed && per_replica
          ? last_group_like(s.cluster, groups, type_pattern(s.cluster, chosen), representative)
      : typed                   ? last_node_of_type(s.cluster, rc.node, {rc.node})
      : representative == m - 1 ? m - 2
                                : m - 1;
  const int extreme_node =
      extreme_group < 0 ? -1 : groups[static_cast<std::size_t>(extreme_group)].front();
  for (std::size_t n = 0; n < nodes; ++n) {
    const int g = group_of[n];
    rc.runs[n] =
        g == representative || !alike[static_cast<std::size_t>(g)] || g == extreme_group ? 1 : 0;
    rc.stand_in[n] = rc.runs[n] ? static_cast<int>(n) : chosen[static_cast<std::size_t>(index[n])];
  }
  // One node group per pattern of GPU types (cluster.node_types), and statistically one extreme
  // per type (per type pattern with replicas).
  std::vector<char> usable = alike;
  if (extreme_group >= 0)
    usable[static_cast<std::size_t>(extreme_group)] = 0;
  fold_node_types(s, rc, groups, usable);
  if (typed && !differences.empty() && per_replica) {
    add_pattern_extremes(s, rc, groups, extreme_group, differences);
  } else if (typed && !differences.empty()) {
    add_type_extremes(s, rc, extreme_node, differences);
  } else if (per_replica) {
    const auto& replicas = rc.replicas.emplace_back(replicas_stood_for(
        s, rc, group_of, std::vector<char>(static_cast<std::size_t>(m), 1), extreme_group));
    rc.extreme = parallel::ParallelLayout::of(s).rank_of({0, replicas.back(), 0});
    rc.approximation = fmt::format(
        "{}statistical approximation: replica {} (GPU {} on) runs op by op as the slowest of the "
        "{} replicas left out and itself ({}); rank_classes: auto simulates every GPU",
        rc.approximation.empty() ? "" : rc.approximation + "; ", replicas.back(), rc.extreme,
        replicas.size() - 1, differences);
  } else if (extreme_node >= 0) {
    rc.extreme = extreme_node * rc.gpus_per_node;
    const int stood_for = rc.world - rc.simulated_ranks() + 1;
    // Past statistical_clocks() GPUs the clocks are groups' order statistics (sim/slowest_of.h).
    const std::string drawn =
        stood_for > statistical_clocks()
            ? fmt::format(", drawn as order statistics of {} clocks of ~{} GPUs each (slowed GPUs "
                          "their own)",
                          statistical_clocks(),
                          (stood_for + statistical_clocks() - 1) / statistical_clocks())
            : "";
    rc.approximation = fmt::format(
        "{}statistical approximation: GPU {} runs as the slowest of the {} GPUs left out and "
        "itself ({}){}; rank_classes: auto simulates every GPU",
        rc.approximation.empty() ? "" : rc.approximation + "; ", rc.extreme, stood_for, differences,
        drawn);
  }
  fold_sites(s, rc, alike); // WAN sites: their images, and sites a straggler sets apart
  // Folding hides GPUs from the trace; it is worth that only where it saves time (issue 62.7).
  if (const int left_out = rc.world - rc.simulated_ranks(); left_out < kFoldFromGpusLeftOut) {
    rc.folded = false;
    rc.extreme = -1;
    rc.extremes.clear();
    rc.node_type.clear();
    rc.replicas.clear();
    rc.approximation.clear();
    rc.runs.clear();
    rc.stand_in.clear();
    rc.group.clear();
    rc.site.clear();
    rc.wan_image.clear();
    rc.wan_shares.clear();
    rc.why_full = left_out == 0
                      ? "folding would simulate every GPU"
                      : fmt::format("folding would leave out only {} GPU{} (rank classes "
                                    "fold from {})",
                                    left_out, left_out == 1 ? "" : "s", kFoldFromGpusLeftOut);
  }
  return rc;
}

} // namespace overlapsim::sim
