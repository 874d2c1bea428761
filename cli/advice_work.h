// Whether `overlapsim run` will also simulate memory advice (issue 64, item "done when": the work
// estimate within 2x of every row of bench/scale.py --issue-table). When no algorithm of a run
// fits the GPU, the run simulates zero1 and then fsdp to say which would (cli/run_command.cpp,
// fit_advice): on 1,024 H100s with jitter, a full simulation as long as DDP's own. The estimate
// cannot run the simulation that finds out; it counts the probe where DDP's model state and
// activations alone exceed the GPU's memory.
#pragma once

#include "scenario/scenario.h"

namespace overlapsim::cli {

// A lower bound of DDP's peak memory per GPU: parameters, gradients and DDP's bucket copy in the
// model's dtype, the optimizer's state (AdamW: an fp32 master copy and two moments under bf16 or
// fp16, 12 B a parameter; two moments, 8 B, in fp32; SGD with momentum 4 B, plain SGD none) and
// one micro-batch's activations (the layers' own bytes per sample), split over a model replica's
// tensor x pipeline GPUs.
double ddp_memory_lower_bound(const scenario::Scenario& s);

// Whether the run will simulate zero1 as memory advice: no algorithm of the scenario shards the
// model state (zero1, fsdp) and DDP's lower bound exceeds the GPU's available memory.
bool memory_advice_probe_runs(const scenario::Scenario& s);

} // namespace overlapsim::cli
