// The time one GPU kernel takes, from what it computes and what it moves: a roofline with
// shape-dependent tensor-core efficiency for matrix multiplies and an achievable share of HBM
// bandwidth for memory-bound ops. The constants are hardware facts (sources in roofline.cpp), not
// fitted per model.
#pragma once

#include "hw/presets.h"

#include <string>

namespace overlapsim::hw {

// How a memory-bound kernel walks its tensors. Contiguous, vectorised element-wise ops stream at
// near the HBM peak; reductions along rows (norms, softmax over a large row), broadcasts and
// strided permute-copies reach about half of it.
enum class Access { streaming, irregular };

// C[batch][m][n] = A[batch][m][k] x B[batch][k][n] in 16-bit with fp32 accumulate.
struct GemmShape {
  double m = 0, n = 0, k = 0, batch = 1;
  // The library may split k over several thread blocks and add their partial sums (cuDNN's and
  // cuBLAS's split-K kernels for weight gradients: a small m x n output, a k of every pixel of
  // the batch); the GEMM then runs at the best of 1, 2, 4, ... splits.
  bool split_k = false;
  double flops() const { return 2 * m * n * k * batch; }
};

struct KernelOp {
  std::string name;
  double flops = 0; // tensor-core FLOPs (GEMMs and fused attention); 0 for the rest
  double bytes = 0; // HBM bytes read plus written
  Access access = Access::streaming;
  GemmShape gemm;               // set for matrix multiplies (flops = gemm.flops())
  double tensor_efficiency = 0; // fused kernels (flash attention): their achieved share of peak
};

// A GEMM on 16-bit operands: 2 m n k flops, reads A and B, writes C.
KernelOp gemm_op(std::string name, GemmShape shape);
// A memory-bound op moving `bytes` through HBM.
KernelOp memory_op(std::string name, double bytes, Access access = Access::streaming);

// The share of the dense 16-bit peak a GEMM of this shape reaches (cuBLAS on the GPU):
// kMaxGemmEfficiency x k / (k + kGemmK0) (short inner dimensions stall on loads), times the
// wave-quantisation loss of 128 x 128 output tiles over the GPU's SMs (with split_k, of the
// tiles times the splits, k divided among them); kMisalignedGemmEfficiency
// when m, n or k is not a multiple of 8 (16-bit operands then miss the 16-byte alignment the
// tensor-core kernels need, and cuBLAS falls back to a one-element-per-load kernel).
double gemm_efficiency(const GpuSpec& gpu, const GemmShape& shape);

// Seconds: max(flops / (peak x efficiency), bytes / (HBM bandwidth x access share)).
double kernel_time_s(const GpuSpec& gpu, const KernelOp& op);

// The constants (documented with their sources in docs/MODEL.md).
inline constexpr double kMaxGemmEfficiency = 0.80;
inline constexpr double kGemmK0 = 128;
inline constexpr double kMisalignedGemmEfficiency = 0.12;
inline constexpr double kStreamingBandwidthShare = 0.90;
inline constexpr double kIrregularBandwidthShare = 0.55;

} // namespace overlapsim::hw
