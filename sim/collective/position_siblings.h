// The groups a collective's group stands beside on a folded fat tree whose leaves hold several GPU
// positions' NICs (node placement, or fewer NICs than GPUs a node).
//
// Where a group holds only some GPU positions of its nodes (a data-parallel group beside tensor
// ranks, a hierarchical all-reduce's same-position rings, HSDP's cross-node all-reduce), every
// node's other positions run the same collective at the same time over their own groups (the
// job is node-symmetric: that is what folds it). Under rail placement with a NIC per GPU those
// groups' flows reach leaf switches of their own rail; otherwise they climb the same leaf's
// uplinks. Fabric::uplink_time then counts them beside the group's own flows: the copies of its
// flows shifted to the other positions (issue 64.2).
#pragma once

#include "sim/collective/fabric.h"

#include <vector>

namespace overlapsim::sim::collective {

// `flows` and, where their ends hold only some positions P of each node's `gpus_per_node`, their
// copies shifted by k positions (rank -> its node's GPU (p + k) mod gpus_per_node) for each k
// whose shift of P meets neither P nor an earlier copy's: {0} gains 1..G-1, {0, 1, 2, 3} gains 4,
// {0, 2, 4, 6} gains 1. Unchanged where P is every position.
std::vector<Flow> with_position_siblings(const std::vector<Flow>& flows, int gpus_per_node);

} // namespace overlapsim::sim::collective
