// The price of one collective over a group, in closed form: the one statement of what a collective
// costs (issue 66.4). The simulator's `auto` picks its all-reduce algorithm by it, the planners
// (DreamDDP's and ASC-WFBP's layer costs, algorithms/layer_cost_estimate.h) and the work budget
// plan with it, and under `cluster.collectives: nccl` it is the NCCL model the simulator runs
// (comm/nccl_model.h); the simulator adds only what a closed form cannot know: other traffic on
// the same links, stragglers, the order ranks arrive in.
#pragma once

#include "comm/collective_op.h"
#include "comm/nccl_model.h"
#include "comm/nccl_p2p.h"

#include <string>

namespace overlapsim::comm {

// How collectives are simulated (cluster.collectives): NCCL's algorithms and protocols priced by
// its tuner's model (nccl), or the network's view of a ring, tree or two-level all-reduce at link
// speed, as fused flows (fused) or step by step (steps).
enum class CollectiveFidelity { nccl, fused, steps };
// Which all-reduce algorithm (cluster.collective_algorithm); auto picks the cheapest by this file.
// collnet: NCCL's CollNetDirect or CollNetChain (the fabric's SHARP; nccl view only; every op
// CollNet runs: all-reduce, all-gather, reduce-scatter).
enum class CollectiveAlgorithm { ring, tree, hierarchical, automatic, collnet };
// The protocols NCCL may use (its NCCL_PROTO): auto lets the tuner pick; a cluster whose network
// plugin forces one sets it (aws-ofi-nccl sets NCCL_PROTO=simple on p4d/p4de: EFA's SRD does not
// deliver in order, which LL and LL128 need). Only the nccl view has protocols.
enum class NcclProtocolChoice { automatic, ll, ll128, simple };

std::optional<NcclProtocol> nccl_protocol_of(NcclProtocolChoice choice); // nullopt: auto

// WAN sites between the group's nodes (cluster.sites): `sites` sites of equal size, `site` the
// shape of one site's part of the group, sites joined by a link of this bandwidth and latency.
// One site: no WAN.
struct SiteShape {
  int sites = 1;
  NcclShape site;
  double wan_Bps = 0;
  double wan_latency_s = 0;
};

// What a cluster's collectives are priced with.
struct PriceRule {
  CollectiveFidelity fidelity = CollectiveFidelity::nccl;
  CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic;
  NcclProtocolChoice protocol = NcclProtocolChoice::automatic;
  NcclGeneration generation;
};

struct CollectivePrice {
  double seconds = 0;
  std::string algorithm; // what runs: "ring", "tree", "hierarchical", "sites", "nccl ring/LL"...
};

// The network view's all-reduce of an S-byte array by `algorithm` (not auto) on `shape`, link
// speed and alpha-beta (comm/ring_shape.h):
//   ring:         2(n-1) (alpha + S / (n B)), alpha the slowest hop's latency, B the slowest hop's
//                 bandwidth (a node's NICs across nodes);
//   tree:         a chain inside each node and binary trees between nodes, depth d = (g-1) +
//                 floor(log2 m) levels (one chain of n - 1 links where a node holds one rank or
//                 the nodes hold unequal shares): 2 d alpha + 2 S / B;
//   hierarchical: a ring inside each node (g GPUs) and g rings across the m nodes, each on 1/g of
//                 the array and 1/g of the node's NICs:
//                 2(g-1) (alpha_in + S / (g B_in)) + 2(m-1) (alpha_net + S / (m B_net));
//                 infinite where the nodes do not hold equal shares.
double network_all_reduce_seconds(CollectiveAlgorithm algorithm, const NcclShape& shape,
                                  double bytes);

// The cheapest of ring, tree and hierarchical in the network view (what `auto` runs there).
CollectiveAlgorithm cheapest_network_all_reduce(const NcclShape& shape, double bytes);

// One message of `bytes` between two ranks of a group of `shape`, on one node or across nodes:
// under nccl NCCL's p2p (comm/nccl_p2p.h: its channels, protocol and the GPU's own NICs across
// nodes); in the network views the route at link speed (the slowest hop's latency + bytes over
// its bandwidth: the node's pooled NICs across nodes).
CollectivePrice price_message(const PriceRule& rule, const NcclShape& shape, double bytes,
                              bool across_nodes);

// The price of `op` on an S-byte array (comm/ring_shape.h's convention) over a group of `shape`
// spread over `sites`. Across sites, auto and hierarchical all-reduces, reduce-scatters and
// all-gathers run site by site (inside each site, then across the WAN: what the simulator runs);
// under nccl NCCL's choice prices the rest (its tuner's pick, priced as it runs); in the network
// views the ring form, and for an all-reduce the algorithm asked for (auto: the cheapest of ring,
// tree and hierarchical). A send or receive is nccl-tests' sendrecv over the group: every rank
// sends `bytes` to the next one, the slowest pair (across nodes where the group spans several)
// ends it. An all-to-all under nccl is NCCL's grouped sends and receives (comm/nccl_alltoall.h),
// in the network views the ring form (n-1 steps, (n-1)/n S).
CollectivePrice price_collective(const PriceRule& rule, const NcclShape& shape, CollectiveOp op,
                                 double bytes, const SiteShape& sites = {});

} // namespace overlapsim::comm
