// Fewer trips to SimGrid's maestro (issue 64.1). SimGrid 3.32 runs every call that changes the
// simulation (a semaphore's release, an activity's creation, start or priority) as a simcall: the
// calling actor switches to the maestro and back (simix.hpp's simcall_answered), ~2 us each on
// this machine. Made from inside one simcall they run at once, in the maestro (s4u's own fast
// path), in the same order and at the same simulated instant. A loop over a collective's members
// or flows then costs one switch instead of N, and an execution one switch for its creation and
// start instead of three; the simulated times are the same (the summaries, goldens and the pinned
// lone collectives are byte-identical).
#pragma once

#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>
#include <simgrid/simix.hpp>

#include <utility>

namespace overlapsim::sim {

// Runs `f` as one simcall. `f` must not block and must not ask for the calling actor (it runs in
// the maestro, where this_actor has no actor): name hosts explicitly.
template <class F> void in_one_simcall(F&& f) {
  simgrid::kernel::actor::simcall_answered(std::forward<F>(f));
}

// this_actor::execute(flops, priority) on `host` (the calling actor's), its settings and start in
// one simcall; blocks until it ends.
inline void execute_on(simgrid::s4u::Host* host, double flops, double priority = 1.0) {
  // Created by the calling actor, not in the simcall: SimGrid 3.32 files an execution under the
  // actor that creates it (ActorImpl::activities_, a std::list) and, when it ends, finds it there
  // by a linear search (ExecImpl::post). Created in the maestro, every GPU's running execution
  // sat on the maestro's one list: O(GPUs) per execution ended, 12% of the 1,024-GPU run's CPU
  // (issue 64.1, perf and gdb). Exec::init is no simcall.
  simgrid::s4u::ExecPtr exec = simgrid::s4u::Exec::init();
  in_one_simcall([&] {
    exec->set_flops_amount(flops);
    exec->set_host(host);
    exec->set_priority(priority);
    exec->start();
  });
  exec->wait();
}

} // namespace overlapsim::sim
