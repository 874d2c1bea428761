#include "sim/node_type_compute.h"

#include "hw/compute_cost.h"
#include "hw/transformer_ops.h"

namespace overlapsim::sim {

std::vector<NodeTypeLayerTimes> node_type_layer_times(const scenario::Scenario& s) {
  std::vector<NodeTypeLayerTimes> out;
  const bool fp32 = s.model.dtype == scenario::Dtype::fp32;
  const bool roofline = s.model.transformer && s.model.compute == "roofline";
  for (const auto& type : s.cluster.node_types) {
    hw::ModelSpec model = s.model.spec;
    if (roofline)
      hw::apply_roofline(model, *s.model.transformer, type.gpu, s.training.micro_batch,
                         s.training.seq_len);
    // A time measured, or modelled other than by the transformer roofline redone above (a
    // convolution's), on cluster.gpu: the type's GPU runs it at its own sustained rate.
    const double scale =
        hw::sustained_flops(s.cluster.gpu, fp32) / hw::sustained_flops(type.gpu, fp32);
    auto& times = out.emplace_back();
    for (const auto& layer : model.layers)
      for (const bool backward : {false, true}) {
        const double measured =
            backward ? layer.bwd_time_per_sample_s : layer.fwd_time_per_sample_s;
        const double modelled =
            backward ? layer.bwd_model_time_per_sample_s : layer.fwd_model_time_per_sample_s;
        const bool on_cluster_gpu = measured > 0 || (!roofline && modelled > 0);
        const double t = hw::layer_seconds_per_sample(layer, type.gpu, fp32, backward);
        (backward ? times.backward : times.forward).push_back(on_cluster_gpu ? t * scale : t);
      }
  }
  return out;
}

} // namespace overlapsim::sim
