// Megatron's tp_comm_overlap (parallelism.tp_comm_overlap; issue 65, item 2): with sequence
// parallelism, TransformerEngine's userbuffers split each tensor-parallel all-gather and
// reduce-scatter of a transformer block into chunks and run them beside the GEMM that consumes or
// produces them. What it hides is the collective's time under the GEMM; what it costs is the
// GEMM's slowdown on the SMs the communication kernels hold, and the one chunk of the pipeline
// that cannot overlap. The constants are TransformerEngine's defaults (transformer_engine/pytorch/
// module/base.py, initialize_ub's get_default_config), not fitted.
#pragma once

#include "hw/layer_ops.h"
#include "hw/transformer_ops.h"

#include <vector>

namespace overlapsim::parallel {

// How TransformerEngine overlaps a collective with its GEMM (initialize_ub's methods):
// - ring_exchange: an all-gather of the input (qkv_fprop, fc1_fprop) or of the output gradient
//   (proj_dgrad, fc2_dgrad) as tp point-to-point steps on the copy engines, each beside the GEMM
//   of the chunk already there: 1 SM, no SM margin, tp splits.
// - pipeline: a row-parallel output's reduce-scatter (proj_fprop, fc2_fprop) chunk by chunk
//   behind the GEMM's chunks: 16 SMs taken from the GEMM (set_sm_margin), 4 splits.
// - bulk: the backward's re-gather of the saved input beside the dgrad and the input gradient's
//   reduce-scatter beside the wgrad (qkv_/fc1_dgrad, qkv_/fc1_wgrad): the whole collective beside
//   the whole GEMM on 16 SMs, no chunks.
enum class OverlapMethod { ring_exchange, pipeline, bulk };

struct OverlapConstants {
  int comm_sms = 1;       // SMs the communication kernels hold
  bool sm_margin = false; // the GEMM runs on the other SMs only
  int splits = 1;         // chunks (0: none, bulk)
};
OverlapConstants overlap_constants(OverlapMethod method, int tensor);

// Seconds a collective of `comm_s` and its GEMM of `gemm_s` take together beyond the GEMM alone,
// on a GPU of `sms` SMs (0: unknown, no slowdown): with sigma = sms / (sms - comm_sms) where the
// GEMM gives up SMs (1 otherwise) and n splits,
//   max(comm, sigma gemm) + min(comm, sigma gemm) / n - gemm
// (the collective and the slowed GEMM in parallel, plus the pipeline's first or last chunk that
// runs alone; bulk: no such chunk). A collective with no GEMM beside it (gemm_s 0) costs itself.
double overlap_extra_seconds(double comm_s, double gemm_s, OverlapMethod method, int tensor,
                             int sms);

// One layer's overlapped collectives in one direction: what remains on the layer's critical path
// (the sum of overlap_extra_seconds) and the collectives' own time the GEMMs hid.
struct OverlappedComm {
  double exposed_s = 0;
  double hidden_s = 0;
};
// The collectives `comm` (with their priced seconds, in order) of a block's op list `ops` on
// `gpu` at tensor size `tensor`: each paired with the GEMM TransformerEngine runs it beside (an
// all-gather without a `beside`: ring exchange with the GEMMs right after it, in the backward the
// first dgrad after it; a forward reduce-scatter: pipeline with the GEMM right before it; one with
// a `beside`: bulk with that GEMM), every GEMM paired at most once.
OverlappedComm overlap_block_comm(const std::vector<hw::KernelOp>& ops,
                                  const std::vector<hw::TpCommOp>& comm,
                                  const std::vector<double>& comm_seconds, bool backward,
                                  const hw::GpuSpec& gpu, int tensor);

} // namespace overlapsim::parallel
