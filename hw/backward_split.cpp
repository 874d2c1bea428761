#include "hw/backward_split.h"

#include "hw/roofline.h"

#include <string_view>

namespace overlapsim::hw {

bool is_weight_gradient(const KernelOp& op) {
  const std::string_view name = op.name;
  return name.ends_with(" wgrad") || name.ends_with(" grad accumulate") ||
         name.starts_with("embedding grad");
}

double weight_gradient_share(const LayerOps& ops, const GpuSpec& gpu) {
  double all = 0, weight = 0;
  for (const auto& op : ops.backward) {
    const double t = kernel_time_s(gpu, op);
    all += t;
    if (is_weight_gradient(op))
      weight += t;
  }
  return all > 0 ? weight / all : 0;
}

} // namespace overlapsim::hw
