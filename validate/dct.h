// DeMo's chunked DCT-II on real tensors (Peng, Quesnelle and Kingma 2024; the DeToNATION paper's
// demo replicator): a flat tensor is cut into blocks of chunk x chunk elements (the last one
// zero-padded), each block Y = C X C^T with C the orthonormal DCT-II matrix, and the top_k
// coefficients of largest magnitude of each block are kept with their index inside the block.
// C is orthogonal, so the inverse is X = C^T Y C and keeping every coefficient loses nothing.
#pragma once

#include <torch/torch.h>

namespace overlapsim::real {

// The orthonormal DCT-II matrix: C[k][n] = s_k cos(pi (2n + 1) k / (2 N)), s_0 = sqrt(1 / N),
// s_k = sqrt(2 / N).
torch::Tensor dct_matrix(std::int64_t n, const torch::TensorOptions& options);

// Blocks of `flat` (1-D), transformed: [blocks, chunk * chunk].
torch::Tensor dct_blocks(const torch::Tensor& flat, std::int64_t chunk);
// The inverse of dct_blocks, cut back to `elements`.
torch::Tensor idct_blocks(const torch::Tensor& coefficients, std::int64_t chunk,
                          std::int64_t elements);

struct Selection {
  torch::Tensor values;  // [blocks, top_k]
  torch::Tensor indices; // [blocks, top_k], int64, within each block
};

// The top_k coefficients of largest magnitude of each block.
Selection top_k_blocks(const torch::Tensor& coefficients, std::int64_t top_k);

// Coefficient blocks [blocks, chunk^2] from the selections of several workers ([workers x
// blocks, top_k] stacked worker after worker): a coefficient sent by several takes their mean,
// one nobody sent is 0 (DeToNATION's scatter_reduce "mean", include_self = false).
torch::Tensor scatter_mean(const torch::Tensor& indices, const torch::Tensor& values,
                           std::int64_t blocks, std::int64_t chunk);

} // namespace overlapsim::real
