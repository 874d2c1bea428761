// The cables a route between two leaf ports of a FatTree crosses above the leaves, as SimGrid
// 3.32's FatTreeZone picks them: d-mod-k (Zahavi, "D-Mod-K Routing Providing Non-Blocking Traffic
// for Shift Permutations on Real Life Fat Trees", 2010), the parent at each level a function of
// the destination port alone. Two flows whose destinations agree modulo a leaf's up ports climb
// the same cable, and two into one leaf may descend the same one: contention a folded platform
// does not carry (sim/collective/fabric.h, Fabric::uplink_time counts it).
#pragma once

#include "hw/fat_tree.h"

#include <cstdint>
#include <vector>

namespace overlapsim::hw {

// One direction of one cable between switch levels l and l + 1 (l >= 1: leaves are level 1).
// `up`: climbing from the subtree of `below` (the ports under the level-l switch); the digits
// d_1..d_l of the switches chosen so far tell the parallel cables apart. A key per cable and
// direction, equal for two routes exactly when they share that direction of that cable.
using CableKey = std::uint64_t;

// Appends to `out` the keys of the cables above the leaves a route from port a to port b crosses
// (none within one leaf). FatTreeZone::get_local_route: climbing from a level-l switch (l >= 1),
// the parent is d_l = (b / (w_0 ... w_{l-1})) mod w_l; descending, each switch keeps the digits
// d_1..d_{l-1} and the port's own subtree (the XGFT labels of Ohring et al.).
void dmodk_cables(const FatTree& tree, long long a, long long b, std::vector<CableKey>& out);

} // namespace overlapsim::hw
