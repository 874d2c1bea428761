// The work of a CDP simulation (issue 64.2): its settings but single-gpu cut the model into one
// stage per GPU of the world (algorithms/cdp.h), so their ops grow with the square of the GPUs and
// need a layer per GPU; none of them folds (docs/ARCHITECTURE.md, "Rank classes"). The
// single-gpu setting, the GPUs data-parallel replicas of one device's cycle, folds as DDP does.
#pragma once

#include "cli/work_budget.h"
#include "scenario/scenario.h"

#include <string>

namespace overlapsim::cli {

// Whether `spec` is CDP (cdp-v1, cdp-v2) with one stage per GPU of the world: every setting but
// single-gpu (multi-gpu, the default; zero; model-parallel).
bool cdp_stage_per_gpu(const scenario::AlgorithmSpec& spec);

// Counts a CDP simulation's ops into `w` (its gpus, world and steps set; other algorithms left
// as they are). One stage per GPU: per GPU and step a forward and a backward per stage and,
// cyclic, two laps of one message per stage (lap one's partial sums, lap two's complete ones);
// simultaneous, one all-reduce. single-gpu: grad_accum micro-batches through every stage, then
// one all-reduce of the whole gradient (no buckets).
void count_cdp_work(const scenario::Scenario& s, const scenario::AlgorithmSpec& spec,
                    SimulationWork& w);

// `spec` with setting: single-gpu (its label marked so).
scenario::AlgorithmSpec cdp_single_gpu(const scenario::AlgorithmSpec& spec);

// The most GPUs a one-stage-per-GPU CDP simulation of `s` runs on within `max_ops` ops: a layer
// per stage, and the ops that grow with the square of the GPUs.
int cdp_most_gpus(const scenario::Scenario& s, double max_ops);

} // namespace overlapsim::cli
