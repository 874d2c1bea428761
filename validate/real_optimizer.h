// The optimizers of scenario::Optimizer on flat tensors, as the real runtime applies them to the
// slices algorithms pass in OptimizerStep: AdamW (Loshchilov & Hutter 2019, decoupled weight
// decay, bias-corrected moments), SGD and SGD with momentum 0.9 (PyTorch's formulation).
#pragma once

#include "scenario/scenario.h"

#include <torch/torch.h>

namespace overlapsim::real {

struct OptimizerConfig {
  scenario::Optimizer kind = scenario::Optimizer::adamw;
  double lr = 1e-3;
  double weight_decay = 0;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double momentum = 0.9;

  static OptimizerConfig from(const scenario::TrainingSpec& training);
};

// What an optimizer keeps for the elements it updates: the master copy of the parameters and the
// moments (K bytes per parameter in the memory model), and how many steps it has committed.
struct OptimizerSlots {
  torch::Tensor master;
  torch::Tensor m;
  torch::Tensor v;
  std::int64_t steps = 0;
};

// Computes the update of `slots.master` with gradient `grad` (already averaged) into `out`. With
// commit, the slots advance (master, moments, step count); without, they are left as they were,
// which is how ACCO estimates theta~(t+1) (Algorithm 1, line 27).
void apply_optimizer(const OptimizerConfig& config, OptimizerSlots& slots,
                     const torch::Tensor& grad, torch::Tensor out, bool commit);

// DiLoCo's outer step (Douillard et al. 2023, Algorithm 1 lines 8-9; algorithms/runtime.h,
// OuterStep): with Delta = anchor - params the averaged pseudo-gradient, Nesterov momentum as
// torch.optim.SGD(nesterov=True): momentum = mu momentum + Delta, anchor -= lr (Delta + mu
// momentum), then params = anchor.
void apply_outer_step(torch::Tensor params, torch::Tensor anchor, torch::Tensor momentum, double lr,
                      double mu);

// Streaming DiLoCo's merge (Douillard et al. 2025, Sec. 2.3): local = alpha local + (1 - alpha)
// global, in place. alpha = 0 gives exactly `global` (0 x local adds an exact zero).
void merge_fragment(torch::Tensor local, const torch::Tensor& global, double alpha);

} // namespace overlapsim::real
