#include "algorithms/layer_cost_estimate.h"

#include "hw/compute_cost.h"
#include "scenario/collective_shape.h"

namespace overlapsim {

double all_reduce_startup_s(const scenario::Scenario& s) {
  if (s.cluster.world_size() <= 1 || s.model.spec.comm_times_from_table)
    return 0.0;
  // The price of an all-reduce of nothing: what every all-reduce pays before its bytes move.
  return scenario::price_world_collective(s.cluster, CollectiveOp::all_reduce, 0).seconds;
}

LayerCosts estimate_layer_costs(const scenario::Scenario& s) {
  const auto& c = s.cluster;
  const int n = c.world_size();
  const bool fp32 = s.model.dtype == scenario::Dtype::fp32;
  const double bytes_per_param = scenario::dtype_bytes(s.model.dtype);
  const double samples = s.training.micro_batch;
  LayerCosts costs;
  for (const auto& l : s.model.spec.layers) {
    // Measured, else modelled (roofline), else FLOPs: the simulator's own price.
    costs.bp_s.push_back(hw::layer_seconds_per_sample(l, c.gpu, fp32, true) * samples);
    if (n <= 1)
      costs.comm_s.push_back(0.0);
    else if (s.model.spec.comm_times_from_table)
      costs.comm_s.push_back(l.comm_time_s);
    else // the one price of a collective (comm/collective_price.h), as the simulator runs it
      costs.comm_s.push_back(
          scenario::price_world_collective(c, CollectiveOp::all_reduce, l.params * bytes_per_param)
              .seconds);
  }
  return costs;
}

} // namespace overlapsim
