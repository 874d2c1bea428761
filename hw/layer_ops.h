// One layer's training micro-batch as the list of GPU kernels it runs (forward and backward) and
// the tensors autograd keeps between them, and how such a list prices the layer on a GPU. The
// transformer (hw/transformer_ops.h), convolutional (hw/conv_ops.h) and vision-transformer
// (hw/vit_ops.h) op lists all produce it.
#pragma once

#include "hw/model.h"
#include "hw/roofline.h"

#include <vector>

namespace overlapsim::hw {

struct LayerOps {
  std::vector<KernelOp> forward, backward;
  double saved_bytes = 0; // tensors the forward keeps for the backward
  // Forward ops whose size grows with seq_len squared (eager attention's scores, fused attention).
  std::vector<bool> quadratic;
};

// Sets `layer`'s modelled forward and backward times per sample to the sum of its kernels'
// roofline times on `gpu` (hw/roofline.h) over `micro_batch`, its activation bytes per sample to
// the saved tensors, and its quadratic share to that of the forward's time.
void set_roofline_costs(LayerSpec& layer, const LayerOps& ops, const GpuSpec& gpu,
                        double micro_batch);

} // namespace overlapsim::hw
