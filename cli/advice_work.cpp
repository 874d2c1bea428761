#include "cli/advice_work.h"

#include <algorithm>

namespace overlapsim::cli {

double ddp_memory_lower_bound(const scenario::Scenario& s) {
  const double params = s.model.spec.total_params();
  const double element = scenario::dtype_bytes(s.model.dtype);
  const bool fp32 = s.model.dtype == scenario::Dtype::fp32;
  double optimizer = 0;
  switch (s.training.optimizer) {
  case scenario::Optimizer::adamw:
    optimizer = fp32 ? 8 : 12;
    break;
  case scenario::Optimizer::sgd_momentum:
    optimizer = 4;
    break;
  case scenario::Optimizer::sgd:
    break;
  }
  // Tensor and pipeline parallelism split both over a model replica's GPUs.
  const double split = std::max(1, s.parallelism.tensor * s.parallelism.pipeline);
  return (params * (3 * element + optimizer) +
          s.model.spec.total_activation_bytes_per_sample() * s.training.micro_batch) /
         split;
}

bool memory_advice_probe_runs(const scenario::Scenario& s) {
  const bool sharded = std::any_of(s.algorithms.begin(), s.algorithms.end(), [](const auto& a) {
    return a.name == "zero1" || a.name == "fsdp";
  });
  return !sharded && ddp_memory_lower_bound(s) > s.cluster.gpu.memory_available();
}

} // namespace overlapsim::cli
