#include "hw/site_fat_trees.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace overlapsim::hw {

long long SiteFatTrees::slot(int node, int rail) const {
  return of(node).slot_of(local[static_cast<std::size_t>(node)], rail);
}

int SiteFatTrees::common_level(int a, int b, int rail) const {
  if (site_of(a) != site_of(b))
    return -1;
  return of(a).common_level(slot(a, rail), slot(b, rail));
}

int SiteFatTrees::gateway_level(int node, int rail) const {
  if (!has_sites())
    return 0;
  return of(node).common_level(slot(node, rail), gateway[static_cast<std::size_t>(site_of(node))]);
}

int SiteFatTrees::levels() const {
  int most = 0;
  for (const auto& t : trees)
    most = std::max(most, t.levels);
  return most;
}

SiteFatTrees build_site_fat_trees(const FabricSpec& spec, int nodes, int nics_per_node,
                                  const std::vector<std::vector<int>>& sites) {
  SiteFatTrees t;
  t.site.assign(static_cast<std::size_t>(nodes), 0);
  t.local.resize(static_cast<std::size_t>(nodes));
  if (sites.size() < 2) {
    for (int n = 0; n < nodes; ++n)
      t.local[static_cast<std::size_t>(n)] = n;
    t.trees.push_back(build_fat_tree(spec, nodes, nics_per_node));
    return t;
  }
  for (std::size_t s = 0; s < sites.size(); ++s) {
    auto members = sites[s];
    std::sort(members.begin(), members.end());
    for (std::size_t i = 0; i < members.size(); ++i) {
      t.site[static_cast<std::size_t>(members[i])] = static_cast<int>(s);
      t.local[static_cast<std::size_t>(members[i])] = static_cast<int>(i);
    }
    const int border = static_cast<int>(members.size()); // the gateway's node
    try {
      t.trees.push_back(build_fat_tree(spec, border + 1, nics_per_node));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(
          fmt::format("site {} ({} nodes and its WAN gateway's port): {}", s, border, e.what()));
    }
    t.gateway.push_back(t.trees.back().slot_of(border, 0));
  }
  return t;
}

} // namespace overlapsim::hw
