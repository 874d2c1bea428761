#include "hw/compute_cost.h"

namespace overlapsim::hw {

double sustained_flops(const GpuSpec& gpu, bool fp32) {
  const double peak = fp32 && gpu.peak_flops_fp32 > 0 ? gpu.peak_flops_fp32 : gpu.peak_flops_bf16;
  return peak * gpu.efficiency;
}

double layer_seconds_per_sample(const LayerSpec& layer, const GpuSpec& gpu, bool fp32,
                                bool backward) {
  const double measured = backward ? layer.bwd_time_per_sample_s : layer.fwd_time_per_sample_s;
  if (measured > 0)
    return measured;
  const double modelled =
      backward ? layer.bwd_model_time_per_sample_s : layer.fwd_model_time_per_sample_s;
  if (modelled > 0)
    return modelled;
  const double flops = backward ? layer.bwd_flops_per_sample : layer.fwd_flops_per_sample;
  return flops / sustained_flops(gpu, fp32);
}

} // namespace overlapsim::hw
