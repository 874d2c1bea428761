// A fat tree per WAN site (cluster.fabric with cluster.sites, issue 64 item 4): each site's nodes
// hang off a fat tree of the fabric's shape (radix, levels, oversubscription, placement) built
// over that site's node count, and the sites meet over the WAN through a gateway that takes one
// leaf port of the site's tree (a border router on a leaf switch, as a campus uplink is cabled).
// A flow to another site climbs its own site's tree to the gateway's port, crosses the two sites'
// WAN links, and descends the other site's tree from its gateway.
//
// The gateway's port is the first NIC port of one node past the site's last ("the border node"):
// the site's tree is built for its nodes plus that one, so a site's tree has room for it whatever
// its size. Without sites there is one tree over every node and no gateway (hw::build_fat_tree,
// unchanged).
#pragma once

#include "hw/fat_tree.h"

#include <vector>

namespace overlapsim::hw {

struct SiteFatTrees {
  std::vector<FatTree> trees;     // per site (one, without sites)
  std::vector<int> site, local;   // per node: its site, its index among its site's nodes
  std::vector<long long> gateway; // per site, its gateway's leaf port; empty without sites
  bool has_sites() const { return !gateway.empty(); }
  const FatTree& of(int node) const { return trees[static_cast<std::size_t>(site_of(node))]; }
  int site_of(int node) const { return site[static_cast<std::size_t>(node)]; }
  // The leaf port of NIC `rail` of `node`, in its site's tree.
  long long slot(int node, int rail) const;
  // The level two nodes' NICs on `rail` meet at (FatTree::common_level); -1 when the nodes are in
  // different sites (the WAN joins them).
  int common_level(int a, int b, int rail) const;
  // The level NIC `rail` of `node` meets its site's gateway at; 0 without sites.
  int gateway_level(int node, int rail) const;
  // The deepest tree's levels.
  int levels() const;
};

// `sites`: each site's nodes (empty or one site: one tree over all `nodes`). Throws
// std::invalid_argument as build_fat_tree does, naming the site.
SiteFatTrees build_site_fat_trees(const FabricSpec& spec, int nodes, int nics_per_node,
                                  const std::vector<std::vector<int>>& sites);

} // namespace overlapsim::hw
