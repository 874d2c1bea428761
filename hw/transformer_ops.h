// The kernels a decoder-only transformer's layers run in one training micro-batch, as PyTorch
// eager runs them under bf16 autocast (fp32 master weights and residual stream, 16-bit GEMMs), and
// the time and activation memory that follow from them on a GPU (hw/roofline.h).
#pragma once

#include "hw/layer_ops.h"

#include <cstddef>
#include <string>
#include <vector>

namespace overlapsim::hw {

// Megatron-LM tensor parallelism (Shoeybi et al. 2019) over `size` GPUs, and with
// `sequence_parallel` Korthikanti et al. 2022's sequence parallelism of the parts tensor
// parallelism replicates. Megatron turns sequence parallelism off at size 1, and so do the op
// lists.
struct TensorParallel {
  int size = 1;
  bool sequence_parallel = false;
};

// Op lists of "embedding", one "block<i>" and "head" (final norm, LM head, fp32 cross-entropy) for
// a micro-batch of `micro_batch` sequences of `seq_len` tokens, as one rank of a tensor-parallel
// group of `tp.size` runs them (the whole layer at size 1):
// - block: q, k and v projections column-parallel (n_heads / size query heads a rank; key/value
//   heads n_kv_heads / size, and where n_kv_heads < size each rank holds one key/value head,
//   replicated over size / n_kv_heads ranks as Megatron-Core and vLLM do), attention over the
//   rank's heads, the output projection row-parallel (k = d_model / size), the MLP's up (and
//   gate) projections column-parallel (d_ff / size), down row-parallel. Every GEMM is listed at
//   its sharded shape, so that the roofline's tile and wave quantisation prices the smaller GEMMs.
//   Norms, residual adds and dropout run on the whole [s, b, h] on every rank; with sequence
//   parallelism on [s / size, b, h], and the column-parallel GEMMs' input is cast to bf16 once, on
//   the rank's slice, before it is all-gathered (kept for the backward as the slice, which the
//   backward gathers again, as Megatron's LinearWithGradAccumulationAndAsyncCommunication does).
// - embedding: the vocabulary-parallel table (vocab / size rows a rank), its out-of-range rows
//   zeroed ("vocab mask").
// - head: the vocabulary-parallel LM head (logits [b s, vocab / size] a rank) and cross-entropy.
// At size > 1 the vocabulary is padded to a multiple of 128 x size, as Megatron pads it
// (make-vocab-size-divisible-by 128); at size 1 it is used as given.
// Throws std::invalid_argument where n_heads, d_ff, or n_kv_heads (or size / n_kv_heads) do not
// divide by size, or size < 1.
LayerOps embedding_ops(const TransformerDims& dims, double micro_batch, double seq_len,
                       const TensorParallel& tp = {});
LayerOps block_ops(const TransformerDims& dims, double micro_batch, double seq_len,
                   const TensorParallel& tp = {});
LayerOps head_ops(const TransformerDims& dims, double micro_batch, double seq_len,
                  const TensorParallel& tp = {});

// The vocabulary a rank's embedding and LM head hold: vocab at size 1, else vocab padded to a
// multiple of 128 x size, divided by size.
double vocab_per_rank(const TransformerDims& dims, int tp_size);

// A collective over the tensor-parallel group. The names are the calibration's and the simulator's
// (sim/nccl_model.h's NcclCollective: all_reduce, reduce_scatter, all_gather), see to_string.
enum class TpCollective { all_reduce, reduce_scatter, all_gather };
const char* to_string(TpCollective kind); // "all_reduce", "reduce_scatter", "all_gather"

struct TpCommOp {
  TpCollective kind = TpCollective::all_reduce;
  // The whole array in nccl-tests' convention: an all-reduce's data, a reduce-scatter's input, an
  // all-gather's output. Activations in bf16 (2 bytes), as Megatron runs them, also where the op
  // lists keep an fp32 residual stream; the cross-entropy's reductions in fp32.
  double bytes = 0;
  // It runs after the first `position` ops of its list (LayerOps::forward or ::backward, in the
  // order they run), before the rest.
  std::size_t position = 0;
  std::string where; // what it does, e.g. "all-reduce after out proj"
  // The GEMM Megatron launches it beside (asynchronously, in the backward of a column-parallel
  // linear: the input's gather beside the dgrad, the input gradient's reduction beside the wgrad);
  // empty where it runs alone.
  std::string beside;
  // Whether the layer's next op waits for it. Megatron without tp_comm_overlap: every one; the
  // asynchronous ones too, once the GEMM beside them ends.
  bool critical_path = true;
};

// A tensor-parallel rank's collectives in one layer's forward and backward of one micro-batch, in
// the order they run (Megatron-LM; none at size 1):
// - block without sequence parallelism: forward an all-reduce after the out projection and one
//   after the down projection (g); backward an all-reduce of the input gradient of the MLP's and
//   of the attention's column-parallel projections (f, before the norms' backward); each of
//   b s h bf16 values.
// - block with sequence parallelism: forward an all-gather before the q/k/v and before the MLP's
//   column-parallel projections and a reduce-scatter after the out and down projections;
//   backward the conjugates (an all-gather of the gradient before the down and out projections'
//   backward, a reduce-scatter of the input gradients) and the two re-gathers of the saved input
//   slices: 4 all-gathers and 2 reduce-scatters, all of b s h.
// - embedding: forward an all-reduce of the vocabulary-parallel lookup (sequence parallelism with
//   rotary positions: a reduce-scatter; with learned positions Megatron all-reduces, adds them,
//   and takes the rank's slice); backward with sequence parallelism an all-gather of the gradient.
// - head: with sequence parallelism an all-gather of the final norm's output before the LM head
//   (backward: its re-gather and the input gradient's reduce-scatter), without it the input
//   gradient's all-reduce in backward; the cross-entropy's three all-reduces of b s fp32 values
//   in forward (Megatron's _VocabParallelCrossEntropy: the logits' max, the target's logit, the
//   sum of exponentials; its fused variant (cross_entropy_loss_fusion) joins the last two).
struct TensorParallelComm {
  std::vector<TpCommOp> forward, backward;
  double bytes() const; // forward and backward together
};
TensorParallelComm embedding_tp_comm(const TransformerDims& dims, double micro_batch,
                                     double seq_len, const TensorParallel& tp);
TensorParallelComm block_tp_comm(const TransformerDims& dims, double micro_batch, double seq_len,
                                 const TensorParallel& tp);
TensorParallelComm head_tp_comm(const TransformerDims& dims, double micro_batch, double seq_len,
                                const TensorParallel& tp);

// The norm (LayerNorm or RMSNorm, as `dims` says) over `elements` fp32 hidden values, forward and
// backward kernels and what it keeps: the blocks' and the final norm's.
LayerOps norm_ops(const TransformerDims& dims, double elements);

// Sets each layer of `model` (built by transformer_model) to its roofline times per sample on
// `gpu`, its activation bytes per sample to the op lists' saved tensors, and its quadratic share;
// with `tp`, those of one tensor-parallel rank (its sharded op lists; the collectives of
// *_tp_comm are not in the times). Parameters and FLOPs stay the whole layer's.
void apply_roofline(ModelSpec& model, const TransformerDims& dims, const GpuSpec& gpu,
                    double micro_batch, double seq_len, const TensorParallel& tp = {});

} // namespace overlapsim::hw
