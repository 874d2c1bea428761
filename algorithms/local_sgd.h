// The local-SGD family of the DreamDDP paper (Tang et al., "DreamDDP: Accelerating Data Parallel
// Distributed LLM Training with Layer-wise Scheduled Partial Synchronization", arXiv 2502.11058),
// option `H` (the synchronisation period, default 10) for all of them. Every worker trains on its
// own for H steps (forward, backward, its own optimizer step, gradients not reduced); the
// parameters are averaged by all-reduce (sum divided by the world size) so that within one period
// each layer is averaged exactly once. Memory: parameters, gradients and optimizer state as DDP (no
// extra buffer).
//
// local-sgd (FLSGD, Sec. 2): after the optimizer step of the last step of a period, every layer's
//   parameters are all-reduced, one layer after the other from the output, nothing overlapped.
// plsgd-enp (Definition 1, Example 1): the layers split in backward order into H groups of
//   ceil(L/H) layers; group h is averaged at local step h of the period (Eq. 5: the layer is
//   updated, then averaged) right after its own backward, overlapped with the rest of the backward.
// dreamddp (Algorithm 2): as plsgd-enp with the groups chosen by Algorithm 2's DFS on per-layer
//   backward and communication times estimated from the scenario (see layer_cost_estimate.h).
//   Option `bubble_filling` (default false; Sec. 3.4): at local step h, output-side layers already
//   averaged earlier in the period are averaged again when their all-reduce fits in the bubble the
//   schedule leaves before the backward ends (`bubble_filling` in partial_sync_schedule.h, on the
//   same estimated times): more synchronisation for no added wait in that model.
//
// iteration_time_s is a period average only when the steady-state window covers whole periods:
// set training.warmup_steps and training.steps to multiples of H (docs/SCENARIO.md).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_local_sgd(const scenario::AlgorithmSpec& spec);
std::unique_ptr<Algorithm> make_plsgd_enp(const scenario::AlgorithmSpec& spec);
std::unique_ptr<Algorithm> make_dreamddp(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& local_sgd_descriptor();
const AlgorithmDescriptor& plsgd_enp_descriptor();
const AlgorithmDescriptor& dreamddp_descriptor();

} // namespace overlapsim
