#include "validate/dct.h"

#include <cmath>
#include <numbers>

namespace overlapsim::real {

torch::Tensor dct_matrix(std::int64_t n, const torch::TensorOptions& options) {
  const auto f64 = options.dtype(torch::kFloat64);
  const auto k = torch::arange(n, f64).unsqueeze(1);
  const auto i = torch::arange(n, f64).unsqueeze(0);
  auto c = torch::cos(std::numbers::pi * (2 * i + 1) * k / (2.0 * static_cast<double>(n)));
  c *= std::sqrt(2.0 / static_cast<double>(n));
  c[0] *= std::sqrt(0.5);
  return c.to(options);
}

namespace {
torch::Tensor as_blocks(const torch::Tensor& flat, std::int64_t chunk) {
  const std::int64_t block = chunk * chunk;
  const std::int64_t blocks = (flat.numel() + block - 1) / block;
  auto padded = torch::zeros({blocks * block}, flat.options());
  padded.narrow(0, 0, flat.numel()).copy_(flat);
  return padded.view({blocks, chunk, chunk});
}
} // namespace

torch::Tensor dct_blocks(const torch::Tensor& flat, std::int64_t chunk) {
  const auto c = dct_matrix(chunk, flat.options());
  const auto x = as_blocks(flat, chunk);
  return torch::matmul(torch::matmul(c, x), c.t()).reshape({x.size(0), chunk * chunk});
}

torch::Tensor idct_blocks(const torch::Tensor& coefficients, std::int64_t chunk,
                          std::int64_t elements) {
  const auto c = dct_matrix(chunk, coefficients.options());
  const auto y = coefficients.reshape({-1, chunk, chunk});
  return torch::matmul(torch::matmul(c.t(), y), c).reshape({-1}).narrow(0, 0, elements);
}

Selection top_k_blocks(const torch::Tensor& coefficients, std::int64_t top_k) {
  const auto k = std::min(top_k, coefficients.size(1));
  auto idx = std::get<1>(coefficients.abs().topk(k, 1, /*largest=*/true, /*sorted=*/false));
  return {coefficients.gather(1, idx), idx};
}

torch::Tensor scatter_mean(const torch::Tensor& indices, const torch::Tensor& values,
                           std::int64_t blocks, std::int64_t chunk) {
  const std::int64_t workers = indices.size(0) / blocks;
  const std::int64_t k = indices.size(1);
  // Worker w's block b is row w * blocks + b: fold the workers into the index dimension.
  const auto idx = indices.view({workers, blocks, k}).permute({1, 0, 2}).reshape({blocks, -1});
  const auto val = values.view({workers, blocks, k}).permute({1, 0, 2}).reshape({blocks, -1});
  auto sum = torch::zeros({blocks, chunk * chunk}, values.options());
  auto count = torch::zeros({blocks, chunk * chunk}, values.options());
  sum.scatter_add_(1, idx, val);
  count.scatter_add_(1, idx, torch::ones_like(val));
  return sum / count.clamp_min(1);
}

} // namespace overlapsim::real
