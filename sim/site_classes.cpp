#include "sim/site_classes.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace overlapsim::sim {

namespace {
bool flat_ring(const scenario::Scenario& s) {
  return s.cluster.collective_algorithm == scenario::CollectiveAlgorithm::ring;
}
bool site_by_site(const scenario::Scenario& s) {
  const auto a = s.cluster.collective_algorithm;
  return a == scenario::CollectiveAlgorithm::automatic ||
         a == scenario::CollectiveAlgorithm::hierarchical;
}
// Site by site, a site's own phases wait for its own nodes only: where a site holds a straggler,
// its nodes differ from those of the other sites (GPU types across sites do not fold at all,
// sim/rank_classes.cpp; the key keeps the type all the same). A node then stands for the
// nodes of its type in sites like its own: any site whose nodes are all alike and of one type
// (key: type, -1), or its own site otherwise (key: type, site); one alike node per key runs.
void separate_uneven_sites(const scenario::Scenario& s, RankClasses& rc,
                           const std::vector<char>& alike) {
  const auto& c = s.cluster;
  std::vector<char> even(c.sites.size(), 1);
  for (std::size_t i = 0; i < c.sites.size(); ++i)
    for (const int n : c.sites[i].nodes)
      if (!alike[static_cast<std::size_t>(n)] ||
          c.node_type_of(n) != c.node_type_of(c.sites[i].nodes.front()))
        even[i] = 0;
  const auto key = [&](std::size_t n) {
    const auto site = static_cast<std::size_t>(rc.site[n]);
    return std::pair{c.node_type_of(static_cast<int>(n)), even[site] ? -1 : static_cast<int>(site)};
  };
  std::map<std::pair<int, int>, int> runs_for;
  for (std::size_t n = 0; n < rc.runs.size(); ++n)
    if (rc.runs[n] && alike[n])
      runs_for.try_emplace(key(n), static_cast<int>(n));
  for (std::size_t n = 0; n < rc.runs.size(); ++n) {
    if (rc.runs[n])
      continue;
    const auto [it, fresh] = runs_for.try_emplace(key(n), static_cast<int>(n));
    if (fresh)
      rc.runs[n] = 1;
    rc.stand_in[n] = it->second;
  }
}
} // namespace

std::string site_fold_obstacle(const scenario::Scenario& s) {
  const auto& sites = s.cluster.sites;
  if (sites.size() < 2)
    return "";
  if (s.parallelism.tensor > 1 || s.parallelism.pipeline > 1)
    return "WAN sites under tensor or pipeline parallelism";
  const std::size_t k = sites.front().nodes.size();
  for (const auto& site : sites)
    if (site.nodes.size() != k)
      return "WAN sites of unequal size";
  if (site_by_site(s))
    return "";
  if (!flat_ring(s))
    return fmt::format("WAN sites under collective_algorithm: {} (a flat tree across sites)",
                       scenario::to_string(s.cluster.collective_algorithm));
  for (const auto& site : sites) {
    auto nodes = site.nodes;
    std::sort(nodes.begin(), nodes.end());
    if (nodes.back() - nodes.front() + 1 != static_cast<int>(k) ||
        nodes.front() % static_cast<int>(k) != 0)
      return "WAN sites that are not blocks of consecutive nodes under a flat ring";
  }
  return "";
}

std::vector<std::vector<int>> site_node_groups(const scenario::Scenario& s) {
  if (s.cluster.sites.size() < 2 || !flat_ring(s) || !site_fold_obstacle(s).empty())
    return {};
  std::vector<std::vector<int>> groups;
  for (const auto& site : s.cluster.sites) {
    groups.push_back(site.nodes);
    std::sort(groups.back().begin(), groups.back().end());
  }
  std::sort(groups.begin(), groups.end());
  return groups;
}

void fold_sites(const scenario::Scenario& s, RankClasses& rc, const std::vector<char>& alike) {
  const auto& sites = s.cluster.sites;
  if (!rc.folded || sites.size() < 2)
    return;
  const auto nodes = static_cast<std::size_t>(s.cluster.nodes);
  rc.site.assign(nodes, 0);
  for (std::size_t i = 0; i < sites.size(); ++i)
    for (const int n : sites[i].nodes)
      rc.site[static_cast<std::size_t>(n)] = static_cast<int>(i);
  // A flat ring: a running site's nodes share its WAN link's image, at the link's bandwidth.
  // Site by site: each running node has an image of its own, 1/K of the link (see the header).
  const bool whole_sites = flat_ring(s);
  if (!whole_sites && !rc.statistical())
    separate_uneven_sites(s, rc, alike);
  rc.wan_share = whole_sites ? 1.0 : 1.0 / static_cast<double>(sites.front().nodes.size());
  rc.wan_image.assign(nodes, -1);
  for (std::size_t n = 0; n < nodes; ++n)
    if (rc.runs[n])
      rc.wan_image[n] = whole_sites ? rc.site[n] : static_cast<int>(n);
}

} // namespace overlapsim::sim
