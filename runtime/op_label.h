// The trace label of each op a Worker runs: its category and name, one place for both runtimes
// (sim/sim_worker.cpp, validate/real_worker.cpp), so that a prediction and a measurement name an
// op alike and validate joins them by name (trace/op_costs.h), and the profiler finds the ops it
// timed (validate/profiler.cpp).
#pragma once

#include "hw/model.h"
#include "runtime/runtime.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace overlapsim {

struct OpLabel {
  OpCategory category = OpCategory::forward;
  std::string name;
};

enum class LayerPass : std::uint8_t { forward, recompute, backward };
// "fwd l0", "bwd l0..l3", "recompute fwd l2" (activation checkpointing's re-run forward, category
// forward).
OpLabel op_label(const hw::ModelSpec& model, LayerRange layers, LayerPass pass);
// "optimizer step", or "optimizer estimate" for a step that does not commit (ACCO).
OpLabel op_label(const OptimizerStep& op);
// "outer step" (DiLoCo's outer Nesterov step; category optimizer).
OpLabel op_label(const OuterStep& op);

// Data movement, category copy: "copy", "accumulate", "fill", "reload master".
enum class MemoryOp : std::uint8_t { copy, accumulate, fill, reload_master };
OpLabel op_label(MemoryOp op);

// A pipeline stage's receive of the previous stage's activation or the next stage's gradient:
// "recv activation 0>1 micro-batch 3", "recv gradient 1>0 micro-batch 3" (sim/sim_worker.cpp).
// Compute idle while one is in flight is the pipeline bubble (trace/metrics.h, issue 65.3).
inline constexpr std::string_view kRecvActivationPrefix = "recv activation ";
inline constexpr std::string_view kRecvGradientPrefix = "recv gradient ";
inline bool is_pipeline_receive(std::string_view name) {
  return name.starts_with(kRecvActivationPrefix) || name.starts_with(kRecvGradientPrefix);
}

// The collective's own name, or its op's ("all-reduce") when it has none; category comm.
OpLabel op_label(const CollectiveCall& call);

// A replicator phase as one op: "demo encode piece 0" (category compress), "demo decode + update
// piece 0" (category optimizer). The simulator names a phase so where the profile priced it as a
// whole (runtime/replicator_use.h); otherwise it runs the phase's kernels under their own names.
OpLabel op_label(const ReplicatorPhase& op);

} // namespace overlapsim
