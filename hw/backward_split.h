// A layer's backward split into its input gradient and its weight gradients, the two passes
// ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024, Sec. 2) schedules apart: B,
// which the previous pipeline stage waits for, and W, which no other stage needs.
#pragma once

#include "hw/layer_ops.h"
#include "hw/presets.h"

namespace overlapsim::hw {

// Whether a backward op computes a weight gradient (W) rather than the input gradient (B): a
// projection's dW = X^T . dY and its accumulation (transformer_ops.cpp's OpList::linear), the
// embedding table's gradient (zeroed, then its rows scattered into it).
bool is_weight_gradient(const KernelOp& op);

// The share of `ops`' backward roofline time (hw/roofline.h) on `gpu` that is weight gradients; 0
// for a layer without backward ops.
double weight_gradient_share(const LayerOps& ops, const GpuSpec& gpu);

// The share for a layer without an op list: its GEMMs' input and weight gradients take the same
// FLOPs (Qi et al. take T_B = T_W the same way).
inline constexpr double kDefaultWeightGradientShare = 0.5;

} // namespace overlapsim::hw
