// Rank classes (issue 29): which ranks a simulation runs. Without jitter or WAN sites (a
// straggler's node runs as itself, below), and with an algorithm whose ranks all run the same ops
// and meet only in collectives (Algorithm::node_symmetric), every node does what every other node
// does at the same time: the GPUs of one node (the representatives, one per class "GPU p of any
// node") are simulated, on a platform holding only that node's links (sim/platform.h, folded), and
// stand for all.
//
// Why that is exact and not an estimate: a collective's flows are the same on every node up to
// a shift of the node numbers (rings, NVLS, the hierarchical phases, same-position groups), so
// max-min sharing gives a flow from node n the rate of its shifted copy from the representative
// node. The folded platform routes the representative node's outgoing flows out through its NIC
// and back in through the same NIC to the same-position GPU: each of its links then carries the
// flows that cross it in the full cluster (one per shifted copy), and the solve is the full
// one's. NCCL's trees are not shift-alike (a root has one child); the representative is the
// node the two trees load most, so its NIC sees the busiest node's traffic.
//
// A straggler's node runs too, folded onto its own links the same way: a fused collective's flows
// start together on every node however late its members arrive, so the traffic each node's
// links carry is still its shifted copy's; only its GPUs' timelines differ, and those it runs.
//
// Tensor and pipeline parallelism (issue 65.6): nodes then differ by what their GPUs run (the
// stage, the TP rank), and a pipeline's stages wait for each other's messages. The unit that is
// alike is then a *node group*: the nodes that pipeline messages and TP groups join (with
// Megatron's tp-dp-pp order and TP inside a node, the `pipeline` nodes of one data-parallel
// index); groups meet only in the data-parallel collectives of each stage. One group (the
// representative) runs, its node i standing for node i of every other group; a straggler's group
// runs as itself (the whole pipeline waits for a slow stage). Each stage's DP collectives fold as
// above onto its representative node's links; pipeline messages run between the running nodes
// themselves (Platform::lane's `direct`), as in the full cluster, where each node's NIC carries one
// copy of every node's messages. A layout whose groups are not alike (a node holding two stages,
// groups of unequal size) is simulated in full.
#pragma once

#include "algorithms/algorithm.h"
#include "scenario/scenario.h"

#include <string>
#include <vector>

namespace overlapsim::sim {

struct RankClasses {
  bool folded = false; // false: every rank simulated ("full")
  int node = 0;        // folded: the representative node of the alike ones (its group's first)
  int gpus_per_node = 1;
  int world = 1;
  // Folded: per node, whether it runs: the representative group's, and every group a straggler
  // sets apart (its GPUs are classes of their own).
  std::vector<char> runs;
  // Folded, per node: the running node whose GPUs stand for its GPUs (itself when it runs).
  std::vector<int> stand_in;
  // Folded with a pipeline, per node: its node group (pipeline messages join running nodes of one
  // group directly); empty otherwise.
  std::vector<int> group;
  std::string why_full; // full: what told the nodes apart
  // Folded where sharing is approximated, and how (a fat tree: "" elsewhere).
  std::string approximation;
  // Statistical rank classes (cluster.rank_classes: statistical, issue 64.2): nodes told apart
  // only by their draws (jitter, sequence lengths) and slowdowns fold all the same; one running
  // GPU of a node of its own, `extreme`, runs as the slowest of the GPUs left out and itself
  // (sim/slowest_of.h). -1: none. `approximation` then says so.
  int extreme = -1;
  bool statistical() const { return extreme >= 0; }
  // Statistical with pipelines (or TP groups over several nodes, issue 64.5): per extreme replica,
  // a whole pipeline replica that runs as the slowest of the replicas left out, stage by stage
  // (sim/statistical_fold.h), their data-parallel indices, its own last: one, or with GPU types
  // one per type pattern that has replicas left out (sim/type_classes.h). `extreme` is the first
  // one's first GPU. Empty otherwise.
  std::vector<std::vector<int>> replicas;
  // With GPU types (cluster.node_types, not per replica): one extreme per type, `extreme` first,
  // each standing for the GPUs of its type; and per node its type (node_type_of). Empty otherwise.
  std::vector<int> extremes;
  std::vector<int> node_type;
  // The GPUs extreme `of` (-1: `extreme`) stands for: every GPU that does not run (of its type),
  // and itself.
  std::vector<int> slowest_of(int of = -1) const;

  // Folded over WAN sites (sim/site_classes.h), per node: its site (empty without sites), and
  // per running node the image of the WAN link its cross-site flows take (-1 elsewhere), each
  // image `wan_share` of the WAN link's bandwidth.
  std::vector<int> site;
  std::vector<int> wan_image;
  double wan_share = 1;
  // Over sites of unequal size (sim/collective/unequal_sites.h), per node: 1 / its site's node
  // count (a node's image carries its own flows of its site's WAN link's); empty: `wan_share`.
  std::vector<double> wan_shares;
  double wan_share_of(int n) const {
    return wan_shares.empty() ? wan_share : wan_shares[static_cast<std::size_t>(n)];
  }
  bool crosses_sites(int src, int dst) const {
    return !site.empty() && site[static_cast<std::size_t>(src / gpus_per_node)] !=
                                site[static_cast<std::size_t>(dst / gpus_per_node)];
  }

  bool simulated(int rank) const {
    return !folded || runs[static_cast<std::size_t>(rank / gpus_per_node)];
  }
  // The simulated rank that stands for `rank` (itself when it runs).
  int representative(int rank) const {
    return simulated(rank)
               ? rank
               : stand_in[static_cast<std::size_t>(rank / gpus_per_node)] * gpus_per_node +
                     rank % gpus_per_node;
  }
  // Whether a message from `src` to `dst` runs between their own nodes' links: folded, both run
  // and are nodes of one group (a pipeline's); otherwise it folds like a collective's flow.
  bool direct(int src, int dst) const {
    const auto a = static_cast<std::size_t>(src / gpus_per_node);
    const auto b = static_cast<std::size_t>(dst / gpus_per_node);
    return folded && a != b && !group.empty() && runs[a] && runs[b] && group[a] == group[b];
  }
  int simulated_ranks() const;
  // The nodes that run, in order (folded).
  std::vector<int> simulated_nodes() const;
  // For stdout and the summary: "classes (8 of 16384 GPUs simulated)" or "full (one node)".
  std::string describe() const;
};

// `cluster.rank_classes: auto` folds only where at least this many GPUs are left out of the
// simulation. Measured on the default scenario (2 nodes, 6 algorithms, 2 cores): folding 2 x 1
// GPUs saved 0.19 s of 0.46 s, 2 x 2 0.42 s of 0.93 s, 2 x 4 0.64 s of 1.56 s, 2 x 8 1.5 s of
// 3.6 s; below 4 GPUs left out the saving is a fraction of a second and the trace would lose GPUs.
constexpr int kFoldFromGpusLeftOut = 4;

// What in the scenario tells its nodes apart ("" when nothing does). With `cluster.rank_classes:
// statistical`, the draws and slowdowns that statistical_differences() names do not.
std::string rank_classes_obstacle(const scenario::Scenario& s);
// What differs between GPUs only by a random draw or a slowdown: "jitter", "sequence lengths",
// "stragglers" (", "-joined; "" when nothing does).
std::string statistical_differences(const scenario::Scenario& s);

// The node groups of a scenario (see above), each its nodes in ascending order, groups in order of
// their first node: one node each without tensor or pipeline parallelism. Empty, with `why` set,
// where the groups are not alike.
std::vector<std::vector<int>> alike_node_groups(const scenario::Scenario& s, std::string& why);
// Statistical per replica: the data-parallel indices of the replicas that do not run (ascending)
// in the node groups `among` marks (per group), then the extreme replica's, the lowest of node
// group `extreme_group`'s. `group_of`: per node, its group.
std::vector<int> replicas_stood_for(const scenario::Scenario& s, const RankClasses& rc,
                                    const std::vector<int>& group_of,
                                    const std::vector<char>& among, int extreme_group);
// The node NCCL's two trees over `m` nodes give the most edges (the lowest of equals), among the
// nodes `usable`; -1 where none is.
int busiest_tree_node(int m, const std::vector<char>& usable);
// The classes a simulation of `algorithm` on `s` uses.
RankClasses choose_rank_classes(const scenario::Scenario& s, const Algorithm& algorithm);

} // namespace overlapsim::sim
