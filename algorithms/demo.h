// DeMo (Peng, Quesnelle and Kingma 2024), DDP-based: every worker keeps the whole model and its
// own decoupled momentum; after the backward pass no gradient is all-reduced. Instead each worker
// extracts the fast components of its momentum with a chunked DCT-II (top_k per chunk x chunk
// block), removes them from its momentum, and all workers all-gather everyone's values and int32
// indices, decode and apply sign(Q) (replicator.h). The all-gather's volume grows linearly with
// the number of workers.
//
// Options: chunk (64), top_k (32) or compression (top_k / chunk^2), sign (true),
// value_dtype (fp32 | bf16 | fp16).
// Memory per GPU: (2 + 2 + 4 + 4) x params for bf16 (params, grads, fp32 master, fp32 delta),
// plus the gathered values and indices.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_demo(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& demo_descriptor();

} // namespace overlapsim
