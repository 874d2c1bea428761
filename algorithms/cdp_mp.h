// CDP with model parallelism (CDP paper Sec. 4, Fig. 2(c), Table 1): N stages, N micro-batches.
// DP + MP gives every micro-batch its own N GPUs (N^2 in all); CDP staggers the micro-batches so
// that stage j (0-based) needs only N - j GPUs, the "pyramid" of N(N+1)/2: micro-batch m (counted
// across steps) runs stage j on replica m mod (N - j), which has just released the activations of
// micro-batch m - (N - j). Activations go forward and their gradients backward between the GPUs of
// consecutive stages; the replicas of a stage pass their gradients to the one that ran the step's
// last micro-batch, which updates the stage and sends the fresh parameters back (CDP-v2's rule).
// Internal to cdp.cpp.
#pragma once

#include "algorithms/algorithm.h"

#include <memory>

namespace overlapsim {

// cyclic: the pyramid on N(N+1)/2 GPUs; otherwise DP + MP on N^2 GPUs (all micro-batches at once,
// an all-reduce among each stage's N replicas at the end of the step). Throws std::invalid_argument
// when the world size is not of that form.
std::unique_ptr<WorkerProgram> make_cdp_mp_program(Worker& worker, bool cyclic);

} // namespace overlapsim
