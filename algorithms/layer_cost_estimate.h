// Per-layer backward and all-reduce times as a scenario suggests them, for the schedulers that
// plan before the run (DreamDDP's Algorithm 2, ASC-WFBP's merging): measured backward times when
// the model has them, else FLOPs at the GPU's efficiency; a layer table's all-reduce times
// (model.profile: *.tsv), else the price of an all-reduce of the layer's parameters over every GPU
// (comm/collective_price.h, scenario/collective_shape.h: the model the simulator runs, NCCL's
// under cluster.collectives: nccl).
#pragma once

#include "algorithms/partial_sync_schedule.h"
#include "scenario/scenario.h"

namespace overlapsim {

LayerCosts estimate_layer_costs(const scenario::Scenario& s);

// The startup part of every all-reduce in estimate_layer_costs: the price of an all-reduce of no
// bytes; 0 with a layer table, whose times hold their own startup.
double all_reduce_startup_s(const scenario::Scenario& s);

} // namespace overlapsim
