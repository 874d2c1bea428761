// What the world group of a scenario's cluster looks like to comm/collective_price.h, from the
// scenario alone: the planners (algorithms/layer_cost_estimate.h), the work budget and every
// other caller that prices a collective without a simulation. It follows the routes the simulator
// builds (sim/platform.cpp): a GPU's link inside a node, the node's pooled NICs across nodes, the
// sites' WAN links between sites; a test holds it to the simulator's own shape and price.
#pragma once

#include "comm/collective_price.h"
#include "scenario/scenario.h"

namespace overlapsim::scenario {

// Every GPU of the cluster as one group.
comm::NcclShape world_shape(const ClusterSpec& c);
// A group of `per_node` GPUs on each of `nodes` nodes of one site (a tensor-parallel group inside
// a node: nodes 1).
comm::NcclShape group_shape(const ClusterSpec& c, int nodes, int per_node);
// The cluster's WAN sites as the world group meets them (one site: sites = 1).
comm::SiteShape world_sites(const ClusterSpec& c);
// The NCCL generation of the cluster's GPUs and links, CollNet on where its fabric reduces
// (cluster.fabric's sharp).
comm::NcclGeneration nccl_generation_of(const ClusterSpec& c);
// The cluster's fidelity, algorithm, protocol and NCCL generation.
comm::PriceRule price_rule(const ClusterSpec& c);
// The price of `op` on an S-byte array (comm/ring_shape.h's convention) over every GPU.
comm::CollectivePrice price_world_collective(const ClusterSpec& c, CollectiveOp op, double bytes);

} // namespace overlapsim::scenario
