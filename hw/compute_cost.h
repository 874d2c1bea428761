// What one layer's forward or backward costs on a GPU, in one place for everything that prices
// compute before or during a run: the simulator (sim/sim_worker.cpp), DreamDDP's and ASC-WFBP's
// planners (algorithms/layer_cost_estimate.cpp). The order of evidence: a measured time (a
// profile), else the per-kernel roofline's, else the layer's FLOPs at the GPU's efficiency and the
// peak of the model's precision (issue 28.3: the simulator took the bf16 peak for every model and
// the planner the fp32 one for fp32 models).
#pragma once

#include "hw/model.h"
#include "hw/presets.h"

namespace overlapsim::hw {

// FLOP/s the GPU sustains on the model's matrices: the precision's peak x efficiency (fp32 uses
// the fp32/tf32 peak where the preset gives one).
double sustained_flops(const GpuSpec& gpu, bool fp32);

// Seconds of one sample through `layer`, forward or backward, at the full sequence length.
double layer_seconds_per_sample(const LayerSpec& layer, const GpuSpec& gpu, bool fp32,
                                bool backward);

} // namespace overlapsim::hw
