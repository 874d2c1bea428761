#include "sim/type_classes.h"

#include "parallel/layout.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <map>

namespace overlapsim::sim {

void fold_node_types(const scenario::Scenario& s, RankClasses& rc,
                     const std::vector<std::vector<int>>& groups, const std::vector<char>& alike) {
  const auto& c = s.cluster;
  if (c.node_types.empty() || !rc.folded)
    return;
  const int m = static_cast<int>(groups.size());
  std::vector<std::vector<int>> pattern;
  std::vector<int> group_of(static_cast<std::size_t>(c.nodes)), index(group_of.size());
  for (std::size_t g = 0; g < groups.size(); ++g) {
    pattern.push_back(type_pattern(c, groups[g]));
    for (std::size_t i = 0; i < groups[g].size(); ++i) {
      group_of[static_cast<std::size_t>(groups[g][i])] = static_cast<int>(g);
      index[static_cast<std::size_t>(groups[g][i])] = static_cast<int>(i);
    }
  }
  const int mine = group_of[static_cast<std::size_t>(rc.node)];
  std::map<std::vector<int>, int> representative{{pattern[static_cast<std::size_t>(mine)], mine}};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (representative.contains(pattern[g]))
      continue;
    std::vector<char> usable(groups.size(), 0);
    for (std::size_t h = 0; h < groups.size(); ++h)
      usable[h] = alike[h] && pattern[h] == pattern[g] ? 1 : 0;
    if (const int r = busiest_tree_node(m, usable); r >= 0)
      representative[pattern[g]] = r;
  }
  for (std::size_t n = 0; n < rc.runs.size(); ++n) {
    if (rc.runs[n])
      continue;
    const auto g = static_cast<std::size_t>(group_of[n]);
    // n's group has no straggler: its pattern has a representative.
    const int r = representative.at(pattern[g]);
    rc.runs[n] = static_cast<int>(g) == r ? 1 : 0;
    rc.stand_in[n] = groups[static_cast<std::size_t>(r)][static_cast<std::size_t>(index[n])];
  }
}

std::vector<int> type_pattern(const scenario::ClusterSpec& c, const std::vector<int>& group) {
  std::vector<int> types;
  for (const int n : group)
    types.push_back(c.node_type_of(n));
  return types;
}

int last_group_like(const scenario::ClusterSpec& c, const std::vector<std::vector<int>>& groups,
                    const std::vector<int>& pattern, int besides, const RankClasses* rc) {
  for (int h = static_cast<int>(groups.size()) - 1; h >= 0; --h) {
    const auto& nodes = groups[static_cast<std::size_t>(h)];
    if (h != besides && type_pattern(c, nodes) == pattern &&
        !(rc && rc->runs[static_cast<std::size_t>(nodes.front())]))
      return h;
  }
  return -1;
}

void add_pattern_extremes(const scenario::Scenario& s, RankClasses& rc,
                          const std::vector<std::vector<int>>& groups, int extreme_group,
                          const std::string& differences) {
  const auto& c = s.cluster;
  std::vector<int> group_of(static_cast<std::size_t>(c.nodes));
  std::vector<std::vector<int>> pattern;
  for (std::size_t g = 0; g < groups.size(); ++g) {
    pattern.push_back(type_pattern(c, groups[g]));
    for (const int n : groups[g])
      group_of[static_cast<std::size_t>(n)] = static_cast<int>(g);
  }
  // The extreme groups: the representative's pattern's first, then one per other pattern in the
  // order of its first group, each made to run (its nodes as themselves).
  std::vector<int> extreme_groups;
  if (extreme_group >= 0)
    extreme_groups.push_back(extreme_group);
  std::vector<std::vector<int>> seen{
      pattern[static_cast<std::size_t>(group_of[static_cast<std::size_t>(rc.node)])]};
  for (std::size_t g = 0; g < groups.size(); ++g) {
    if (std::find(seen.begin(), seen.end(), pattern[g]) != seen.end())
      continue;
    seen.push_back(pattern[g]);
    // Its representative runs (fold_node_types); its last group that does not draws.
    const int h = last_group_like(c, groups, pattern[g], -1, &rc);
    if (h < 0)
      continue; // every group of the pattern runs: nothing left out to draw for
    for (const int n : groups[static_cast<std::size_t>(h)]) {
      rc.runs[static_cast<std::size_t>(n)] = 1;
      rc.stand_in[static_cast<std::size_t>(n)] = n;
    }
    extreme_groups.push_back(h);
  }
  rc.replicas.clear();
  std::vector<std::string> each;
  const auto layout = parallel::ParallelLayout::of(s);
  for (const int e : extreme_groups) {
    std::vector<char> among(groups.size(), 0);
    for (std::size_t g = 0; g < groups.size(); ++g)
      among[g] = pattern[g] == pattern[static_cast<std::size_t>(e)] ? 1 : 0;
    const auto& replicas = rc.replicas.emplace_back(replicas_stood_for(s, rc, group_of, among, e));
    // The pattern's GPUs node by node, a run of k alike as "k x name" (a site has many nodes).
    std::vector<std::string> gpus;
    const auto& nodes = groups[static_cast<std::size_t>(e)];
    for (std::size_t i = 0, k = 1; i < nodes.size(); i += k) {
      const std::string& name = c.gpu_of_node(nodes[i]).name;
      for (k = 1; i + k < nodes.size() && c.gpu_of_node(nodes[i + k]).name == name;)
        ++k;
      gpus.push_back(k > 1 ? fmt::format("{} x {}", k, name) : name);
    }
    each.push_back(fmt::format("replica {} (GPU {} on) for {} replicas of {}", replicas.back(),
                               layout.rank_of({0, replicas.back(), 0}), replicas.size(),
                               fmt::join(gpus, "/")));
  }
  if (rc.replicas.empty())
    return;
  rc.extreme = layout.rank_of({0, rc.replicas.front().back(), 0});
  rc.approximation = fmt::format(
      "{}statistical approximation: per pattern of GPU types along a replica, one replica runs op "
      "by op as the slowest of its pattern's replicas left out and itself ({}; {}); rank_classes: "
      "auto simulates every GPU",
      rc.approximation.empty() ? "" : rc.approximation + "; ", fmt::join(each, ", "), differences);
}

int last_node_of_type(const scenario::ClusterSpec& c, int node, const std::vector<int>& besides,
                      const RankClasses* rc) {
  const int type = c.node_type_of(node);
  for (int n = c.nodes - 1; n >= 0; --n)
    if (c.node_type_of(n) == type &&
        std::find(besides.begin(), besides.end(), n) == besides.end() &&
        !(rc && rc->runs[static_cast<std::size_t>(n)]))
      return n;
  return -1;
}

void add_type_extremes(const scenario::Scenario& s, RankClasses& rc, int extreme_node,
                       const std::string& differences) {
  const auto& c = s.cluster;
  rc.node_type.clear();
  for (int n = 0; n < c.nodes; ++n)
    rc.node_type.push_back(c.node_type_of(n));
  std::vector<int> extreme_nodes;
  if (extreme_node >= 0)
    extreme_nodes.push_back(extreme_node);
  const int mine = c.node_type_of(rc.node);
  for (int t = -1; t < static_cast<int>(c.node_types.size()); ++t) {
    if (t == mine)
      continue;
    const auto first = std::find(rc.node_type.begin(), rc.node_type.end(), t);
    if (first == rc.node_type.end())
      continue;
    const int n = last_node_of_type(c, static_cast<int>(first - rc.node_type.begin()), {}, &rc);
    if (n < 0)
      continue; // every node of the type runs: nothing left out to draw for
    rc.runs[static_cast<std::size_t>(n)] = 1;
    rc.stand_in[static_cast<std::size_t>(n)] = n;
    extreme_nodes.push_back(n);
  }
  rc.extremes.clear();
  std::vector<std::string> each;
  for (const int n : extreme_nodes)
    rc.extremes.push_back(n * rc.gpus_per_node);
  for (const int e : rc.extremes)
    each.push_back(fmt::format("GPU {} for {} GPUs of {}", e, rc.slowest_of(e).size(),
                               c.gpu_of_node(e / rc.gpus_per_node).name));
  rc.extreme = rc.extremes.empty() ? -1 : rc.extremes.front();
  if (rc.extreme < 0)
    return;
  rc.approximation = fmt::format(
      "{}statistical approximation: per GPU type, one GPU runs as the slowest of its type's GPUs "
      "left out and itself ({}; {}); rank_classes: auto simulates every GPU",
      rc.approximation.empty() ? "" : rc.approximation + "; ", fmt::join(each, ", "), differences);
}

std::string typed_fold_obstacle(const scenario::Scenario& s) {
  const auto& c = s.cluster;
  if (c.node_types.empty() || c.sites.size() < 2)
    return "";
  for (const auto& site : c.sites)
    for (const int n : site.nodes)
      if (c.node_type_of(n) != c.node_type_of(site.nodes.front()))
        return "node_types across WAN sites: a site of several GPU types";
  return "";
}

} // namespace overlapsim::sim
