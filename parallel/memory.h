// Memory per GPU under 3D parallelism (issue 65, item 4): the weights, gradients and optimizer
// state of a pipeline stage's TP shard, the activations of the micro-batches it holds in flight
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// arXiv:2205.05198, Table 2 and Sec. 4.3) and its pipeline receive buffers. Cross-checked against
// Megatron-LM's own estimator (megatron/training/theoretical_memory_usage.py) in
// tests/parallel_memory_test.cpp. `memory_per_stage` / `peak_memory_per_gpu` are what the
// simulator and the `fits` check use.
#pragma once

#include "hw/model.h"
#include "parallel/layout.h"
#include "scenario/scenario.h"

#include <optional>
#include <vector>

namespace overlapsim::parallel {

// The transformer shape the formulas need (the paper's h, a, v; its FFN is 4h) and what tensor
// parallelism leaves whole on every rank.
struct TransformerShape {
  double hidden = 0; // h
  double heads = 0;  // a
  double ffn = 0;    // the MLP's inner size (4h in the paper)
  double vocab = 0;  // v
  // Replicated on every TP rank (Shoeybi et al. 2019, Megatron-LM, Sec. 3: the column-parallel
  // linears split their biases, the row-parallel ones add theirs after the all-reduce): each norm's
  // scale (and bias), norm_params per hidden unit (2 LayerNorm, 1 RMSNorm); the out and down
  // projections' biases when linear_bias; learned position embeddings (positions x h; Megatron's
  // are not vocab-parallel).
  double norm_params = 2;
  bool linear_bias = true;
  double positions = 0;
  // A fused attention kernel (SDPA, FlashAttention; Dao et al. 2022) keeps no s^2 tensor: the
  // 5as^2b of Table 2 is Megatron's unfused softmax's, and it recomputes the scores in its own
  // backward, so selective recomputation has nothing left to drop.
  bool fused_attention = false;

  // A transformer preset's (model.dims); nullopt for any other model.
  static std::optional<TransformerShape> of(const scenario::ModelConfig& model);
};

// Bytes per parameter of the weights, their gradients and the optimizer state.
struct StateBytes {
  double weights = 2;
  double grads = 2;
  double optimizer = 12;
};
// This project's counts (algorithms/model_state.h): weights and gradients in the model's dtype,
// K = an fp32 master copy in 16-bit training (4) + AdamW's moments (8) or SGD momentum (4).
StateBytes state_bytes(scenario::Dtype dtype, scenario::Optimizer optimizer);
// Megatron's mixed-precision Adam, 18 bytes a parameter (theoretical_memory_usage.py): bf16
// weights, fp32 main gradients, fp32 master weights and two fp32 moments.
inline constexpr StateBytes kMegatronMixedPrecisionAdam{.weights = 2, .grads = 4, .optimizer = 12};

struct MemoryOptions {
  int micro_batch = 1;   // b, sequences per micro-batch
  int seq_len = 1024;    // s
  int micro_batches = 1; // m per optimizer step (training.grad_accum)
  StateBytes bytes;
  // ZeRO-1 (Rajbhandari et al. 2020) or Megatron's distributed optimizer: the optimizer state
  // (with the master copy) sharded over the DP group, 1/d of it per GPU.
  bool shard_optimizer = false;
};

// One GPU of one pipeline stage (all its GPUs hold as much).
struct StageMemory {
  int stage = 0;
  double params = 0; // parameters on one GPU of the stage (its TP shard)
  double weights = 0, grads = 0, optimizer_state = 0;
  double activations_per_micro_batch = 0; // kept from forward to backward, all its chunks
  double in_flight = 0;                   // micro-batches whose activations it holds at its peak
  double activations = 0;
  double p2p_buffers = 0; // pipeline receive buffers
  // What recomputation brings back for the one block whose backward runs (recompute_bytes), on
  // top of the micro-batches in flight: the peak is reached during the first backward.
  double recompute_working = 0;
  double total() const {
    return weights + grads + optimizer_state + activations + p2p_buffers + recompute_working;
  }
};

// Bytes one transformer layer keeps per micro-batch (16-bit activations, 1-byte dropout masks;
// Korthikanti et al. Table 2, whose MLP is 4h wide). With f the FFN size the per-layer terms are
// sbh(18 + 4f/h) + 5as^2b (f = 4h: sbh(34 + 5as/h)), of which TP splits sbh(8 + 4f/h) and the
// attention's 5as^2b and leaves sbh x 10 (the layer norms, the QKV and MLP inputs, the dropout
// masks) on every rank:
//   no parallelism        sbh(34 + 5as/h)
//   TP t                  sbh(10 + 24/t + 5as/(ht))
//   TP t + SP             sbh/t (34 + 5as/h)      (SP splits the 10 along the sequence)
// selective recompute drops the 5as/h term (the attention's softmax, its dropout and scores);
// full recompute keeps only the layer's input, 2sbh (2sbh/t with SP, which keeps it split). With
// fused_attention there is no 5as/h term at all.
double block_activation_bytes(const TransformerShape& shape, double seq_len, double micro_batch,
                              int tensor, bool sequence_parallel, scenario::Recompute recompute);
// The bytes recomputation rebuilds for one block during its backward (block_activation_bytes
// without recomputation less with it): selective 5as^2b/t (the attention core), full everything
// but the kept input. Alive one block at a time (Korthikanti et al. Sec. 5; Megatron's estimator
// leaves it out); 0 without recomputation.
double recompute_bytes(const TransformerShape& shape, double seq_len, double micro_batch,
                       int tensor, bool sequence_parallel, scenario::Recompute recompute);
// The first stage's extras per micro-batch: the embedding's dropout mask sbh (Sec. 4.3; sbh/t
// with SP) and its input, 8sb (the int64 token ids; Megatron's estimator), /t with SP as the
// estimator counts them.
double embedding_activation_bytes(const TransformerShape& shape, double seq_len, double micro_batch,
                                  int tensor, bool sequence_parallel);
// The last stage's: the final norm's and the output layer's inputs, 2sbh each, and the fp32
// logits for the cross entropy, 4sbv/t (vocab-parallel). With SP the inputs are split too:
// 4sbh/t (1 + v/h) (Sec. 4.3); without it 4sbh + 4sbv/t.
double output_activation_bytes(const TransformerShape& shape, double seq_len, double micro_batch,
                               int tensor, bool sequence_parallel);
// One pipeline message (an activation forward, its gradient back): 2sbh bytes, 2sbh/t with SP
// (Megatron scatters it over the TP group).
double p2p_message_bytes(const TransformerShape& shape, double seq_len, double micro_batch,
                         int tensor, bool sequence_parallel);

// Micro-batches whose activations stage `stage` (0-based) of `pipeline` holds at its peak, in
// micro-batches of the whole stage (for interleaved, chunk-micro-batches / virtual_stages):
//   gpipe        m (every forward before the first backward; Huang et al. 2019)
//   1f1b         min(m, p - stage) (warm-up forwards + 1; Narayanan et al. 2021, PipeDream-Flush)
//   zero-bubble  as 1f1b (ZB-H1 keeps 1F1B's peak; Qi et al. 2023)
//   interleaved  min(m v, 2(p - stage - 1) + (v - 1)p + 1) / v: Megatron's warm-up chunk count
//                (schedules.py) + 1; on the first stage p(1 + (p - 1)/(p v)), the penalty
//                Megatron's estimator applies (Narayanan et al. 2021, Sec. 2.2)
double micro_batches_in_flight(scenario::PipelineSchedule schedule, int pipeline,
                               int virtual_stages, int micro_batches, int stage);

// Parameters of model layer `layer` on one GPU of its TP group: the replicated parts whole, the
// rest / t (a layer of a model without a transformer shape: all / t).
double layer_params_per_gpu(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                            const std::optional<TransformerShape>& shape);

// Bytes model layer `layer` keeps per micro-batch of `micro_batch` sequences of `seq_len` on one
// GPU of its TP group: block_activation_bytes for a block (with the layout's SP and
// recomputation), embedding_ or output_activation_bytes for the first and last layers, a layer of
// another model its own bytes / t.
double layer_activation_bytes(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                              const std::optional<TransformerShape>& shape, double seq_len,
                              double micro_batch);
// What recomputation rebuilds in the layer's backward (recompute_bytes for a block, else 0), and
// whether it recomputes the layer at all (the layout's recompute, blocks only).
double layer_recompute_bytes(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                             const std::optional<TransformerShape>& shape, double seq_len,
                             double micro_batch);
bool recomputes(const hw::ModelSpec& model, int layer, const ParallelLayout& layout,
                const std::optional<TransformerShape>& shape);

// Pipeline receive buffers of a GPU of `stage`: one activation from the previous stage, one
// gradient from the next (what it sends is an activation it keeps anyway); 0 without a pipeline.
double p2p_buffer_bytes(const ParallelLayout& layout, const hw::ModelSpec& model,
                        const std::optional<TransformerShape>& shape, double seq_len,
                        double micro_batch, int stage);

StageMemory stage_memory(const ParallelLayout& layout, const hw::ModelSpec& model,
                         const std::optional<TransformerShape>& shape, const MemoryOptions& options,
                         int stage);
std::vector<StageMemory> memory_per_stage(const ParallelLayout& layout, const hw::ModelSpec& model,
                                          const std::optional<TransformerShape>& shape,
                                          const MemoryOptions& options);
// A loaded scenario's: its layout, model, training (micro-batch, seq_len, grad_accum), dtype and
// optimizer.
std::vector<StageMemory> memory_per_stage(const scenario::Scenario& scenario,
                                          bool shard_optimizer = false);
// The most any GPU needs: the largest stage total.
double peak_memory_per_gpu(const std::vector<StageMemory>& stages);

} // namespace overlapsim::parallel
