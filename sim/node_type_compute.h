// Compute on nodes of another GPU type (cluster.node_types, issue 64.2): each layer's time per
// sample on every node type's GPU, from the same cost model the scenario's own GPU's times came
// from: a transformer's roofline (hw/transformer_ops.h) redone at the type's GPU, FLOPs at its
// sustained rate, and a time measured (model.profile, a calibration) or modelled otherwise (a
// convolution's roofline) on `cluster.gpu` scaled by the two GPUs' sustained rates.
#pragma once

#include "scenario/scenario.h"

#include <vector>

namespace overlapsim::sim {

struct NodeTypeLayerTimes {
  std::vector<double> forward, backward; // seconds per sample, by layer
};

// By index into s.cluster.node_types.
std::vector<NodeTypeLayerTimes> node_type_layer_times(const scenario::Scenario& s);

} // namespace overlapsim::sim
