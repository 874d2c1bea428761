// ZeRO-1 (Rajbhandari et al. 2020): optimizer state sharded over the N data-parallel ranks.
// Gradients are reduce-scattered bucket by bucket during the last micro-batch's backward (like
// DDP's all-reduces, on the communication stream); each rank runs the optimizer on its 1/N shard of
// fp32 master weights and moments; the updated parameters are all-gathered before the next forward.
// Memory: (2 + 2 + K/N) x params (ACCO Table 1).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_zero1(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& zero1_descriptor();

} // namespace overlapsim
