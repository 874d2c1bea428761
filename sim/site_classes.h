// WAN sites under rank classes (issue 64.2): when a cluster's sites (cluster.sites) fold, and
// onto which images of the WAN links.
//
// Sites of equal node count joined by one WAN spec (cluster.wan) fold exactly in two ways:
//
// - Site by site (collective_algorithm auto or hierarchical: every collective across sites runs
//   sim/collective/sites.h's phases): inside a site a ring over its nodes, across sites a ring
//   among the same-position GPUs. Every node then sends and receives the same flows up to a shift
//   of node numbers, the cross-site ones one per GPU position over its site's WAN link. One node
//   stands for all, as without sites, its cross-site flows over an image of the WAN link of
//   1/K of its bandwidth (K nodes a site): the full WAN link carries K shifted copies of each
//   flow, the image one, so max-min sharing gives each the full cluster's rate.
// - A flat ring (collective_algorithm: ring): only the last node of each site sends across the
//   WAN, so nodes differ; shifted by a whole site they do not. Sites that are contiguous blocks of
//   nodes are then node groups (sim/rank_classes.h): one site's nodes run, node i standing for
//   node i of every other site, their cross-site flows over one image of the WAN link at its full
//   bandwidth (it carries what the site's WAN link carries).
//
// A straggler (or a node of another GPU type) runs as itself, with an image of its own; site by
// site its site's phases wait for it where the other sites' do not, so one more node of its site
// runs for that site's other nodes. Site by site the runners sit at the representative's index
// in their sites, and wherever a node runs, every site's node at its index runs or stands for a
// runner of its key there: the ring across sites joins the nodes at one index, and a fused
// collective waits for its running members only. Under a flat ring its whole site runs (a node
// group).
//
// Sites of unequal size fold site by site only (sim/collective/unequal_sites.h): a site's nodes
// send alike bytes inside it and across (to one or two peers by position), and the phase across
// sites is one fused collective of the whole group. One alike node runs per site size (and per
// type, and for a site a straggler sets apart), its cross-site flows over an image of its own of
// 1 / (its site's node count) of the WAN link (RankClasses::wan_shares): the site's WAN link
// carries its nodes' equal bytes, the image one node's, so both drain at the link's rate. Under
// a flat ring they do not fold.
//
// A flat tree across sites (tree, collnet) is neither: every rank runs.
#pragma once

#include "scenario/scenario.h"
#include "sim/rank_classes.h"

#include <string>
#include <vector>

namespace overlapsim::sim {

// What keeps the scenario's WAN sites from folding ("" where they fold, or there are none).
std::string site_fold_obstacle(const scenario::Scenario& s);
// Under a flat ring across sites, the sites as node groups (each its nodes ascending, groups in
// order of their first node); empty otherwise.
std::vector<std::vector<int>> site_node_groups(const scenario::Scenario& s);
// A folded `rc` over WAN sites: sets each node's site and each running node's WAN image. Site by
// site, a site holding a straggler or GPUs of two types has its nodes told apart from the other
// sites' (one more node of it runs per type). `alike[n]`: node n has no straggler.
void fold_sites(const scenario::Scenario& s, RankClasses& rc, const std::vector<char>& alike);

} // namespace overlapsim::sim
