// Fewer trips to SimGrid's maestro (issue 64.1). SimGrid 3.32 runs every call that changes the
// simulation (a semaphore's release, an activity's creation, start or priority) as a simcall: the
// calling actor switches to the maestro and back (simix.hpp's simcall_answered), ~2 us each on
// this machine. Made from inside one simcall they run at once, in the maestro (s4u's own fast
// path), in the same order and at the same simulated instant. A loop over a collective's members
// or flows then costs one switch instead of N, and an execution one switch for its creation and
// start instead of three (sim/stream_exec.h); the simulated times are the same (the summaries,
// goldens and the pinned lone collectives are byte-identical).
#pragma once

#include <simgrid/simix.hpp>

#include <utility>

namespace overlapsim::sim {

// Runs `f` as one simcall. `f` must not block and must not ask for the calling actor (it runs in
// the maestro, where this_actor has no actor): name hosts explicitly.
template <class F> void in_one_simcall(F&& f) {
  simgrid::kernel::actor::simcall_answered(std::forward<F>(f));
}

} // namespace overlapsim::sim
