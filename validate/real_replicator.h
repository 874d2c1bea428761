// A replicator phase (algorithms/runtime.h, ReplicatorPhase) on real tensors: the decoupled
// momentum, DeMo's chunked DCT top-k (validate/dct.h) or the seeded indices of Random and Striding
// (algorithms/replicator_indices.h), the removal of what is sent, the decode and the DeMo-SGD
// update.
#pragma once

#include "runtime/runtime.h"

#include <torch/torch.h>

#include <cstdint>
#include <optional>

namespace overlapsim::real {

// The op's slices as tensors (views into the worker's fp32 buffers; undefined when unset).
struct ReplicatorTensors {
  torch::Tensor grads, params, momentum, values, indices;
};

// Returns, for an encode that sends seeded indices (random, striding), the digest of those indices
// (algorithms/replicator_indices.h): equal on every replica of the piece when the seed is shared.
std::optional<std::uint64_t> run_replicator_phase(const ReplicatorPhase& op,
                                                  const ReplicatorTensors& t);

} // namespace overlapsim::real
