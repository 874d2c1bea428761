#include "validate/shard_layout.h"

#include "algorithms/model_state.h"

namespace overlapsim::real {

std::int64_t padded_shard(std::int64_t total, int n) {
  return shard(0, total, 0, n).count;
}

torch::Tensor pad_shards(const torch::Tensor& data, int n) {
  const std::int64_t total = data.numel(), largest = padded_shard(total, n);
  if (largest * n == total)
    return data;
  auto padded = torch::zeros({largest * n}, data.options());
  for (int j = 0; j < n; ++j) {
    const Slice part = shard(0, total, j, n);
    padded.narrow(0, j * largest, part.count).copy_(data.narrow(0, part.offset, part.count));
  }
  return padded;
}

void unpad_shards(const torch::Tensor& padded, torch::Tensor& out, int n) {
  const std::int64_t largest = padded.numel() / n;
  for (int j = 0; j < n; ++j) {
    const Slice part = shard(0, out.numel(), j, n);
    out.narrow(0, part.offset, part.count).copy_(padded.narrow(0, j * largest, part.count));
  }
}

} // namespace overlapsim::real
