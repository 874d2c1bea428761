#include "sim/site_classes.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>
#include <numeric>
#include <tuple>

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
// Per site: whether its nodes are all alike and of one type.
std::vector<char> even_sites(const scenario::ClusterSpec& c, const std::vector<char>& alike) {
  std::vector<char> even(c.sites.size(), 1);
  for (std::size_t i = 0; i < c.sites.size(); ++i)
    for (const int n : c.sites[i].nodes)
      if (!alike[static_cast<std::size_t>(n)] ||
          c.node_type_of(n) != c.node_type_of(c.sites[i].nodes.front()))
        even[i] = 0;
  return even;
}
// Each node of `order` that does not run stands for the runner of its key, the first of a key
// none holds yet running.
template <class Key, class KeyOf>
void stand_in_by_key(RankClasses& rc, const std::vector<std::size_t>& order,
                     std::map<Key, int>& runs_for, const KeyOf& key) {
  for (const std::size_t n : order) {
    if (rc.runs[n])
      continue;
    const auto [it, fresh] = runs_for.try_emplace(key(n), static_cast<int>(n));
    if (fresh)
      rc.runs[n] = 1;
    rc.stand_in[n] = it->second;
  }
}

bool unequal_sites(const scenario::Scenario& s) {
  const auto& sites = s.cluster.sites;
  return std::any_of(sites.begin(), sites.end(), [&](const auto& site) {
    return site.nodes.size() != sites.front().nodes.size();
  });
}
// Sites of unequal size, site by site (sim/collective/unequal_sites.h): a site's nodes send alike
// bytes inside it and across, to one or two peers by position, and the phase across sites is one
// fused collective of the whole group, so what tells nodes apart is their site's size (the
// length of its rings and of its slices) and, as below, a straggler or GPU type in it. One alike
// node runs per key (type, site size, -1 where its site's nodes are all alike and of one type,
// else its site); no index to meet at. Statistically the extreme (sim/slowest_of.h) stands for
// no one.
void separate_unequal_sites(const scenario::Scenario& s, RankClasses& rc,
                            const std::vector<char>& alike) {
  const auto& c = s.cluster;
  const std::vector<char> even = even_sites(c, alike);
  std::vector<char> extreme(rc.runs.size(), 0);
  for (const int gpu : rc.extremes)
    extreme[static_cast<std::size_t>(gpu / rc.gpus_per_node)] = 1;
  if (rc.extreme >= 0)
    extreme[static_cast<std::size_t>(rc.extreme / rc.gpus_per_node)] = 1;
  const auto key = [&](std::size_t n) {
    const auto site = static_cast<std::size_t>(rc.site[n]);
    return std::tuple{c.node_type_of(static_cast<int>(n)),
                      static_cast<int>(c.sites[site].nodes.size()),
                      even[site] ? -1 : static_cast<int>(site)};
  };
  std::map<std::tuple<int, int, int>, int> runs_for;
  for (std::size_t n = 0; n < rc.runs.size(); ++n)
    if (rc.runs[n] && alike[n] && !extreme[n])
      runs_for.try_emplace(key(n), static_cast<int>(n));
  std::vector<std::size_t> order(rc.runs.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  stand_in_by_key(rc, order, runs_for, key);
}

// Site by site, a site's own phases wait for its own nodes only: where a site holds a straggler,
// its nodes differ from those of the other sites. A node then stands for the nodes of its type in
// sites like its own: any site whose nodes are all alike and of one type (key: type, -1), or its
// own site otherwise (key: type, site); one alike node per key runs.
//
// The phase across sites is a ring over the nodes at one index of every site (sites.h), and a
// fused collective waits for its running members only: a running node whose partners at its
// index all stand in elsewhere would cross without waiting for them. So the runners sit at the
// representative's index where they can (a GPU type's: 2 sites of 4 x 4 A100, the second site
// 40 GB, its runner at index 3 against the representative's 0 waited 0.203 s folded against
// 0.0012 s in full; so did a 1.5x straggler off the representative's index, 0.214 s against
// 0.0088 s), and at each index where a node runs, every site's node runs or stands in for a node
// of its key that runs at that same index.
void separate_uneven_sites(const scenario::Scenario& s, RankClasses& rc,
                           const std::vector<char>& alike) {
  const auto& c = s.cluster;
  const std::vector<char> even = even_sites(c, alike);
  const auto key = [&](std::size_t n) {
    const auto site = static_cast<std::size_t>(rc.site[n]);
    return std::pair{c.node_type_of(static_cast<int>(n)), even[site] ? -1 : static_cast<int>(site)};
  };
  // Each node's index in its site (the cross-site rings join the nodes at one index).
  std::vector<int> index(rc.runs.size());
  std::vector<std::vector<int>> at_index; // [index][site]: the node
  for (const auto& site : c.sites) {
    auto nodes = site.nodes;
    std::sort(nodes.begin(), nodes.end());
    at_index.resize(nodes.size());
    for (std::size_t k = 0; k < nodes.size(); ++k) {
      index[static_cast<std::size_t>(nodes[k])] = static_cast<int>(k);
      at_index[k].push_back(nodes[k]);
    }
  }
  const int at = index[static_cast<std::size_t>(rc.node)];
  // Move a runner that stands for others (a type's, fold_node_types) to the representative's
  // index where a node of its key is alike there.
  std::map<std::pair<int, int>, int> runs_for;
  for (std::size_t n = 0; n < rc.runs.size(); ++n)
    if (rc.runs[n] && alike[n])
      runs_for.try_emplace(key(n), static_cast<int>(n));
  for (auto& [k, q] : runs_for) {
    if (index[static_cast<std::size_t>(q)] == at)
      continue;
    for (const int p : at_index[static_cast<std::size_t>(at)])
      if (alike[static_cast<std::size_t>(p)] && key(static_cast<std::size_t>(p)) == k) {
        rc.runs[static_cast<std::size_t>(q)] = 0;
        rc.runs[static_cast<std::size_t>(p)] = 1;
        for (auto& to : rc.stand_in)
          if (to == q)
            to = p;
        q = p;
        break;
      }
  }
  // Keys no runner holds yet: one more node each, at the representative's index where it can be.
  std::vector<std::size_t> order;
  for (const int n : at_index[static_cast<std::size_t>(at)])
    order.push_back(static_cast<std::size_t>(n));
  for (std::size_t n = 0; n < rc.runs.size(); ++n)
    if (index[n] != at)
      order.push_back(n);
  stand_in_by_key(rc, order, runs_for, key);
  // Every index where a node runs: each site's node there runs, or stands for a runner of its key
  // at that index (its cross-site ring is then a running one).
  for (const auto& nodes : at_index) {
    if (std::none_of(nodes.begin(), nodes.end(),
                     [&](int n) { return rc.runs[static_cast<std::size_t>(n)] != 0; }))
      continue;
    std::map<std::pair<int, int>, int> here;
    for (const int n : nodes)
      if (rc.runs[static_cast<std::size_t>(n)] && alike[static_cast<std::size_t>(n)])
        here.try_emplace(key(static_cast<std::size_t>(n)), n);
    for (const int n : nodes) {
      const auto u = static_cast<std::size_t>(n);
      if (rc.runs[u])
        continue;
      const auto [it, fresh] = here.try_emplace(key(u), n);
      if (fresh)
        rc.runs[u] = 1;
      rc.stand_in[u] = it->second;
    }
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
  // Site by site, sites of unequal size fold too (sim/collective/unequal_sites.h).
  if (site_by_site(s))
    return "";
  if (!flat_ring(s))
    return fmt::format("WAN sites under collective_algorithm: {} (a flat tree across sites)",
                       scenario::to_string(s.cluster.collective_algorithm));
  if (unequal_sites(s))
    return "WAN sites of unequal size under a flat ring";
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
  const bool unequal = unequal_sites(s);
  if (unequal)
    separate_unequal_sites(s, rc, alike);
  else if (!whole_sites && !rc.statistical())
    separate_uneven_sites(s, rc, alike);
  rc.wan_share = whole_sites ? 1.0 : 1.0 / static_cast<double>(sites.front().nodes.size());
  rc.wan_image.assign(nodes, -1);
  for (std::size_t n = 0; n < nodes; ++n)
    if (rc.runs[n])
      rc.wan_image[n] = whole_sites ? rc.site[n] : static_cast<int>(n);
  // Unequal: each site's WAN link carries its L_s nodes' alike bytes, the image one node's.
  if (unequal) {
    // Under the tcp model each flow is capped by its window (TCP-gamma / 2 x latency): in full
    // the last pieces to cross (of unequal length) run below the WAN link's rate, folded the
    // node's pieces drain its image (tests/unequal_sites_test.cpp: 3 + 3 + 2 nodes of 2 A100s,
    // 10 Gbit/s, ddp -0.18%, fsdp -0.08%, diloco H 2 -0.64% of the full iteration time).
    if (s.cluster.network_model == scenario::NetworkModel::tcp)
      rc.approximation = fmt::format(
          "{}WAN sites of unequal size under the tcp model: window caps per node's image",
          rc.approximation.empty() ? "" : rc.approximation + "; ");
    rc.wan_shares.assign(nodes, 1.0);
    for (std::size_t n = 0; n < nodes; ++n)
      rc.wan_shares[n] =
          1.0 / static_cast<double>(sites[static_cast<std::size_t>(rc.site[n])].nodes.size());
  }
}

} // namespace overlapsim::sim
