#include "hw/vit_ops.h"

#include "hw/conv_ops.h"
#include "hw/transformer_ops.h"

namespace overlapsim::hw {

LayerOps vit_embedding_ops(const VitDims& v, double n) {
  const double d = v.encoder.d_model, grid = v.image / v.patch, s = v.tokens();
  const double pixels = n * 3.0 * v.image * v.image, patches = n * (s - 1) * d, e = n * s * d;
  ConvOpList l(n);
  l.memory("input cast", 6 * pixels, Access::streaming, 0, Access::streaming);
  l.save(4 * pixels + 2 * pixels); // the fp32 batch (alive for the step) and the conv's input
  l.conv("patch conv", 3, d, v.patch, v.image, grid, true);
  // The conv's bias added to its bf16 output; backward: the bias gradient, a reduction.
  l.memory("patch conv bias", 4 * patches, Access::streaming, 2 * patches, Access::irregular);
  // (n, d, g, g) -> (n, g^2, d) is a view; torch.cat with the fp32 class token promotes and
  // copies it strided (2 bytes read, 4 written); backward: the slice's gradient cast back to bf16
  // and made contiguous in NCHW for the conv's wgrad.
  l.memory("flatten and cat class token", 2 * patches + 4 * e, Access::irregular, 6 * patches,
           Access::irregular);
  // + the fp32 positions (broadcast over the batch); backward: their gradient summed over it.
  l.memory("add positions", 8 * e, Access::streaming, 4 * e, Access::irregular);
  return l.take();
}

LayerOps vit_head_ops(const VitDims& v, double n) {
  const double d = v.encoder.d_model, e = n * v.tokens() * d;
  ConvOpList l(n);
  // The final LayerNorm as the blocks' (hw/transformer_ops.cpp): one fp32 pass, its input kept.
  const auto norm = norm_ops(v.encoder, e);
  for (const auto& op : norm.forward)
    l.memory(op.name, op.bytes, op.access, 0, op.access);
  l.save(norm.saved_bytes);
  // x[:, 0] is a view; its gradient is scattered into a zeroed fp32 map of every token.
  l.memory("class token", 0, Access::streaming, 4 * e, Access::streaming);
  l.memory("cast head input", 6 * n * d, Access::streaming, 0, Access::streaming);
  l.save(2 * n * d);
  l.linear("head", n, d, v.classes);
  l.cross_entropy(v.classes);
  auto ops = l.take();
  // The norm's backward runs last (it is the head's first op).
  ops.backward.insert(ops.backward.end(), norm.backward.begin(), norm.backward.end());
  return ops;
}

void apply_vit_roofline(ModelSpec& model, const VitDims& v, const GpuSpec& gpu,
                        double micro_batch) {
  const auto block = block_ops(v.encoder, micro_batch, v.tokens());
  for (auto& layer : model.layers) {
    if (layer.name == "embedding")
      set_roofline_costs(layer, vit_embedding_ops(v, micro_batch), gpu, micro_batch);
    else if (layer.name == "head")
      set_roofline_costs(layer, vit_head_ops(v, micro_batch), gpu, micro_batch);
    else
      set_roofline_costs(layer, block, gpu, micro_batch);
  }
}

} // namespace overlapsim::hw
