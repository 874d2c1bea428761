// DiLoCo (Douillard et al. 2023, "DiLoCo: Distributed Low-Communication Training of Language
// Models", Algorithm 1), option `H` (inner steps per outer step, default 10), `outer_lr` (default
// 0.7) and `outer_momentum` (default 0.9). Every worker takes H inner steps with
// training.optimizer (AdamW by default, as the paper) on its own data; then the pseudo-gradient
// theta_start - theta is averaged over the workers and an outer Nesterov-momentum step moves
// theta_start (OuterStep in algorithms/runtime.h), which every worker continues from. Nothing
// overlaps: the all-reduce and the outer step follow the period's last inner step.
//
// The all-reduce averages the parameters themselves, and the outer step subtracts that average
// from theta_start: theta_start is the same on every worker, so mean(theta_start - theta_i) =
// theta_start - mean(theta_i), the paper's averaged pseudo-gradient without a buffer for it.
// Memory: DDP's model states plus the outer state, theta_start and the outer momentum in fp32
// (8 bytes per parameter, counted as optimizer state).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_diloco(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& diloco_descriptor();

} // namespace overlapsim
