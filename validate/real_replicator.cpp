#include "validate/real_replicator.h"

#include "algorithms/replicator_indices.h"
#include "validate/dct.h"

namespace overlapsim::real {

namespace {

torch::Tensor seeded_indices(const ReplicatorPhase& op, const torch::Tensor& like,
                             std::uint64_t* digest = nullptr) {
  const auto list = replicator_indices(op.config, op.step, op.piece, op.params.count);
  if (digest != nullptr)
    *digest = indices_digest(list);
  return torch::tensor(list, torch::TensorOptions().dtype(torch::kInt64)).to(like.device());
}

std::optional<std::uint64_t> encode(const ReplicatorPhase& op, const ReplicatorTensors& t) {
  const auto& c = op.config;
  if (c.kind == ReplicatorKind::diloco)
    return std::nullopt;
  // m <- beta m + s g
  t.momentum.mul_(c.decay).add_(t.grads, op.grad_scale);
  if (!op.exchanged)
    return std::nullopt;
  if (c.kind == ReplicatorKind::demo) {
    const std::int64_t e = op.params.count;
    const auto coefficients = dct_blocks(t.momentum, c.chunk);
    const auto sel = top_k_blocks(coefficients, c.top_k);
    const std::int64_t k = sel.values.numel();
    t.values.narrow(0, op.member * k, k).copy_(sel.values.reshape({-1}));
    t.indices.narrow(0, op.member * k, k).copy_(sel.indices.reshape({-1}));
    // What is sent leaves the momentum: m <- m - IDCT(own selection).
    auto own = torch::zeros_like(coefficients);
    own.scatter_(1, sel.indices, sel.values);
    t.momentum.sub_(idct_blocks(own, c.chunk, e));
    return std::nullopt;
  }
  std::uint64_t digest = 0;
  const auto idx = seeded_indices(op, t.momentum, &digest);
  t.values.copy_(t.momentum.index_select(0, idx));
  t.momentum.index_fill_(0, idx, 0.0);
  return digest;
}

torch::Tensor decode(const ReplicatorPhase& op, const ReplicatorTensors& t) {
  const auto& c = op.config;
  if (c.kind == ReplicatorKind::diloco)
    return t.grads * op.grad_scale; // averaged across the group in place when exchanged
  if (!op.exchanged) {
    // Nothing was exchanged (a group of one): the whole momentum is applied and emptied.
    auto q = t.momentum.clone();
    t.momentum.zero_();
    return q;
  }
  if (c.kind == ReplicatorKind::demo) {
    const std::int64_t block = static_cast<std::int64_t>(c.chunk) * c.chunk;
    const std::int64_t blocks = (op.params.count + block - 1) / block;
    const std::int64_t k = t.values.numel() / op.group_size / blocks;
    const auto idx = t.indices.to(torch::kInt64).view({op.group_size * blocks, k});
    const auto val = t.values.view({op.group_size * blocks, k});
    return idct_blocks(scatter_mean(idx, val, blocks, c.chunk), c.chunk, op.params.count);
  }
  auto q = torch::zeros_like(t.params);
  q.index_copy_(0, seeded_indices(op, t.params), t.values);
  return q;
}

} // namespace

std::optional<std::uint64_t> run_replicator_phase(const ReplicatorPhase& op,
                                                  const ReplicatorTensors& t) {
  torch::NoGradGuard no_grad;
  if (op.phase == ReplicatorPhase::Kind::encode)
    return encode(op, t);
  auto q = decode(op, t);
  if (op.config.sign)
    q.sign_();
  t.params.sub_(q, op.lr); // DeMo-SGD: theta <- theta - lr sign(Q)
  return std::nullopt;
}

} // namespace overlapsim::real
