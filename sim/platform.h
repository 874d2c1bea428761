// The SimGrid platform of a cluster, built in code (no XML).
//
//   root (star)                 one WAN link per site when the cluster has sites
//    └ site zones (star)        only when `sites` is given; the site's gateway router lives in a
//       │                       zone of its own ("site<s>-switch") beside the node zones
//       └ node zones (star)     one NIC link per node: nics_per_node x bandwidth, in the parent
//       zone
//          └ GPU hosts          one split-duplex NVLink-like link each, to the node's switch
//
// A node's NICs are pooled into one link of nics_per_node x bandwidth: NCCL spreads a collective's
// channels over every NIC of the node, so the node's traffic uses them all.
//
// Latencies: a GPU link carries half the intra-node latency, so GPU-to-GPU inside a node costs
// intra.latency; a NIC link carries (inter.latency - intra.latency) / 2, so GPU-to-GPU across nodes
// costs inter.latency (the GPU links are on that path too); a WAN link carries wan.latency / 2.
// Inter-node flows also pass through the two GPUs' NVLink-like links: their bandwidth is far above
// a NIC's, so they only matter when those links are saturated by intra-node traffic.
//
// Fat tree (cluster.fabric, hw/fat_tree.h): the node zones keep their GPUs and NVLink links but
// have no NIC link; beside them, SimGrid's FatTreeZone holds a host per NIC (`nics`) at its leaf
// port, cables at the NIC's rate and `hop_latency` each, and at every NIC a latency-only link
// of (inter.latency - 2 hop) / 2, so NICs under one leaf switch are inter.latency apart and each
// level further up adds two hops. A flow between nodes runs NIC to NIC (Platform::lane): inside
// the nodes its data crosses NVLink, far faster than a NIC, which the star's routes model and
// this one leaves out.
//
// Folded fat tree: the running nodes' GPUs and NVLink links as above, and per NIC a host and its
// cable (split duplex, the NIC's rate, inter.latency / 2 each way). `remote_nics` stand for NIC r
// of the nodes that meet this one's at level l: the route goes up the cable, through 2 (l - 1) hops
// of latency, and back down the same cable. The cables above the leaves are not on it: a
// collective's flows are held instead to the time their bytes need on the busiest leaf's uplinks,
// counted over every node's flows (collective::Fabric::uplink_time), as if spread evenly over them.
// An approximation where the full tree's d-mod-k routes load those cables unevenly (the summary
// says so).
//
// Fat tree with WAN sites (hw/site_fat_trees.h): each site's nodes hang off a FatTreeZone of
// their own, one leaf port of which is the site's gateway (a zone holding one router); the site
// zone's route to the root leaves through that router and the site's WAN link, so a flow to
// another site climbs its tree to the gateway's port, crosses both WAN links and descends the
// other tree. Folded, NIC r of a running node also reaches `remote_nics_wan`: its cable, a
// latency-only link of 2 l - 1 hops (l: the level NIC r meets its gateway at), the node's WAN
// image up and down (sim/site_classes.h), the same link and the cable back: the full route's
// latency when the peer meets its own gateway at the same level (site by site, node i of a site
// sends to node i of the others).
//
// Folded (rank classes, sim/rank_classes.h): one zone holds the representative node's GPU hosts,
// their links and the node's NIC, plus a `remote` host per GPU position standing for that GPU of
// every other node. A route to remote p leaves through the NIC and comes back in through the
// same NIC and GPU p's link: the links and latency of a route to GPU p of another node, folded
// onto the representative node's own links. With a pipeline (sim/rank_classes.h), the running
// nodes of one node group also reach each other as in the full cluster: GPU a's link, the sending
// node's NIC up, the receiving node's NIC down, GPU b's link; a message takes that way
// (Platform::lane's `direct`). Over WAN sites, a route to a node of another site also crosses an
// image of the WAN link, up and down (sim/site_classes.h). On a folded fat tree: NIC r's cable up,
// the climb to the level the two nodes meet, the other NIC r's cable down.
#pragma once

#include "hw/site_fat_trees.h"
#include "scenario/scenario.h"
#include "sim/rank_classes.h"

#include <optional>
#include <simgrid/s4u.hpp>
#include <string>
#include <vector>

namespace overlapsim::sim {

struct Platform {
  std::vector<simgrid::s4u::Host*> gpus; // by global rank (folded: null but the simulated ranks)
  double nominal_speed = 0;              // FLOP/s of a GPU at efficiency, before straggling
  std::vector<std::string> warnings;     // approximations the cluster description forced
  RankClasses classes;                   // which ranks have hosts
  // Folded, by rank of a running node's GPU: that position's GPU of every other node.
  std::vector<simgrid::s4u::Host*> remote;
  // Folded over WAN sites (sim/site_classes.h), by rank of a running node's GPU: that position's
  // GPU of every node in another site (the route adds the node's WAN image, up and down).
  std::vector<simgrid::s4u::Host*> remote_wan;
  // The WAN images, each RankClasses::wan_share of the WAN link: a route's bandwidth reads them
  // at the link's own (link_bandwidth), so group shapes are the full cluster's.
  std::vector<const simgrid::s4u::Link*> wan_images;
  std::vector<double> wan_image_shares; // of each of wan_images: its share of the WAN link
  double link_bandwidth(const simgrid::s4u::Link* link) const;
  // By rank, a host that runs one FLOP per second, (1 - compute_interference) of that while its
  // GPU computes: where a transfer makes up the progress compute took from it
  // (sim/compute_interference.h). Empty when compute_interference is 0; folded, null but the
  // simulated ranks.
  std::vector<simgrid::s4u::Host*> progress;

  // Fat tree: the host of NIC r of node n at [n x nics_per_node + r] (folded: the running nodes'
  // only); empty on a star.
  std::vector<simgrid::s4u::Host*> nics;
  // The fat tree, one per WAN site (hw/site_fat_trees.h); none on a star.
  std::optional<hw::SiteFatTrees> fat_tree;
  // Folded fat tree: at [(n x nics_per_node + r) x levels + l - 1], NIC r of any node whose NIC r
  // meets node n's at level l, as seen from running node n (levels: the deepest site tree's).
  std::vector<simgrid::s4u::Host*> remote_nics;
  // Folded fat tree over WAN sites, at [n x nics_per_node + r]: NIC r of a node in another site,
  // as seen from running node n (its cable, the climb to its site's gateway, its WAN image, the
  // same way back down).
  std::vector<simgrid::s4u::Host*> remote_nics_wan;
  int gpus_per_node = 1, nics_per_node = 1;

  // The host a flow from rank `src` to rank `dst` starts at and goes to: their own, or folded,
  // src's representative and dst's (in the same node) or remote host (in another node).
  std::pair<simgrid::s4u::Host*, simgrid::s4u::Host*> route_ends(int src, int dst) const;

  // The ways a flow from `src` to `dst` takes, each with its share of the bytes. One, but between
  // nodes of a fat tree where the two GPUs use NICs of different rails: one per rail, NIC r to
  // NIC r with an equal share (NCCL spreads a collective's channels over every NIC of a node, and
  // its rings and trees cross between same-rail NICs).
  struct Lane {
    simgrid::s4u::Host* from = nullptr;
    simgrid::s4u::Host* to = nullptr;
    double share = 1;
  };
  int lanes(int src, int dst) const;
  // `direct`: a point-to-point message, which folded runs between the running nodes themselves
  // where RankClasses::direct says so.
  Lane lane(int src, int dst, int k, bool direct = false) const;
  // Between nodes of a fat tree, the way over rail r whatever the GPUs' own NICs; null ends
  // elsewhere. `direct`: NIC to NIC of two running nodes (a message, RankClasses::direct).
  Lane on_rail(int src, int dst, int rail, bool direct = false) const;
  // The NIC that GPU `rank` sends through: GPUs share a node's NICs in equal consecutive groups.
  int nic_of(int rank) const { return rank % gpus_per_node * nics_per_node / gpus_per_node; }
};

// Sets the network model (must run before any zone exists) and builds the platform.
void configure_engine(simgrid::s4u::Engine& engine, const scenario::ClusterSpec& cluster);
Platform build_platform(const scenario::ClusterSpec& cluster, const RankClasses& classes = {});

} // namespace overlapsim::sim
