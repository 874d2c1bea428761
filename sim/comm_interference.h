// Communication slowing computation (cluster.gpu.comm_interference; issue 25.4). While a
// collective or a message moves a GPU's data, the transfer competes with the GPU's computation:
// NCCL's kernels hold SMs and HBM bandwidth, and on a CPU worker Gloo's threads and the kernel's
// TCP stack hold the core. A stream computing alone beside a transfer runs at (1 - share) of its
// speed; nothing is lost when the GPU computes nothing.
//
// The transfer is a third workload beside the two streams, sharing the device by weight as the
// streams share it with each other (sim_worker.cpp: the compute stream weighs 1, the
// communication stream comm_stream_share / (1 - comm_stream_share)): its weight
// share / (1 - share) leaves the compute stream 1 / (1 + weight) = 1 - share, and a communication
// stream that outweighs the compute stream keeps more of the device. On a CPU worker that is
// the scheduler's doing: the compute thread is an idle thread, the communication thread a normal
// one, and a step of the communication thread beside a transfer lost 27% where the compute thread
// lost 88% (CDP's update of one stage, gpt-wide, loopback; weights 19 and 7.7 price 29%). On a
// GPU at the even split a stream computing alone loses `share` as before; with both streams
// computing, each keeps 1 / (2 + weight) of the GPU where NCCL holding a fixed share of the SMs
// would leave (1 - share) / 2.
//
// Each collective kind its own share where the profile measured it apart (hw::GpuSpec's
// comm_interference_by_op: on a CPU a reduce-scatter's stand-in took 0.87 of the compute thread's
// speed where an all-reduce of the same bytes took 0.68-0.73); transfers of several kinds open at
// once weigh as the heaviest.
//
// Only while data moves: a collective waiting for a slower peer, or a posted receive whose send
// has not started, slows nothing (Lee et al. measured overlapped collectives that were moving
// data). Bounded per GPU: however many transfers of a GPU are open at once, they weigh once, so
// concurrent ops (CDP's sends and receives, ACCO's two streams) do not add up.
//
// Mechanism: an execution at the transfer's weight that never ends runs on each GPU's host for the
// whole run, started by a daemon actor per GPU that then blocks for good (SimGrid cancels an
// actor's activities when the actor exits, and transfers open and close in short-lived helper
// actors). While the GPU has no transfer open its priority is +inf, a sharing penalty of 0, which
// SimGrid's max-min solver leaves out (a disabled variable: no share of the host); the first
// transfer to open sets its weight, the last to close turns it off again, SimGrid sharing the
// host among it and the streams' executions meanwhile. (Suspending the execution instead does not
// work on SimGrid 3.32, whose resume() leaves the activity marked suspended, so the next suspend()
// is ignored. Before issue 64.1 the daemon started and cancelled an execution per transfer, woken
// by a semaphore twice each: 40% of a 256-GPU DDP run's CPU, for the same simulated times. Before
// issue 30, a second power state at (1 - share) of the speed, which slowed both streams alike.)
#pragma once

#include "sim/platform.h"

#include <simgrid/s4u/Exec.hpp>

#include <set>
#include <vector>

namespace overlapsim::sim {

class CommInterference {
public:
  // Starts the GPUs' daemon actors (before the engine runs) when `enabled`: some kind's share is
  // above 0.
  CommInterference(const Platform& platform, bool enabled);

  // A transfer of `rank`'s data that takes `share` of a lone stream's speed starts or ends (the
  // same share for both); any actor may call these.
  void begin(int rank, double share);
  void end(int rank, double share);

  // The transfer's weight against a compute stream's 1.
  static double weight(double share) { return share / (1 - share); }

private:
  // The weight the open transfers of `r` put on its GPU: the heaviest's.
  double load_weight(std::size_t r) const;
  // Its load's priority: that weight, or +inf (off) while no transfer is open.
  double priority(std::size_t r) const;

  std::vector<std::multiset<double>> open_; // per rank, the open transfers' shares
  std::vector<char> enabled_;               // per rank: simulated, and some kind's share above 0
  std::vector<simgrid::s4u::ExecPtr> load_; // per rank, the load (null until its daemon ran)
  // Issue 64.1: a rank's load changes priority once per instant at most. DDP's back-to-back
  // all-reduces close a transfer and open the next at the same instant on every member, which
  // turned each GPU's load off and on again (two max-min updates per member and all-reduce, its
  // host's sharing re-solved); the open transfers are now read once, when SimGrid is about to let
  // time move (changed(), flush()).
  void changed(std::size_t r);           // r's open transfers changed: apply them before time moves
  void flush();                          // applies every changed rank's priority where it differs
  std::vector<double> applied_;          // per rank, the load's priority as SimGrid has it
  std::vector<char> dirty_;              // per rank: changed since the last flush
  std::vector<std::size_t> dirty_ranks_; // those ranks, in the order they changed
  bool flush_set_ = false;               // a flush is due at this instant
};

} // namespace overlapsim::sim
