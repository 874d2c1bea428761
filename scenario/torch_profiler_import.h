// Calibration from a user's own PyTorch profiler trace: `overlapsim profile SCENARIO
// --import-torch-profiler TRACE`. A Kineto Chrome trace (plain JSON or gzip, recorded with
// `with_modules=True` and a schedule, so that `ProfilerStep#N` ranges exist) holds every GPU
// kernel with the correlation id of the CPU call that launched it, the `nn.Module` ranges of the
// forward pass, and sequence numbers that tie each autograd backward op to its forward op.
//
// Attribution: a kernel belongs to the module range around its launch (forward), or to the module
// range around the forward op whose sequence number its backward op carries (backward); kernels
// under `Optimizer.step` belong to the optimizer. A kernel with neither (autograd bookkeeping such
// as gradient accumulation) follows the kernel launched before it on the same thread.
//
// Layers: the scenario's model must be a first layer, B repeated blocks and a last layer (the
// transformer presets: embedding, block0..block{B-1}, head). The module class with exactly B
// outermost instances is the block; the k-th instance (in forward order) is block k, kernels
// before the first block go to the first layer, the rest to the last. Times are GPU kernel time
// (kernels, memsets, copies), averaged over the trace's steps and divided by the scenario's
// micro-batch; with `[memory]` events, a layer's activations are the bytes its forward leaves
// allocated.
#pragma once

#include "scenario/calibration.h"
#include "scenario/scenario.h"

#include <string>

namespace overlapsim::scenario {

// Throws std::runtime_error naming the file and what is wrong (not a Kineto trace, no profiler
// steps, a block class that cannot be told apart: the candidates are named).
Calibration import_torch_profiler(const std::string& trace_path, const Scenario& scenario);

} // namespace overlapsim::scenario
