#include "validate/real_optimizer.h"

#include <cmath>

namespace overlapsim::real {

OptimizerConfig OptimizerConfig::from(const spec::TrainingSpec& t) {
  OptimizerConfig c;
  c.kind = t.optimizer;
  c.lr = t.learning_rate;
  c.weight_decay = t.weight_decay;
  return c;
}

void apply_optimizer(const OptimizerConfig& c, OptimizerSlots& s, const torch::Tensor& grad,
                     torch::Tensor out, bool commit) {
  torch::NoGradGuard no_grad;
  const auto& p = s.master;
  torch::Tensor updated;
  switch (c.kind) {
  case spec::Optimizer::adamw: {
    if (!s.m.defined()) {
      s.m = torch::zeros_like(p);
      s.v = torch::zeros_like(p);
    }
    const double t = static_cast<double>(s.steps + 1);
    auto m = s.m * c.beta1 + grad * (1 - c.beta1);
    auto v = s.v * c.beta2 + grad * grad * (1 - c.beta2);
    const double bc1 = 1 - std::pow(c.beta1, t), bc2 = 1 - std::pow(c.beta2, t);
    // p <- p - lr (m^ / (sqrt(v^) + eps) + wd p)
    updated = p * (1 - c.lr * c.weight_decay) - (m / bc1) / ((v / bc2).sqrt() + c.eps) * c.lr;
    if (commit)
      s.m = m, s.v = v;
    break;
  }
  case spec::Optimizer::sgd:
    updated = p - (grad + p * c.weight_decay) * c.lr;
    break;
  case spec::Optimizer::sgd_momentum: {
    auto g = grad + p * c.weight_decay;
    auto buf = s.m.defined() ? s.m * c.momentum + g : g.clone();
    updated = p - buf * c.lr;
    if (commit)
      s.m = buf;
    break;
  }
  }
  if (commit) {
    s.master = updated;
    ++s.steps;
  }
  out.copy_(updated);
}

} // namespace overlapsim::real
