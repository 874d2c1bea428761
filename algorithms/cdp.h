// Cyclic Data Parallelism (Fournier & Oyallon, "Cyclic Data Parallelism for Efficient Parallelism
// of Deep Neural Networks", Sec. 3.2 and 4, Fig. 1 and 2, Table 1).
//
// The model is cut into N stages of about equal compute; the N micro-batches of a training step run
// their 2N stage ops (forward stages 1..N, backward N..1) staggered by two time steps instead of
// simultaneously, so activation memory stays nearly constant and gradient communication becomes
// point-to-point transfers spread over the step.
//
// Settings (option `setting`):
//  - multi-gpu (default): N = world size GPUs, one micro-batch each, worker i starting two time
//    steps after worker i-1. After its backward of stage j a worker adds its gradient to the
//    partial sum received from the previous worker and sends it on (modulo N), so the reduction
//    travels the ring during the step; the last worker's complete sum travels the ring once more so
//    that every worker applies the update (point-to-point only, no collective).
//  - single-gpu: the N = training.grad_accum micro-batches of each GPU interleaved cyclically on
//  the
//    device: activations peak near (N+1)/2 B Psi_A instead of N B Psi_A; several GPUs then
//    all-reduce the gradients at the end of the step.
// Update rules: cdp-v1 (eq. CDP-v1) updates every stage after the N-th micro-batch (a barrier) and
// micro-batches compute on the parameters of the previous step (two versions kept); cdp-v2
// (eq. CDP-v2) updates a stage as soon as its gradient is complete and micro-batch i computes
// stage j on the fresh version when j >= N - i + 1 (1-based), the previous one otherwise, with
// one parameter copy (Sec. 3.2; Table 1's multi-GPU row: Psi_P per GPU, as DP). The summed
// gradients travel in stage-sized slots.
// Option `schedule: simultaneous` runs the DP counterpart of the setting (all micro-batches in
// step, one all-reduce at the end), so each row of Table 1 can be simulated side by side.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_cdp_v1(const scenario::AlgorithmSpec& spec);
std::unique_ptr<Algorithm> make_cdp_v2(const scenario::AlgorithmSpec& spec);

// Contiguous layer ranges of about equal forward plus backward compute, one per stage; throws
// std::invalid_argument when the model has fewer layers than stages.
std::vector<LayerRange> split_stages(const hw::ModelSpec& model, int stages);

const AlgorithmDescriptor& cdp_v1_descriptor();
const AlgorithmDescriptor& cdp_v2_descriptor();

} // namespace overlapsim
