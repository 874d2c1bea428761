// The delayed-update family of the ACCO paper (Nabli et al., "ACCO: Accumulate while you
// communicate", Sec. 3 and Algorithm 1 in Appendix A.2). In all three the communication stream runs
// a round (all-reduce of the micro-batch counts, reduce-scatter of the accumulated gradients, the
// sharded optimizer step, all-gather of the parameters) while the compute stream keeps accumulating
// micro-batches; the compute stream hands its gradients over as soon as the running round ends, so
// a GPU never waits for communication and faster GPUs accumulate more micro-batches.
//
//  - dpu: Delayed Parameter Update re-purposed as in ACCO Sec. 3 (eq. DPU): one round per
//    optimizer step, gradients one step stale. Option `warmup_steps`: that many non-delayed ZeRO-1
//    steps first (the compute stream waits for each round).
//  - acco-wp: weight prediction (Sec. 3, WP): one round, two optimizer steps per round (theta(t+1)
//    and the estimate theta~(t+2) from the same averaged gradients).
//  - acco: Algorithm 1: each optimizer step is two rounds; stage 1 estimates theta~(t+1) from the
//    first half g~ of the mini-batch (eq. 1), stage 2 computes theta(t+1) from g + g~ (eq. 2).
//
// Memory (ACCO Table 1): (2 + 2 + 2 + K/N) x params: parameters, gradients, the communication
// buffer the compute stream hands over, and the 1/N shard of the optimizer state.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_dpu(const scenario::AlgorithmSpec& spec);
std::unique_ptr<Algorithm> make_acco_wp(const scenario::AlgorithmSpec& spec);
std::unique_ptr<Algorithm> make_acco(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& dpu_descriptor();
const AlgorithmDescriptor& acco_wp_descriptor();
const AlgorithmDescriptor& acco_descriptor();

} // namespace overlapsim
