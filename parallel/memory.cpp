#include "parallel/memory.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::parallel {

using scenario::PipelineSchedule;
using scenario::Recompute;

std::optional<TransformerShape> TransformerShape::of(const scenario::ModelConfig& model) {
  const auto& d = model.dims;
  if (!d.contains("n_heads"))
    return std::nullopt;
  const auto get = [&](const char* key, double otherwise) {
    const auto it = d.find(key);
    return it == d.end() ? otherwise : it->second;
  };
  return TransformerShape{.hidden = d.at("d_model"),
                          .heads = d.at("n_heads"),
                          .ffn = d.at("d_ff"),
                          .vocab = d.at("vocab"),
                          .norm_params = get("norm_params", 2),
                          .linear_bias = get("linear_bias", 1) > 0,
                          .positions = get("positions", 0),
                          .fused_attention =
                              model.transformer && model.transformer->attention !=
                                                       hw::TransformerDims::Attention::eager};
}

StateBytes state_bytes(scenario::Dtype dtype, scenario::Optimizer optimizer) {
  const double p = scenario::dtype_bytes(dtype);
  // K as algorithms/model_state.cpp's optimizer_state_bytes_per_param counts it (this module
  // sits below algorithms/): the fp32 master in 16-bit training, then the moments.
  const double master = dtype == scenario::Dtype::fp32 ? 0.0 : 4.0;
  const double moments = optimizer == scenario::Optimizer::adamw          ? 8.0
                         : optimizer == scenario::Optimizer::sgd_momentum ? 4.0
                                                                          : 0.0;
  return {.weights = p, .grads = p, .optimizer = master + moments};
}

double block_activation_bytes(const TransformerShape& x, double s, double b, int tensor,
                              bool sequence_parallel, Recompute recompute) {
  const double t = tensor;
  const double h = x.hidden, sbh = s * b * h;
  if (recompute == Recompute::full) // the layer's input only (Korthikanti et al., Table 2)
    return 2 * sbh / (sequence_parallel ? t : 1.0);
  // Table 2's 34 = 10 (left whole by TP) + 24 (split), with an MLP of 4h; 16 of the 24 are the
  // MLP's two 2sbf tensors (the GELU's input and the down projection's), 4f/h in general, as in
  // Megatron's estimator (18 + 4f/h).
  const double split = 8 + 4 * x.ffn / h;
  const double whole = 10;
  // The attention's softmax output, its dropout mask and its dropout output: 5as^2b; selective
  // recomputation recomputes them (Sec. 5).
  const double attention =
      recompute == Recompute::selective || x.fused_attention ? 0.0 : 5 * x.heads * s * s * b;
  if (sequence_parallel)
    return (sbh * (whole + split) + attention) / t;
  return sbh * (whole + split / t) + attention / t;
}

double recompute_bytes(const TransformerShape& x, double s, double b, int tensor,
                       bool sequence_parallel, Recompute recompute) {
  return block_activation_bytes(x, s, b, tensor, sequence_parallel, Recompute::none) -
         block_activation_bytes(x, s, b, tensor, sequence_parallel, recompute);
}

double embedding_activation_bytes(const TransformerShape& x, double s, double b, int tensor,
                                  bool sequence_parallel) {
  const double bytes = s * b * x.hidden /*dropout mask*/ + 8 * s * b /*int64 token ids*/;
  return sequence_parallel ? bytes / tensor : bytes;
}

double output_activation_bytes(const TransformerShape& x, double s, double b, int tensor,
                               bool sequence_parallel) {
  const double inputs = 4 * s * b * x.hidden; // final norm's and output projection's, 2sbh each
  const double logits = 4 * s * b * x.vocab / tensor;
  return (sequence_parallel ? inputs / tensor : inputs) + logits;
}

double p2p_message_bytes(const TransformerShape& x, double s, double b, int tensor,
                         bool sequence_parallel) {
  const double bytes = 2 * s * b * x.hidden;
  return sequence_parallel ? bytes / tensor : bytes;
}

double micro_batches_in_flight(PipelineSchedule schedule, int pipeline, int virtual_stages,
                               int micro_batches, int stage) {
  const int p = pipeline, m = micro_batches;
  switch (schedule) {
  case PipelineSchedule::gpipe:
    return m;
  case PipelineSchedule::one_f_one_b:
  case PipelineSchedule::zero_bubble:
    return std::min(m, p - stage);
  case PipelineSchedule::interleaved: {
    const int v = virtual_stages;
    const int chunks = std::min(m * v, 2 * (p - stage - 1) + (v - 1) * p + 1);
    return static_cast<double>(chunks) / v;
  }
  }
  return m;
}

namespace {

enum class LayerKind { embedding, block, head, other };

LayerKind kind_of(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                  const std::optional<TransformerShape>& shape) {
  if (!shape)
    return LayerKind::other;
  const auto blocks = layout.blocks();
  if (layer >= blocks.first && layer < blocks.last)
    return blocks.last - blocks.first == static_cast<int>(model.layers.size()) ? LayerKind::other
                                                                               : LayerKind::block;
  return layer < blocks.first ? LayerKind::embedding : LayerKind::head;
}

} // namespace

double layer_params_per_gpu(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                            const std::optional<TransformerShape>& shape) {
  const double params = model.layers[static_cast<std::size_t>(layer)].params;
  const double t = layout.tensor();
  double whole = 0;
  switch (kind_of(model, layer, layout, shape)) {
  case LayerKind::block: // two norms, and the row-parallel linears' biases
    whole = 2 * shape->norm_params * shape->hidden + (shape->linear_bias ? 2 * shape->hidden : 0);
    break;
  case LayerKind::embedding: // the word embedding is vocab-parallel, learned positions are not
    whole = shape->positions * shape->hidden;
    break;
  case LayerKind::head: // the final norm; an untied LM head is vocab-parallel
    whole = shape->norm_params * shape->hidden;
    break;
  case LayerKind::other:
    break;
  }
  whole = std::min(whole, params);
  return whole + (params - whole) / t;
}

double layer_activation_bytes(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                              const std::optional<TransformerShape>& shape, double s, double b) {
  const auto& spec = layout.spec();
  const int t = layout.tensor();
  switch (kind_of(model, layer, layout, shape)) {
  case LayerKind::block:
    return block_activation_bytes(*shape, s, b, t, spec.sequence_parallel, spec.recompute);
  case LayerKind::embedding:
    return embedding_activation_bytes(*shape, s, b, t, spec.sequence_parallel);
  case LayerKind::head:
    return output_activation_bytes(*shape, s, b, t, spec.sequence_parallel);
  case LayerKind::other: // the layer's own bytes, split evenly by TP (an assumption)
    break;
  }
  return model.layers[static_cast<std::size_t>(layer)].activation_bytes_per_sample * b / t;
}

double layer_recompute_bytes(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                             const std::optional<TransformerShape>& shape, double s, double b) {
  if (kind_of(model, layer, layout, shape) != LayerKind::block)
    return 0;
  const auto& spec = layout.spec();
  return recompute_bytes(*shape, s, b, layout.tensor(), spec.sequence_parallel, spec.recompute);
}

bool recomputes(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                const std::optional<TransformerShape>& shape) {
  return layout.spec().recompute != Recompute::none &&
         kind_of(model, layer, layout, shape) == LayerKind::block;
}

double p2p_buffer_bytes(const ParallelLayout& layout, const hw::ModelSpec& model,
                        const std::optional<TransformerShape>& shape, double s, double b,
                        int stage) {
  if (layout.pipeline() <= 1)
    return 0;
  const int t = layout.tensor();
  double message = 0;
  if (shape) {
    message = p2p_message_bytes(*shape, s, b, t, layout.spec().sequence_parallel);
  } else {
    const auto first = layout.stage_layers(stage).front().first;
    const auto& from = model.layers[static_cast<std::size_t>(std::max(0, first - 1))];
    message = from.output_bytes_per_sample * b / t;
  }
  const int buffers = (stage > 0 ? 1 : 0) + (stage < layout.pipeline() - 1 ? 1 : 0);
  return buffers * message;
}

StageMemory stage_memory(const ParallelLayout& layout, const hw::ModelSpec& model,
                         const std::optional<TransformerShape>& shape, const MemoryOptions& options,
                         int stage) {
  const auto& spec = layout.spec();
  const int t = layout.tensor();
  const double s = options.seq_len, b = options.micro_batch;
  StageMemory out;
  out.stage = stage;
  out.params = layout.tied_copy_params(stage) / t; // vocab-parallel, like the first stage's
  for (const LayerRange& range : layout.stage_layers(stage))
    for (int l = range.first; l < range.last; ++l) {
      out.params += layer_params_per_gpu(model, l, layout, shape);
      out.activations_per_micro_batch += layer_activation_bytes(model, l, layout, shape, s, b);
      out.recompute_working =
          std::max(out.recompute_working, layer_recompute_bytes(model, l, layout, shape, s, b));
    }
  // Weights and gradients of the stage's shard; the optimizer state also over DP when sharded
  // (ZeRO-1: Rajbhandari et al. 2020, Sec. 5.1, P_os: 4 Psi + K Psi / N_d; Megatron's
  // distributed optimizer: 6 + 12/d bytes a parameter).
  out.weights = out.params * options.bytes.weights;
  out.grads = out.params * options.bytes.grads;
  out.optimizer_state =
      out.params * options.bytes.optimizer / (options.shard_optimizer ? layout.data() : 1);
  out.in_flight = micro_batches_in_flight(spec.schedule, layout.pipeline(), layout.virtual_stages(),
                                          options.micro_batches, stage);
  out.activations = out.activations_per_micro_batch * out.in_flight;
  out.p2p_buffers = p2p_buffer_bytes(layout, model, shape, s, b, stage);
  return out;
}

std::vector<StageMemory> memory_per_stage(const ParallelLayout& layout, const hw::ModelSpec& model,
                                          const std::optional<TransformerShape>& shape,
                                          const MemoryOptions& options) {
  std::vector<StageMemory> out;
  for (int stage = 0; stage < layout.pipeline(); ++stage)
    out.push_back(stage_memory(layout, model, shape, options, stage));
  return out;
}

std::vector<StageMemory> memory_per_stage(const scenario::Scenario& s, bool shard_optimizer) {
  const MemoryOptions options{.micro_batch = s.training.micro_batch,
                              .seq_len = s.training.seq_len,
                              .micro_batches = s.training.grad_accum,
                              .bytes = state_bytes(s.model.dtype, s.training.optimizer),
                              .shard_optimizer = shard_optimizer};
  return memory_per_stage(ParallelLayout::of(s), s.model.spec, TransformerShape::of(s.model),
                          options);
}

double peak_memory_per_gpu(const std::vector<StageMemory>& stages) {
  double out = 0;
  for (const auto& st : stages)
    out = std::max(out, st.total());
  return out;
}

} // namespace overlapsim::parallel
