// The kernels of a vision transformer's training micro-batch (torchvision's VisionTransformer
// under bf16 autocast): the patch-embedding conv and the classifier head around the transformer
// blocks of hw/transformer_ops.h (non-causal, 197 tokens for ViT-B/16).
#pragma once

#include "hw/layer_ops.h"

namespace overlapsim::hw {

// embedding: the fp32 images cast to bf16, the patch conv (cuDNN, NCHW; no dgrad: the images need
// no gradient) with its bias, the patches flattened and concatenated after the class token
// (type promotion to the fp32 token: the residual stream is fp32 from here), the fp32 positions
// added.
LayerOps vit_embedding_ops(const VitDims& dims, double micro_batch);
// head: the final LayerNorm over every token, the class token's bf16 cast, the linear classifier
// and the fp32 cross-entropy.
LayerOps vit_head_ops(const VitDims& dims, double micro_batch);

// Sets each layer of `model` (built by vit_model(dims)) to its roofline times per sample on `gpu`
// and its activation bytes per sample to what autograd keeps.
void apply_vit_roofline(ModelSpec& model, const VitDims& dims, const GpuSpec& gpu,
                        double micro_batch);

} // namespace overlapsim::hw
