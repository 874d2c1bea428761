// A replicator phase (algorithms/runtime.h, ReplicatorPhase) on real tensors: the decoupled
// momentum, DeMo's chunked DCT top-k (validate/dct.h) or the seeded indices of Random and Striding
// (algorithms/replicator_indices.h), the removal of what is sent, the decode and the DeMo-SGD
// update.
#pragma once

#include "algorithms/runtime.h"

#include <torch/torch.h>

namespace overlapsim::real {

// The op's slices as tensors (views into the worker's fp32 buffers; undefined when unset).
struct ReplicatorTensors {
  torch::Tensor grads, params, momentum, values, indices;
};

void run_replicator_phase(const ReplicatorPhase& op, const ReplicatorTensors& t);

} // namespace overlapsim::real
