// The model-state buffers every data-parallel algorithm keeps (parameters, gradients, optimizer
// state) and the gradient buckets that DDP-style algorithms reduce during the backward pass.
#pragma once

#include "runtime/runtime.h"

#include <cstdint>
#include <vector>

namespace overlapsim {

// Optimizer state bytes per parameter, K in the ZeRO and ACCO papers: an fp32 master copy when the
// model is trained in 16-bit (4), plus the moments (AdamW: m and v, 8; SGD with momentum: 4). AdamW
// in bf16 gives K = 12 (ACCO Table 1).
double optimizer_state_bytes_per_param(scenario::Optimizer optimizer, scenario::Dtype dtype);

// Bytes an optimizer step reads and writes per parameter, which sets its duration on the HBM: the
// gradient is read, the state read and written, and the 16-bit parameter written (read and written
// in place when there is no master copy).
double optimizer_bytes_touched_per_param(scenario::Optimizer optimizer, scenario::Dtype dtype);

// Parameter elements per layer, rounded to whole elements, and their offsets in the flat buffers.
struct ParamLayout {
  std::vector<std::int64_t> offset; // per layer, plus one past the end
  std::int64_t total() const { return offset.back(); }
  Slice layer(BufferId buffer, int l) const;
  Slice layers(BufferId buffer, LayerRange r) const;
};
ParamLayout param_layout(const hw::ModelSpec& model);

// The contiguous [offset, offset + count) shard of `total` elements owned by `index` of `parts`
// (the first total % parts shards get one more element).
Slice shard(BufferId buffer, std::int64_t total, int index, int parts);

struct ModelState {
  ParamLayout layout;
  BufferId params = -1;
  BufferId grads = -1;
  BufferId optimizer_state = -1; // sharded when the algorithm shards it
};

// Declares params and grads (dtype) and optimizer state (K bytes/param) for `state_elements`
// parameters (all of them for DDP, one shard for ZeRO-1 and the ACCO family).
ModelState declare_model_state(Worker& worker, std::int64_t state_elements);
// The same for a model an algorithm keeps in `dtype` instead of the scenario's (PyTorch DDP over an
// fp32 model under autocast: fp32 parameters and gradients, no separate master copy).
ModelState declare_model_state(Worker& worker, std::int64_t state_elements, scenario::Dtype dtype);

// A gradient bucket of PyTorch DDP: filled in reverse layer order, reduced as soon as the backward
// pass has produced its last gradient (after layer `ready_after_layer`, counting layers input to
// output, so the bucket holding the output layer is ready first).
struct Bucket {
  Slice grads;
  int ready_after_layer = 0;
};

// Buckets of at most cap_bytes built from the output layer backwards; a layer larger than the cap
// is split into equal parts, all ready when that layer's backward finishes (our layers are coarser
// than PyTorch's parameter tensors).
std::vector<Bucket> make_buckets(const ParamLayout& layout, BufferId grads, double element_bytes,
                                 double cap_bytes);

// Runs the backward pass of layers [0, layers) from the output down, cut at bucket boundaries, and
// notifies `signal` with each bucket's index the moment its gradients exist (DDP, ZeRO-1). With
// `copy_to` (same count as `buckets`), each bucket's gradients are first copied into copy_to[b]
// (PyTorch DDP's bucket buffers when gradient_as_bucket_view is false).
void backward_releasing_buckets(Worker& worker, const std::vector<Bucket>& buckets, MicroBatch mb,
                                int layers, BufferId params, BufferId grads, int signal,
                                const std::vector<Bucket>* copy_to = nullptr);

// The communication stream's side: reduces each bucket (all-reduce, or reduce-scatter into
// `shards[b]`) in the order `signal` hands them over, one after the other as on one NCCL stream.
// `average` divides each all-reduce by the group size (DDP reducing every micro-batch).
void reduce_buckets_as_released(Worker& worker, const std::vector<Bucket>& buckets, CollectiveOp op,
                                const std::vector<Slice>& shards, int step, int signal,
                                bool average = false);

} // namespace overlapsim
