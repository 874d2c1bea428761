// PyTorch DDP and synchronous SGD without overlap.
//
// ddp: gradients are grouped into buckets of `bucket_cap` bytes (default 25 MiB, PyTorch's
// bucket_cap_mb) in reverse layer order; during the last micro-batch's backward each bucket's
// all-reduce starts on the communication stream as soon as its last gradient is ready; the
// optimizer step runs once every bucket is reduced. The first grad_accum - 1 micro-batches run
// under no_sync. s-sgd: the same buckets, all reduced after the whole backward pass (no overlap).
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_ddp(const scenario::AlgorithmSpec& spec);
std::unique_ptr<Algorithm> make_s_sgd(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& ddp_descriptor();
const AlgorithmDescriptor& s_sgd_descriptor();

} // namespace overlapsim
