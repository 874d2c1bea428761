// Mixed GPU types under rank classes (cluster.node_types, issue 64.2 and 64.5): node groups whose
// nodes' GPUs are of the same types, node by node (one node each without tensor or pipeline
// parallelism; a pipeline's nodes with it, sim/rank_classes.h), are alike, so one group per
// *type pattern* runs and stands for every group of its pattern (as the representative stands for
// the groups of the scenario's own GPU): with a pipeline, a replica whose stage 1 is on A100s and
// the rest on H100s stands for every replica placed so. Exact for the same reason a straggler's
// node folds exactly (sim/rank_classes.h): a fused collective's flows start together on every
// node however late its members arrive, so each running node's links carry its shifted copies'
// traffic; only its GPUs' timelines differ, and those it runs. A pattern's representative is its
// straggler-free group that NCCL's two trees (over the groups) load most, as for the scenario's
// own GPU.
#pragma once

#include "scenario/scenario.h"
#include "sim/rank_classes.h"

#include <string>
#include <vector>

namespace overlapsim::sim {

// A folded `rc` (the representative group's nodes and the stragglers' groups run): makes one
// group of every other type pattern run and stand for the groups of its pattern. `groups`: the
// node groups (alike_node_groups), `alike[g]`: group g has no straggler.
void fold_node_types(const scenario::Scenario& s, RankClasses& rc,
                     const std::vector<std::vector<int>>& groups, const std::vector<char>& alike);

// Statistical rank classes with GPU types (groups single nodes): the highest node of `node`'s
// type that is not in `besides` and does not run (`rc.runs`, where assigned); -1 where none is.
int last_node_of_type(const scenario::ClusterSpec& c, int node, const std::vector<int>& besides,
                      const RankClasses* rc = nullptr);
// Statistical with GPU types: each type's extreme, the slowest of its own GPUs left out (their
// compute is their type's, so one extreme cannot draw for two). The representative's type's is
// `extreme_node` (-1: none, a type of one node); every other type's is its last node that does
// not run, made to run. Sets rc.extreme, rc.extremes, rc.node_type and the approximation text.
void add_type_extremes(const scenario::Scenario& s, RankClasses& rc, int extreme_node,
                       const std::string& differences);

// The types of a node group's nodes (node_type_of), in order: its *type pattern*.
std::vector<int> type_pattern(const scenario::ClusterSpec& c, const std::vector<int>& group);
// The highest node group but `besides` of type pattern `pattern` whose nodes do not run
// (`rc.runs`, where assigned); -1 where none is.
int last_group_like(const scenario::ClusterSpec& c, const std::vector<std::vector<int>>& groups,
                    const std::vector<int>& pattern, int besides, const RankClasses* rc = nullptr);
// Statistical per pipeline replica with GPU types (issue 64.5): one extreme replica per type
// pattern, each the slowest of its own pattern's replicas left out (one replica cannot draw for
// another pattern's: its stages' costs are other GPUs'). The representative's pattern's is
// `extreme_group`'s first replica (-1: none, a pattern of one group); every other pattern's is
// the first replica of its last group that does not run, made to run. A pattern whose groups all
// run has none. Sets rc.replicas (one set per extreme), rc.extreme and the approximation text.
void add_pattern_extremes(const scenario::Scenario& s, RankClasses& rc,
                          const std::vector<std::vector<int>>& groups, int extreme_group,
                          const std::string& differences);

// What keeps GPU types from folding ("" where they fold, or there are none): WAN sites unless
// every site's nodes are of one type. Site by site, each type's runner sits at the
// representative's index in its site, so the cross-site rings it joins are the running ones
// (sim/site_classes.cpp; before, 2 sites of 4 x 4 A100, the second 40 GB, waited 0.203 s folded
// against 0.0012 s in full). A statistical fold of pipeline replicas was refused here before
// add_pattern_extremes.
std::string typed_fold_obstacle(const scenario::Scenario& s);

} // namespace overlapsim::sim
