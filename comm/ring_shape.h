// How much a collective moves and in how many steps: the one statement of bus factors in
// overlapsim (issue 66.4). The simulator's rings and closed-form prices, the planners, `auto`,
// calibration fits, `overlapsim collective`'s busbw and the real worker's byte counts all ask here.
//
// Sizes follow nccl-tests: S, the "array", is the whole buffer a collective is about: all-reduce's
// and broadcast's data, reduce-scatter's input, all-gather's output. A runtime call (runtime.h's
// CollectiveCall) names all-gather by its shard instead (NCCL's sendcount): array_bytes converts.
#pragma once

#include "comm/collective_op.h"

namespace overlapsim::comm {

// The ring (or chain) form of a collective over `ranks` ranks, on one link of latency alpha and
// bandwidth B: time = steps x alpha + bus_factor x S / B, the alpha-beta form of nccl-tests'
// busbw (its PERFORMANCE.md):
//   all-reduce                              2(n-1) steps, 2(n-1)/n   (reduce-scatter + all-gather)
//   reduce-scatter, all-gather, all-to-all  n-1 steps,    (n-1)/n
//   broadcast, reduce                       n-1 steps,    1          (a pipelined chain)
//   send, recv (one message)                1 step,       1
//   barrier                                 2(n-1) steps, 0          (an all-reduce of nothing)
// One rank: no step and nothing moves (the shape of a group of one).
struct RingShape {
  double steps = 0;
  double bus_factor = 0; // bytes each rank sends per byte of S; nccl-tests' busbw / algbw
};
RingShape ring_shape(CollectiveOp op, int ranks);

inline double bus_factor(CollectiveOp op, int ranks) {
  return ring_shape(op, ranks).bus_factor;
}

// nccl-tests' S of a call whose data (runtime convention) is `data_bytes` long: all-gather's data
// is one rank's shard, so S = ranks x shard; every other op's data is S.
double array_bytes(CollectiveOp op, int ranks, double data_bytes);

// Bytes one rank sends in the ring form of `op` on an array of S bytes: bus_factor x S; a
// receive and a barrier send nothing.
double ring_bytes_sent(CollectiveOp op, int ranks, double array);

// The ring form's time on one link (see RingShape); 0 for one rank.
double ring_seconds(CollectiveOp op, int ranks, double array, double latency_s,
                    double bandwidth_Bps);

} // namespace overlapsim::comm
