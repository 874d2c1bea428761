// CDP with ZeRO-DP (CDP paper Sec. 4, Fig. 2(d), Table 1): the model states of a stage
// (parameters, gradients, optimizer state) live on one GPU at a time and go point to point to the
// GPU that computes that stage next, instead of ZeRO's broadcast to every GPU. Internal to cdp.cpp.
#pragma once

#include "algorithms/algorithm.h"

#include <memory>

namespace overlapsim {

// cyclic: the CDP schedule (CDP-v2's update: a stage is updated by the worker that ran the last
// micro-batch's backward of it). Otherwise the ZeRO-DP counterpart: all micro-batches together,
// each stage's parameters all-gathered before its forward and backward, its gradients
// reduce-scattered after its backward, the optimizer on every GPU's 1/N shard.
std::unique_ptr<WorkerProgram> make_cdp_zero_program(Worker& worker, bool cyclic);

} // namespace overlapsim
