// Compute on nodes of another GPU type (cluster.node_types, issue 64.2): each layer's time per
// sample on every node type's GPU, from the same cost model the scenario's own GPU's times came
// from: a transformer's roofline (hw/transformer_ops.h) redone at the type's GPU, FLOPs at its
// sustained rate, and a time measured (model.profile, a calibration) or modelled otherwise (a
// convolution's roofline) on `cluster.gpu` scaled by the two GPUs' sustained rates. Under tensor
// or pipeline parallelism the same per stage (parallel/stage_view.h's views built for the type's
// GPU: its roofline at the TP shard, its TP collectives' overlap with its own GEMMs).
#pragma once

#include "parallel/layout.h"
#include "parallel/stage_view.h"
#include "scenario/scenario.h"

#include <vector>

namespace overlapsim::sim {

struct NodeTypeLayerTimes {
  std::vector<double> forward, backward; // seconds per sample, by layer
};

// By index into s.cluster.node_types.
std::vector<NodeTypeLayerTimes> node_type_layer_times(const scenario::Scenario& s);

// What a GPU of one node type runs on one pipeline stage: its layer times (by layer of the stage's
// view) and its view (TP collectives, recomputation; its scenario's cluster.gpu the type's GPU).
struct NodeTypeStage {
  NodeTypeLayerTimes times;
  parallel::StageView view;
};

// [type][stage], by index into s.cluster.node_types and the stages of `layout`.
std::vector<std::vector<NodeTypeStage>> node_type_stages(const scenario::Scenario& s,
                                                         const parallel::ParallelLayout& layout);

} // namespace overlapsim::sim
