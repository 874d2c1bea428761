#include "cli/work_budget.h"

#include "hw/units.h"
#include "scenario/loader.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim::cli {

WorkEstimate estimate_work(const scenario::Scenario& s) {
  const double gpus = s.cluster.world_size();
  const double steps = s.training.warmup_steps + s.training.steps;
  const double layers = static_cast<double>(s.model.spec.layers.size());
  const double param_bytes = s.model.spec.total_params() * scenario::dtype_bytes(s.model.dtype);
  // Gradient buckets: the smallest bucket_cap of the algorithms (25 MiB, torch's default, when
  // none is given) sets how many collectives a step holds.
  double bucket_cap = 25.0 * 1024 * 1024;
  for (const auto& a : s.algorithms)
    if (auto it = a.options.find("bucket_cap"); it != a.options.end()) {
      try {
        bucket_cap = std::min(bucket_cap, hw::parse_size_bytes(it->second.value));
      } catch (const hw::UnitError&) {
        // the algorithm reports its own bad option
      }
    }
  const double buckets = std::max(1.0, param_bytes / std::max(1.0, bucket_cap));
  const double per_gpu_step = 2 * layers * s.training.grad_accum + buckets + 4;
  WorkEstimate w;
  w.ops = gpus * steps * per_gpu_step;
  w.breakdown =
      fmt::format("{} GPUs x {} steps x ({} layers x 2 x {} micro-batches + {} gradient "
                  "buckets)",
                  hw::format_count(gpus), hw::format_count(steps), hw::format_count(layers),
                  s.training.grad_accum, hw::format_count(buckets));
  return w;
}

void check_work_budget(const scenario::Scenario& s, bool force) {
  if (force)
    return;
  const auto w = estimate_work(s);
  if (w.ops > kWorkBudgetOps)
    throw std::invalid_argument(fmt::format(
        "{}: the run would simulate about {} ops per algorithm ({}), past the budget of {} "
        "(tens of minutes and gigabytes of memory); use fewer GPUs, steps or micro-batches, a "
        "larger bucket_cap, or pass --force",
        s.source, hw::format_count(w.ops), w.breakdown, hw::format_count(kWorkBudgetOps)));
}

} // namespace overlapsim::cli
