// One SimGrid execution per stream, run again for each of its compute ops (issue 64.1, fifth
// pass). A DDP step on a GPU is 273 compute ops (a forward, 34 backward ranges, 236 bucket copies,
// the copy-back, the optimizer); each new execution costs SimGrid 3.32 an ExecImpl and its s4u
// handle (two allocations), a Host::on_state_change connection made at creation and dropped at its
// end, and a place in its actor's activity list. An ended execution set back to INITED takes new
// flops, host and priority and starts again: the same settings make the same LMM variable at the
// same instant, so the simulated times are the same (summaries byte-identical), with none of
// that per op.
#pragma once

#include <simgrid/forward.h>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/Host.hpp>

namespace overlapsim::sim {

class StreamExec {
public:
  // this_actor::execute(flops, priority) on `host` (the calling actor's): its settings and start
  // as one simcall (sim/simcall_batch.h), then its wait; blocks until it ends.
  void run(simgrid::s4u::Host* host, double flops, double priority = 1.0);

private:
  // Made by the actor that runs it (SimGrid 3.32 files an execution under its creator and, when
  // it ends, takes it off that actor's list: created in the maestro, every GPU's would sit on the
  // maestro's one list, searched linearly). Reused only by that actor: another one (a short-lived
  // helper) gets an execution of its own, since an execution keeps a pointer to its creator.
  simgrid::s4u::ExecPtr exec_;
  aid_t owner_ = -1; // the pid of the actor that created exec_
};

} // namespace overlapsim::sim
