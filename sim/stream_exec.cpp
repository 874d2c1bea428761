#include "sim/stream_exec.h"

#include "sim/simcall_batch.h"

#include <simgrid/s4u/Actor.hpp>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

void StreamExec::run(sg4::Host* host, double flops, double priority) {
  const aid_t self = sg4::this_actor::get_pid();
  sg4::ExecPtr exec;
  if (exec_ && owner_ == self) {
    exec = exec_;
    // Ended: its s4u side is FINISHED, which the setters refuse. The setters below replace its
    // kernel side's flops, host and sharing penalty, and start() makes a new LMM variable.
    exec->set_state(sg4::Activity::State::INITED);
  } else {
    exec = sg4::Exec::init(); // no simcall
    if (!exec_) {
      exec_ = exec;
      owner_ = self;
    }
  }
  in_one_simcall([&] {
    exec->set_flops_amount(flops);
    exec->set_host(host);
    exec->set_priority(priority);
    exec->start();
  });
  exec->wait();
}

} // namespace overlapsim::sim
