#include "parallel/stage_view.h"

#include "comm/collective_price.h"
#include "hw/transformer_ops.h"
#include "parallel/memory.h"
#include "parallel/tp_comm_overlap.h"
#include "scenario/collective_shape.h"

#include <fmt/format.h>
#include <optional>
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

std::vector<double> seconds_of(const std::vector<hw::TpCommOp>& ops, const comm::PriceRule& rule,
                               const comm::NcclShape& group) {
  std::vector<double> out;
  for (const auto& op : ops)
    out.push_back(comm::price_collective(rule, group, op_of(op.kind), op.bytes).seconds);
  return out;
}

double sum(const std::vector<double>& v) {
  double s = 0;
  for (double x : v)
    s += x;
  return s;
}

// A layer's TP collectives priced on the TP group's links (comm/, the one owner of prices); with
// `overlap_with` (a block under tp_comm_overlap: its op list), what stays exposed beside its GEMMs.
LayerTensorComm price(const hw::TensorParallelComm& ops, const comm::PriceRule& rule,
                      const comm::NcclShape& group, const hw::LayerOps* overlap_with,
                      const hw::GpuSpec& gpu, int tensor) {
  LayerTensorComm c;
  const auto forward = seconds_of(ops.forward, rule, group);
  const auto backward = seconds_of(ops.backward, rule, group);
  c.forward_s = sum(forward);
  c.backward_s = sum(backward);
  for (const auto& op : ops.forward)
    c.forward_bytes += op.bytes, ++c.forward_calls;
  for (const auto& op : ops.backward)
    c.backward_bytes += op.bytes, ++c.backward_calls;
  if (overlap_with) {
    const auto f =
        overlap_block_comm(overlap_with->forward, ops.forward, forward, false, gpu, tensor);
    const auto b =
        overlap_block_comm(overlap_with->backward, ops.backward, backward, true, gpu, tensor);
    c.forward_s = f.exposed_s;
    c.backward_s = b.exposed_s;
    c.hidden_s = f.hidden_s + b.hidden_s;
    c.overlapped = true;
  }
  return c;
}

// The recomputation of a layer that recomputes (parallel/memory.h's recomputes).
LayerRecompute recompute_of(scenario::Recompute kind, const hw::LayerSpec& layer, double bytes) {
  LayerRecompute r;
  const double q = layer.seq_quadratic_share;
  r.quadratic_share = q;
  r.linear_share = kind == scenario::Recompute::full ? 1 - q : 0;
  r.bytes = bytes;
  return r;
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
    const double b = s.training.micro_batch, seq = s.training.seq_len;
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
      if (l == model_layers.back()) // the tied embedding's copy on the last stage (vocab-parallel)
        layer.params += layout.tied_copy_params(stage) / t;
      // The memory model's bytes (Korthikanti et al. Table 2), so that the simulated peak is
      // parallel/memory.h's; a model without a transformer shape keeps its own.
      if (shape)
        layer.activation_bytes_per_sample =
            layer_activation_bytes(s.model.spec, l, layout, shape, seq, b) / b;
      layers.push_back(layer);
      v.recompute.push_back(
          recomputes(s.model.spec, l, layout, shape)
              ? recompute_of(p.recompute, layer,
                             layer_recompute_bytes(s.model.spec, l, layout, shape, seq, b))
              : LayerRecompute{});
      LayerTensorComm c;
      if (t > 1) {
        const auto& dims = *s.model.transformer;
        const bool block = layer.name != "embedding" && layer.name != "head";
        const hw::TensorParallelComm ops =
            layer.name == "embedding" ? hw::embedding_tp_comm(dims, b, seq, tp)
            : layer.name == "head"    ? hw::head_tp_comm(dims, b, seq, tp)
                                      : hw::block_tp_comm(dims, b, seq, tp);
        // Megatron's tp_comm_overlap: TransformerEngine's userbuffers, in the blocks' linears.
        std::optional<hw::LayerOps> overlap_ops;
        if (p.tp_comm_overlap && tp.sequence_parallel && block)
          overlap_ops = hw::block_ops(dims, b, seq, tp);
        c = price(ops, rule, tp_group, overlap_ops ? &*overlap_ops : nullptr, s.cluster.gpu, t);
        // Measured in situ at this TP size (a calibration profile): what a real run's layer paid
        // for its TP collectives, in place of their price on the links (docs/VALIDATE.md).
        if (model.tp_comm_measured_tensor == t && !overlap_ops) {
          c.forward_s = layer.tp_comm_forward_s;
          c.backward_s = layer.tp_comm_backward_s;
        }
        // Full recomputation re-runs the forward, its collectives with it, before the backward.
        if (v.recompute.back().linear_share > 0) {
          c.backward_s += c.forward_s;
          c.backward_bytes += c.forward_bytes;
          c.backward_calls += c.forward_calls;
        }
      }
      v.tensor_comm.push_back(c);
    }
    v.p2p_buffer_bytes = p2p_buffer_bytes(layout, s.model.spec, shape, seq, b, stage);
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
