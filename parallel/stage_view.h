// What one GPU of a 3D-parallel job runs (issue 65): its pipeline stage's layers at its tensor-
// parallel shard, each layer's tensor-parallel collectives priced once (comm/collective_price.h),
// and the messages between neighbouring stages. The simulator gives every worker its stage's
// view: algorithms see the stage's model through Worker::scenario() and their data-parallel group
// as the world (runtime/topology.h's view), so that no algorithm's program knows about TP or PP.
#pragma once

#include "parallel/layout.h"
#include "scenario/scenario.h"

#include <vector>

namespace overlapsim::parallel {

// One layer's tensor-parallel collectives per micro-batch (none without tensor parallelism): their
// time on the TP group's links, summed over the forward's and the backward's (Megatron without
// tp_comm_overlap: each one blocks the layer's next op), and their count and bytes (the arrays as
// nccl-tests counts them). With tp_comm_overlap (a block's, parallel/tp_comm_overlap.h) the times
// are what stays on the layer's critical path: the collectives the GEMMs did not hide and the
// GEMMs' slowdown beside them; `hidden_s` the collectives' time hidden, forward and backward.
// Under full recomputation the backward also runs the forward's collectives again.
struct LayerTensorComm {
  double forward_s = 0, backward_s = 0;
  double forward_bytes = 0, backward_bytes = 0;
  int forward_calls = 0, backward_calls = 0;
  double hidden_s = 0;
  bool overlapped = false;
};

// What parallelism.recompute runs again in a layer's backward (Korthikanti et al. 2022, Sec. 5),
// as shares of the layer's forward time (its roofline op list's, hw/layer_ops.h): full
// recomputation the whole forward (linear 1 - q, quadratic q, q the layer's seq_quadratic_share),
// selective the attention core only: the forward ops that grow with s^2 (QK^T, mask, softmax,
// dropout, AV; quadratic q, linear 0). `bytes`: what it rebuilds for one micro-batch, alive during
// the layer's backward (parallel/memory.h's recompute_bytes). Embedding and head: none (Megatron
// recomputes transformer layers only).
struct LayerRecompute {
  double linear_share = 0, quadratic_share = 0;
  double bytes = 0;
  bool any() const { return linear_share + quadratic_share > 0; }
};

struct StageView {
  int stage = 0;
  int stages = 1;
  // The scenario a worker of this stage sees: the stage's layers only, each with its parameters
  // per tensor-parallel rank (parallel/memory.h's layer_params_per_gpu) and a rank's kernel times
  // (hw::apply_roofline with the TP size); the rest as the job's. A transformer's activations per
  // sample are parallel/memory.h's (Korthikanti et al. Table 2, with SP and recomputation), so
  // that the simulated memory is the memory model's.
  scenario::Scenario scenario;
  std::vector<LayerTensorComm> tensor_comm; // per layer of `scenario`'s model
  std::vector<LayerRecompute> recompute;    // per layer of `scenario`'s model
  // The pipeline receive buffers a GPU of the stage holds (parallel/memory.h's p2p_buffers): one
  // activation from the previous stage, one gradient from the next.
  double p2p_buffer_bytes = 0;
  // The stage's model chunks as ranges of `scenario`'s layers, in chunk order: one without
  // interleaving, virtual_stages of them with it (chunk c is the model's c x stages + stage).
  std::vector<LayerRange> chunks;
  // One micro-batch's activation (and its gradient) between stages: b s h in the activation dtype,
  // / t with sequence parallelism (parallel/memory.h's p2p_message_bytes).
  double message_bytes = 0;

  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
};

// One view per pipeline stage of `s` placed by `layout`. Throws std::invalid_argument where the
// scenario asks for what the simulator does not run: tensor > 1 for a model that is not a
// transformer (no op lists to shard). A stage of several model chunks (interleaved 1F1B) sees
// their layers one after the other.
std::vector<StageView> stage_views(const scenario::Scenario& s, const ParallelLayout& layout);

} // namespace overlapsim::parallel
