#include "hw/layer_ops.h"

namespace overlapsim::hw {

void set_roofline_costs(LayerSpec& layer, const LayerOps& ops, const GpuSpec& gpu,
                        double micro_batch) {
  double fwd = 0, quadratic = 0, bwd = 0;
  for (std::size_t i = 0; i < ops.forward.size(); ++i) {
    const double t = kernel_time_s(gpu, ops.forward[i]);
    fwd += t;
    if (i < ops.quadratic.size() && ops.quadratic[i])
      quadratic += t;
  }
  for (const auto& op : ops.backward)
    bwd += kernel_time_s(gpu, op);
  layer.fwd_model_time_per_sample_s = fwd / micro_batch;
  layer.bwd_model_time_per_sample_s = bwd / micro_batch;
  layer.seq_quadratic_share = fwd > 0 ? quadratic / fwd : 0;
  layer.activation_bytes_per_sample = ops.saved_bytes / micro_batch;
}

} // namespace overlapsim::hw
