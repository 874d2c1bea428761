// A collective as a profile measures it: which op, on how many ranks, on how many bytes. The
// simulator lists the sizes an algorithm issues; `overlapsim profile` measures each of them besides
// its geometric sweep, so that no op the run issues is priced by interpolating across a knee (Gloo
// on loopback all-reduced 131 kB in 0.3 ms and 300 kB in 3.2 ms; NCCL switches protocol by size).
// Optimizer steps are listed the same way (op kOptimizerStep, their parameter count as `bytes`):
// a step's cost is neither linear in its size nor free when small.
#pragma once

#include "runtime/runtime.h"

#include <compare>
#include <optional>
#include <string>

namespace overlapsim {

struct CollectiveSize {
  std::string op; // the calibration's name: all_reduce, reduce_scatter, all_gather, send_recv, ...
  int ranks = 0;  // the group size (a message: 2)
  double bytes = 0; // the array as nccl-tests counts it: all-gather's output, a message's bytes

  friend auto operator<=>(const CollectiveSize&, const CollectiveSize&) = default;
};

// The op name under which the simulator lists optimizer steps, `ranks` 1 and `bytes` the
// parameters a step updates: CDP-v2's step of a 316-parameter stage cost 9 us by the full
// step's rate and 125-168 us on a CPU, a call's own cost.
inline constexpr const char* kOptimizerStep = "optimizer_step";
// And ACCO's estimates (uncommitted steps) under their own name: profile times an estimate only
// where an algorithm makes one, at the parameters it updates.
inline constexpr const char* kOptimizerEstimate = "optimizer_estimate";

// The calibration's name of `op`: "all-reduce" spelt all_reduce; a send is send_recv (profile
// measures messages as a ping-pong).
std::string calibration_op_name(CollectiveOp op);

// The size `call` has as a profile counts it, its data `data_bytes` long (NCCL's convention: the
// shard for all-gather, the full array otherwise); nullopt for a receive (its send counts the
// message) and a barrier (it moves nothing).
std::optional<CollectiveSize> profiled_size(const CollectiveCall& call, double data_bytes);

// Whether `call` writes its result over its input: no output slice, or one that overlaps the data
// in the same buffer (DDP's bucket all-reduce, ZeRO-1's reduce-scatter into its shard of the
// gradients and all-gather of its shard into the parameters). Over one rank that is all the
// difference: NCCL then only launches (17-30 us on an H100), where out of place it copies or
// averages (0.5-1.2 ms for 22-537 MB).
bool in_place(const CollectiveCall& call);

} // namespace overlapsim
