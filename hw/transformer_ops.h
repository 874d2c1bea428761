// The kernels a decoder-only transformer's layers run in one training micro-batch, as PyTorch
// eager runs them under bf16 autocast (fp32 master weights and residual stream, 16-bit GEMMs), and
// the time and activation memory that follow from them on a GPU (hw/roofline.h).
#pragma once

#include "hw/layer_ops.h"

namespace overlapsim::hw {

// Op lists of "embedding", one "block<i>" and "head" (final norm, LM head, fp32 cross-entropy) for
// a micro-batch of `micro_batch` sequences of `seq_len` tokens.
LayerOps embedding_ops(const TransformerDims& dims, double micro_batch, double seq_len);
LayerOps block_ops(const TransformerDims& dims, double micro_batch, double seq_len);
LayerOps head_ops(const TransformerDims& dims, double micro_batch, double seq_len);

// The norm (LayerNorm or RMSNorm, as `dims` says) over `elements` fp32 hidden values, forward and
// backward kernels and what it keeps: the blocks' and the final norm's.
LayerOps norm_ops(const TransformerDims& dims, double elements);

// Sets each layer of `model` (built by transformer_model) to its roofline times per sample on
// `gpu`, its activation bytes per sample to the op lists' saved tensors, and its quadratic share.
void apply_roofline(ModelSpec& model, const TransformerDims& dims, const GpuSpec& gpu,
                    double micro_batch, double seq_len);

} // namespace overlapsim::hw
