// Statistical rank classes' stand-ins for one simulation (issue 64.2, 64.5; sim/rank_classes.h,
// sim/slowest_of.h): which simulated GPUs run as the slowest of those left out, and, for a
// 3D-parallel job, how the GPUs they stand for wait for each other.
//
// Without a pipeline or a TP group over several nodes, one GPU stands for every GPU left out:
// each wait of the extreme is taken as every GPU's (exact for collectives of all; TP inside a node
// overshoots, sim/rank_classes.cpp says why it stays so).
//
// A pipeline (or a TP group over several nodes) is the unit that is alike (a *replica*: the
// T x P GPUs of one data-parallel index). Its GPUs wait for each other every op (a TP group's
// all-reduce, a stage's activation or gradient), and for the other replicas only in a stage's
// data-parallel collectives. The fold runs one replica of a node group of its own, the *extreme
// replica*: its GPU (t, s) stands for GPU (t, s) of every replica left out and itself, each a
// clock and its own draws (SlowestOf). Where the extreme replica waits inside itself, each replica
// it stands for waits for its own members, not the slowest of all:
//  - a TP group's collective: replica r's TP ranks restart together at the latest of their own
//    clocks, plus the collective's time (what the extreme's group spent after its last arrival);
//  - a stage message: replica r's receiver starts at max(its clock, the sender's clock when replica
//    r's sender sent) plus the transfer (the extreme's own, from when both sides were ready).
// So the extreme replica's timeline is, op by op, the latest of the replicas' timelines: its
// stage-s GPU joins a stage's data-parallel collective when the slowest replica's stage s does, and
// its pipeline flushes when the slowest replica's chain does. Every other wait (a data-parallel
// collective, the other stream) is every replica's: all clocks restart there (SlowestOf::waited).
// Approximated: the replicas left out communicate as the folded ones do (the same transfer times).
// With GPU types (cluster.node_types) one extreme replica runs per type pattern, each for its own
// pattern's replicas (RankClasses::replicas, one set each): a replica and those it stands for
// then hold the same GPU types stage by stage, so each op's cost is every member's.
#pragma once

#include "parallel/layout.h"
#include "sim/rank_classes.h"
#include "sim/slowest_of.h"

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

namespace overlapsim::sim {

class StatisticalFold {
public:
  // `classes` folded statistically (classes.statistical()); `nominal_speed` as SlowestOf's.
  StatisticalFold(const scenario::Scenario& s, const RankClasses& classes, double nominal_speed);

  // The stand-in `rank` runs as, or null where it runs as itself.
  SlowestOf* of(int rank);
  bool per_replica() const { return layout_.has_value(); }

  // Per replica only (no-ops otherwise). `rank`'s TP group ended its collective number `seq` at
  // `now` on `stream` (0 compute, 1 communication): each replica's TP ranks restart together.
  void tensor_synced(int rank, std::int64_t seq, int stream, double now);
  // `from` sent its stage message `tag` (FIFO per pair and tag) to `to` at `now`.
  void sent(int from, int to, int tag, int stream, double now);
  // `to` posted the receive of that message at `posted`, and it arrived at `now`.
  void received(int from, int to, int tag, int stream, double posted, double now);

private:
  std::optional<parallel::ParallelLayout> layout_; // per replica
  std::map<int, SlowestOf> of_;
  std::map<int, std::int64_t> tensor_synced_; // per TP group (its first rank): the last seq
  struct Message {
    std::vector<double> clocks; // the sender's GPUs' clocks, replica by replica
    double sent;                // when the extreme sent it
  };
  std::map<std::tuple<int, int, int>, std::deque<Message>> messages_;
};

} // namespace overlapsim::sim
