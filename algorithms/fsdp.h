// FSDP (Zhao et al. 2023; ZeRO-3, Rajbhandari et al. 2020): parameters, gradients and optimizer
// state sharded over the sharding group. The model is cut into wrap units of consecutive layers;
// each unit's parameters are all-gathered before its forward and again before its backward
// (reshard_after_forward), its gradients reduce-scattered after its backward, and every rank steps
// the optimizer on its shard. The communication stream prefetches the next unit's all-gather while
// the current unit computes, with two unsharded parameter buffers (PyTorch's limit_all_gathers).
//
// Options:
//   wrap: 1 (layers per unit, default: one layer per unit, like wrapping every transformer block)
//         or a size (e.g. 100MB: consecutive layers join a unit until it holds that many bytes)
//   sharding: full | hybrid (hybrid = HSDP: shard inside a node, replicate across nodes with an
//             all-reduce of the gradient shards between the GPUs holding the same shard)
//   reshard_after_forward: true | false (false: a unit stays unsharded from its forward to its
//             backward, so the backward needs no all-gather, at the memory of the full parameters)
//   sync_every_micro_batch: true | false (true: PyTorch FSDP outside no_sync(), e.g. OLMo's
//             trainer: every micro-batch's backward reduce-scatters (and, hybrid, all-reduces)
//             each unit's gradients, and the backward ends when they are done)
//   reduce_dtype: fp32 | bf16 | fp16 (default: the model's; FSDP MixedPrecision's reduce_dtype:
//             gradients are cast to it before they are reduced and kept in it)
//
// Memory per GPU: (2 + 2 + K) x params / S (S = world, or GPUs per node when hybrid) plus the
// unsharded working set: two parameter buffers of the largest unit (the one computing, the one
// prefetched) and its unsharded gradients, (2 x 2 + 2) x largest unit. Without
// reshard_after_forward all unsharded parameters stay resident (2 x params); with grad_accum > 1
// the gradients of the no_sync micro-batches are kept unsharded (2 x params), unless
// sync_every_micro_batch reduces and frees them after every micro-batch.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"
#include "algorithms/model_state.h"
#include "algorithms/replicator.h"

#include <optional>

namespace overlapsim {

std::unique_ptr<Algorithm> make_fsdp(const scenario::AlgorithmSpec& spec);

struct FsdpOptions {
  int layers_per_unit = 1;
  double unit_bytes = 0; // > 0: wrap by bytes instead
  bool hybrid = false;
  bool reshard_after_forward = true;
  bool sync_every_micro_batch = false;
  std::optional<scenario::Dtype> reduce_dtype; // unset: the model's dtype
  // Set: FlexDeMo (flexdemo.h). Hybrid sharding whose replicas exchange what the replicator
  // selects from a decoupled momentum on the shard, instead of all-reducing the gradient shards,
  // and step DeMo-SGD instead of the scenario's optimizer.
  std::optional<ReplicatorConfig> replicator;
};

// Reads wrap and reshard_after_forward.
void read_wrap_options(const scenario::AlgorithmSpec& spec, const AlgorithmOptions& opts,
                       FsdpOptions& o);

std::unique_ptr<WorkerProgram> make_fsdp_program(Worker& w, const FsdpOptions& o);

// Wrap units as layer ranges: `layers_per_unit` consecutive layers each, or (when unit_bytes > 0)
// consecutive layers until a unit holds at least unit_bytes of parameters.
std::vector<LayerRange> wrap_units(const ParamLayout& layout, int layers_per_unit,
                                   double unit_bytes, double element_bytes);

const AlgorithmDescriptor& fsdp_descriptor();

} // namespace overlapsim
