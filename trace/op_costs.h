// What each kind of op cost in a run's measuring window: how often it ran, its median duration and
// its time per step. validate prints predicted against measured per op (issue 30.4), so a user sees
// which op an iteration-time error comes from: a forward priced 18% slow, an optimizer step over a
// shard priced as a share of the full step.
#pragma once

#include "trace/trace.h"

#include <optional>
#include <string>
#include <vector>

namespace overlapsim {

struct OpCost {
  std::string op; // "forward", "backward", or the op's name without its "(stage 1)" detail
  OpCategory category = OpCategory::forward;
  StreamKind stream = StreamKind::compute;
  double count_per_step = 0; // ops a worker runs per step
  // The typical op: each instance's median duration over the steps (the j-th op of the kind in a
  // step on a worker's stream: one bucket, unit or stage), averaged over the instances by their
  // counts. An op recorded without a step (copies, accumulates, fills) counts in the step its
  // worker marks done next; ops after a worker's last mark are one instance. For a kind whose ops
  // are alike, their median.
  double median_s = 0;
  double per_step_s = 0; // summed durations per worker per step
  // Collectives: what the members spent waiting for the group's last one to start, per worker per
  // step. median_s and per_step_s count a collective from that start, when data can move: a
  // measured all-reduce otherwise carries its peers' compute jitter (DiLoCo's averaging on 2 CPU
  // workers: 59 ms measured against 11 ms predicted, mostly waiting).
  double waiting_per_step_s = 0;
  // The run's own noise on the typical op: the typical op over the window's first half of steps
  // against the second half's, |second - first| / the whole window's. A per-op error inside it is
  // not told apart from the run's noise. NaN with fewer than two steps or an op in one half only.
  double halves_spread = 0;
};

// The kind an op is counted under: forward and backward of any layer range are one kind each;
// other ops by name, without a trailing parenthesis or index ("all-gather params (stage 2)" ->
// "all-gather params", "all-reduce bucket 3" -> "all-reduce bucket").
std::string op_kind(OpCategory category, const std::string& name);

// The ops that start inside [window_start_s, window_end_s), by kind, in order of first
// appearance; counts and times are per worker per step (`steps` steps, trace.workers workers).
// A collective (an op on a group of more than 2, or with no peer) is one instance across its
// members: the k-th on a group on each member, as collectives on one group run in order. A
// message ("send X" and "recv X" naming each other as peer) counts on both sides from the later
// of its two posts to its receive's end, its halves paired in order per X, step and direction.
std::vector<OpCost> op_costs(const Trace& trace, double window_start_s, double window_end_s,
                             int steps);

// One kind of op in a prediction and a measurement of the same algorithm; a side without it is
// absent (an op the simulator does not model, or one the real runtime skips).
struct OpComparison {
  std::string op;
  StreamKind stream = StreamKind::compute;
  std::optional<OpCost> predicted, measured;
};

// Joined by (stream, kind): the measured kinds in order, then those only predicted.
std::vector<OpComparison> compare_op_costs(const std::vector<OpCost>& predicted,
                                           const std::vector<OpCost>& measured);

} // namespace overlapsim
