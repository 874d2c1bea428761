// How NCCL's reduce-scatter and all-gather want shards laid out, and how algorithms lay them out.
// shard() (algorithms/model_state.h) gives the first (total % n) shards one element more; NCCL
// wants n equal shards end to end. These move between the two through a padded buffer.
#pragma once

#include <torch/torch.h>

namespace overlapsim::real {

// The size of each of the n equal shards NCCL works on: the largest of shard()'s.
std::int64_t padded_shard(std::int64_t total, int n);

// `data` (shard()'s layout of `total` elements) as n padded shards end to end; `data` itself
// when the shards are equal already.
torch::Tensor pad_shards(const torch::Tensor& data, int n);

// Copies n padded shards end to end (`padded`) into `out`, shard()'s layout.
void unpad_shards(const torch::Tensor& padded, torch::Tensor& out, int n);

} // namespace overlapsim::real
