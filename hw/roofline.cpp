#include "hw/roofline.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::hw {

// Sources for the constants in roofline.h:
// - kMaxGemmEfficiency 0.80: large bf16 GEMMs in cuBLAS reach 75-80% of the dense peak on A100 and
//   H100 (NVIDIA's cuBLAS/Transformer Engine performance notes; measured here on an H100 80GB:
//   24576 x 768 x 3072 at 78%, 24576 x 3072 x 768 at 69%).
// - kGemmK0 128: one 128-deep K slice per pipeline stage; with k = 64 (attention heads) a kernel
//   spends as long filling its pipeline as computing.
// - kMisalignedGemmEfficiency 0.12: cuBLAS's align1 kernels for operands whose leading dimension is
//   not a multiple of 8 16-bit elements (a vocabulary of 50,257): 10-15% of peak on the H100.
// - kStreamingBandwidthShare 0.90: BabelStream-class copy/triad kernels reach ~90% of HBM peak
//   (3.0 of 3.35 TB/s on H100 SXM, 1.8 of 2.0 TB/s on A100).
// - kIrregularBandwidthShare 0.55: row reductions, broadcasts and strided copies in PyTorch's
//   generic element-wise and norm kernels reach 40-65% of the peak.

KernelOp gemm_op(std::string name, GemmShape shape) {
  KernelOp op;
  op.name = std::move(name);
  op.gemm = shape;
  op.flops = shape.flops();
  op.bytes = 2 * shape.batch * (shape.m * shape.k + shape.k * shape.n + shape.m * shape.n);
  return op;
}

KernelOp memory_op(std::string name, double bytes, Access access) {
  KernelOp op;
  op.name = std::move(name);
  op.bytes = bytes;
  op.access = access;
  return op;
}

namespace {
bool aligned(double dim) {
  return std::fmod(dim, 8.0) == 0;
}

double unsplit_efficiency(const GpuSpec& gpu, const GemmShape& s) {
  double e = kMaxGemmEfficiency * s.k / (s.k + kGemmK0);
  if (gpu.sms > 0) {
    // A last partial wave of 128 x 128 output tiles leaves SMs idle.
    const double tiles = std::ceil(s.m / 128) * std::ceil(s.n / 128) * s.batch;
    e *= tiles / (std::ceil(tiles / gpu.sms) * gpu.sms);
  }
  return e;
}
} // namespace

double gemm_efficiency(const GpuSpec& gpu, const GemmShape& s) {
  if (!aligned(s.m) || !aligned(s.n) || !aligned(s.k))
    return kMisalignedGemmEfficiency;
  double e = unsplit_efficiency(gpu, s);
  // Split-K: `splits` slices of k / splits each, as many more tiles; the partial sums' traffic
  // is the caller's (it is small against the k-long operands that make splitting worth it).
  for (double splits = 2; s.split_k && splits <= std::max(1, gpu.sms); splits *= 2) {
    if (!aligned(s.k / splits))
      break;
    e = std::max(e, unsplit_efficiency(gpu, {s.m, s.n, s.k / splits, s.batch * splits}));
  }
  return e;
}

double kernel_time_s(const GpuSpec& gpu, const KernelOp& op) {
  double compute = 0;
  if (op.flops > 0) {
    const double e =
        op.tensor_efficiency > 0 ? op.tensor_efficiency : gemm_efficiency(gpu, op.gemm);
    compute = op.flops / (gpu.peak_flops_bf16 * e);
  }
  const double share =
      op.access == Access::streaming ? kStreamingBandwidthShare : kIrregularBandwidthShare;
  const double memory = op.bytes / (gpu.hbm_bandwidth_Bps * share);
  return std::max(compute, memory);
}

} // namespace overlapsim::hw
