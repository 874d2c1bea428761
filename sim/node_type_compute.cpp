#include "sim/node_type_compute.h"

#include "hw/compute_cost.h"
#include "hw/transformer_ops.h"

namespace overlapsim::sim {

namespace {

bool roofline_of(const scenario::Scenario& s) {
  return s.model.transformer && s.model.compute == "roofline";
}

// The model with its transformer roofline redone at `gpu` (as the loader did at cluster.gpu).
hw::ModelSpec model_on(const scenario::Scenario& s, const hw::GpuSpec& gpu) {
  hw::ModelSpec model = s.model.spec;
  if (roofline_of(s))
    hw::apply_roofline(model, *s.model.transformer, gpu, s.training.micro_batch,
                       s.training.seq_len);
  return model;
}

// `layers`' times per sample on `gpu`, their roofline (if any) already `gpu`'s.
NodeTypeLayerTimes times_on(const scenario::Scenario& s, const std::vector<hw::LayerSpec>& layers,
                            const hw::GpuSpec& gpu) {
  const bool fp32 = s.model.dtype == scenario::Dtype::fp32;
  const bool roofline = roofline_of(s);
  // A time measured, or modelled other than by the transformer roofline redone above (a
  // convolution's), on cluster.gpu: the type's GPU runs it at its own sustained rate.
  const double scale = hw::sustained_flops(s.cluster.gpu, fp32) / hw::sustained_flops(gpu, fp32);
  NodeTypeLayerTimes times;
  for (const auto& layer : layers)
    for (const bool backward : {false, true}) {
      const double measured = backward ? layer.bwd_time_per_sample_s : layer.fwd_time_per_sample_s;
      const double modelled =
          backward ? layer.bwd_model_time_per_sample_s : layer.fwd_model_time_per_sample_s;
      const bool on_cluster_gpu = measured > 0 || (!roofline && modelled > 0);
      const double t = hw::layer_seconds_per_sample(layer, gpu, fp32, backward);
      (backward ? times.backward : times.forward).push_back(on_cluster_gpu ? t * scale : t);
    }
  return times;
}

} // namespace

std::vector<NodeTypeLayerTimes> node_type_layer_times(const scenario::Scenario& s) {
  std::vector<NodeTypeLayerTimes> out;
  for (const auto& type : s.cluster.node_types)
    out.push_back(times_on(s, model_on(s, type.gpu).layers, type.gpu));
  return out;
}

std::vector<std::vector<NodeTypeStage>> node_type_stages(const scenario::Scenario& s,
                                                         const parallel::ParallelLayout& layout) {
  std::vector<std::vector<NodeTypeStage>> out;
  for (const auto& type : s.cluster.node_types) {
    // The job as if every GPU were the type's: stage_views shards the type's roofline (redone
    // again at the TP size) and prices its TP overlap beside the type's GEMMs.
    scenario::Scenario typed = s;
    typed.model.spec = model_on(s, type.gpu);
    typed.cluster.gpu = type.gpu;
    auto& stages = out.emplace_back();
    for (auto& view : parallel::stage_views(typed, layout)) {
      NodeTypeLayerTimes times = times_on(s, view.scenario.model.spec.layers, type.gpu);
      stages.push_back({std::move(times), std::move(view)});
    }
  }
  return out;
}

} // namespace overlapsim::sim
