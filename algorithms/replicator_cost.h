// What a replicator phase (runtime.h, ReplicatorPhase) costs a GPU: the kernels it runs, each
// memory-bound (the roofline of hw/roofline.h prices them by the HBM bytes they move). The
// chunked DCT is a batched chunk x chunk matrix multiply, 4 x chunk FLOPs per element for the 2-D
// transform: at chunk 64, 256 FLOPs per 8 bytes moved, below every GPU's fp32/tf32 ridge point
// (A100: 156 TFLOP/s / 1.6 TB/s ~ 100 FLOP/B) for the default chunk, so it is priced by its bytes
// too. Top-k, gathers and scatters index irregularly (hw::Access::irregular).
#pragma once

#include "hw/roofline.h"
#include "runtime/runtime.h"

#include <vector>

namespace overlapsim {

// The kernels of one phase on its piece; `param_bytes`: the model's dtype (the gradient and the
// parameters' working copy), the momentum and master copy being fp32.
std::vector<hw::KernelOp> replicator_kernels(const ReplicatorPhase& op, double param_bytes);

} // namespace overlapsim
