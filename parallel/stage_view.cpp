#include "parallel/stage_view.h"

#include "comm/collective_price.h"
#include "hw/transformer_ops.h"
#include "parallel/memory.h"
#include "scenario/collective_shape.h"

#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim::parallel {

namespace {

CollectiveOp op_of(hw::TpCollective kind) {
  switch (kind) {
  case hw::TpCollective::reduce_scatter:
    return CollectiveOp::reduce_scatter;
  case hw::TpCollective::all_gather:
    return CollectiveOp::all_gather;
  default:
    return CollectiveOp::all_reduce;
  }
}

// A layer's TP collectives priced on the TP group's links (comm/, the one owner of prices).
LayerTensorComm price(const hw::TensorParallelComm& ops, const comm::PriceRule& rule,
                      const comm::NcclShape& group) {
  LayerTensorComm c;
  for (const auto& op : ops.forward) {
    c.forward_s += comm::price_collective(rule, group, op_of(op.kind), op.bytes).seconds;
    c.forward_bytes += op.bytes;
    ++c.forward_calls;
  }
  for (const auto& op : ops.backward) {
    c.backward_s += comm::price_collective(rule, group, op_of(op.kind), op.bytes).seconds;
    c.backward_bytes += op.bytes;
    ++c.backward_calls;
  }
  return c;
}

} // namespace

std::vector<StageView> stage_views(const scenario::Scenario& s, const ParallelLayout& layout) {
  const int t = layout.tensor();
  const auto& p = s.parallelism;
  hw::ModelSpec model = s.model.spec;
  const hw::TensorParallel tp{t, p.sequence_parallel && t > 1};
  if (t > 1) {
    if (!s.model.transformer)
      throw std::invalid_argument(fmt::format(
          "parallelism.tensor: {} needs a transformer model (a preset, `transformer` or "
          "gpt-tiny): its layers' kernels are what tensor parallelism shards",
          t));
    if (s.model.compute == "roofline")
      hw::apply_roofline(model, *s.model.transformer, s.cluster.gpu, s.training.micro_batch,
                         s.training.seq_len, tp);
    else // FLOPs at the GPU's efficiency: a rank runs its 1/t of them
      for (auto& l : model.layers) {
        l.fwd_flops_per_sample /= t;
        l.bwd_flops_per_sample /= t;
        l.activation_bytes_per_sample /= t;
      }
  }
  const auto shape = TransformerShape::of(s.model);
  // The TP group: t consecutive GPUs of a node under tp-first orders (a warning when it spans
  // nodes; priced then as t / gpus_per_node nodes of gpus_per_node).
  const int per_node = std::min(t, s.cluster.gpus_per_node);
  const comm::NcclShape tp_group =
      scenario::group_shape(s.cluster, std::max(1, t / per_node), per_node);
  const comm::PriceRule rule = scenario::price_rule(s.cluster);
  std::vector<StageView> views;
  for (int stage = 0; stage < layout.pipeline(); ++stage) {
    StageView v;
    v.stage = stage;
    v.stages = layout.pipeline();
    v.scenario = s;
    // The stage's model chunks one after the other (one without interleaving).
    const auto ranges = layout.stage_layers(stage);
    auto& layers = v.scenario.model.spec.layers;
    layers.clear();
    std::vector<int> model_layers;
    for (const LayerRange& range : ranges) {
      const int first = static_cast<int>(model_layers.size());
      for (int l = range.first; l < range.last; ++l)
        model_layers.push_back(l);
      v.chunks.push_back({first, static_cast<int>(model_layers.size())});
    }
    for (const int l : model_layers) {
      hw::LayerSpec layer = model.layers[static_cast<std::size_t>(l)];
      layer.params = layer_params_per_gpu(s.model.spec, l, layout, shape);
      layers.push_back(layer);
      LayerTensorComm c;
      if (t > 1) {
        const auto& dims = *s.model.transformer;
        const double b = s.training.micro_batch, seq = s.training.seq_len;
        const hw::TensorParallelComm ops =
            layer.name == "embedding" ? hw::embedding_tp_comm(dims, b, seq, tp)
            : layer.name == "head"    ? hw::head_tp_comm(dims, b, seq, tp)
                                      : hw::block_tp_comm(dims, b, seq, tp);
        c = price(ops, rule, tp_group);
      }
      v.tensor_comm.push_back(c);
    }
    if (shape)
      v.message_bytes = p2p_message_bytes(*shape, s.training.seq_len, s.training.micro_batch, t,
                                          tp.sequence_parallel);
    else // another model: the stage's last layer's output
      v.message_bytes =
          model.layers[static_cast<std::size_t>(ranges.back().last - 1)].output_bytes_per_sample *
          s.training.micro_batch;
    views.push_back(std::move(v));
  }
  return views;
}

} // namespace overlapsim::parallel
