#include "algorithms/layer_cost_estimate.h"

#include "hw/compute_cost.h"

namespace overlapsim {
namespace {

const hw::LinkSpec& slowest_link(const scenario::ClusterSpec& c) {
  if (!c.sites.empty())
    return c.wan;
  return c.nodes > 1 ? c.inter_node : c.intra_node;
}

} // namespace

double all_reduce_startup_s(const scenario::Scenario& s) {
  const int n = s.cluster.world_size();
  if (n <= 1 || s.model.spec.comm_times_from_table)
    return 0.0;
  return 2.0 * (n - 1) * slowest_link(s.cluster).latency_s;
}

LayerCosts estimate_layer_costs(const scenario::Scenario& s) {
  const auto& c = s.cluster;
  const int n = c.world_size();
  const hw::LinkSpec& link = slowest_link(c);
  const bool fp32 = s.model.dtype == scenario::Dtype::fp32;
  const double bytes_per_param = scenario::dtype_bytes(s.model.dtype);
  const double samples = s.training.micro_batch;
  const double startup = all_reduce_startup_s(s);
  LayerCosts costs;
  for (const auto& l : s.model.spec.layers) {
    // Measured, else modelled (roofline), else FLOPs: the simulator's own price.
    costs.bp_s.push_back(hw::layer_seconds_per_sample(l, c.gpu, fp32, true) * samples);
    if (n <= 1)
      costs.comm_s.push_back(0.0);
    else if (s.model.spec.comm_times_from_table)
      costs.comm_s.push_back(l.comm_time_s);
    else
      costs.comm_s.push_back(startup +
                             2.0 * (n - 1) / n * l.params * bytes_per_param / link.bandwidth_Bps);
  }
  return costs;
}

} // namespace overlapsim
