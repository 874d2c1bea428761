// Mixed GPU types under rank classes (cluster.node_types, issue 64.2): nodes whose GPUs are of one
// type are alike, so one node per type runs and stands for every node of its type (as the
// representative stands for the scenario's own GPU's nodes). Exact for the same reason a
// straggler's node folds exactly (sim/rank_classes.h): a fused collective's flows start together
// on every node however late its members arrive, so each running node's links carry its shifted
// copies' traffic; only its GPUs' timelines differ, and those it runs. A type's representative is
// its straggler-free node that NCCL's two trees load most, as for the scenario's own GPU.
#pragma once

#include "scenario/scenario.h"
#include "sim/rank_classes.h"

#include <vector>

namespace overlapsim::sim {

// A folded `rc` (one node per group, no pipeline): makes one node of every other type run and
// stand for the nodes of its type. `alike[n]`: node n has no straggler.
void fold_node_types(const scenario::Scenario& s, RankClasses& rc, const std::vector<char>& alike);

} // namespace overlapsim::sim
