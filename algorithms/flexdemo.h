// FlexDeMo (DeToNATION paper, Algorithm 1): hybrid-sharded FSDP whose nodes do not synchronise
// gradients. Inside a node (the sharding group) each unit's gradients are reduce-scattered as its
// backward ends, exactly as in FSDP; each GPU then keeps a decoupled momentum of its shard, selects
// components with its replicator, exchanges only those with the GPUs of the other nodes that hold
// the same shard (the replication group), applies DeMo-SGD to its shard, and the next forward's
// intra-node all-gathers rebuild the parameters.
//
// Options: replicator (demo | random | striding | diloco), compression (the paper's compression
// rate: fraction of the shard's elements transmitted per step; diloco: a full synchronisation
// every round(1 / compression) steps; default 1/16), chunk and top_k (demo: top_k = compression x
// chunk^2 unless given), sign, value_dtype, seed, wrap, reshard_after_forward (as fsdp).
// Memory per GPU: (2 + 2 + 8) x params / GPUs per node (bf16: master and delta in fp32) plus
// FSDP's unsharded working set and the exchange buffers.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

namespace overlapsim {

std::unique_ptr<Algorithm> make_flexdemo(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& flexdemo_descriptor();

} // namespace overlapsim
