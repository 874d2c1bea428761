// Computation slowing communication (cluster.gpu.compute_interference; issue 30), the reverse of
// sim/comm_interference.h. While a GPU computes, its compute kernels hold SMs and HBM bandwidth
// that NCCL's kernels need; on a CPU worker the compute thread holds the core that Gloo's threads
// and the kernel's TCP stack need. A transfer then moves at (1 - share) of its speed for as long
// as one of its members computes, and at full speed otherwise.
//
// Mechanism: the network moves a transfer's bytes at its full speed (SimGrid's flows); the
// progress it lost meanwhile, share x the time its members computed during it, is made up
// afterwards on the member that computed most, as an execution of that many seconds on the
// member's progress host (Platform::progress). That host runs at 1 or at (1 - share) while its
// GPU computes, so the make-up is slowed by compute in the same way. The slowest member paces the
// transfer: a ring's steps wait for the slowest rank, and two members computing at once lose the
// progress once.
//
// By hand (tests/compute_interference_test.cpp): a 10 ms transfer beside 10 ms of compute at
// share 0.5 makes up 5 ms after it, 15 ms in all; beside compute that ends 2 ms after the
// network's part, the first 2 ms of the make-up run at half speed: 10 + 2 + 4 = 16 ms.
//
// Each collective kind makes up its own share where the profile measured it apart
// (compute_interference_by_op); the progress host computes at the default share's pace
// (1 - compute_interference) whatever the kind, a second-order term.
//
// The communication stream's compute takes its own share where measured
// (comm_stream_interference): on a CPU worker the compute thread yields the core to a transfer,
// the communication thread splits it. A member loses `share` per second only the compute stream
// computed and max(share, comm_stream_interference) per second its communication stream computed
// (either stream alone, or both): by hand, a 10 ms message beside 10 ms of the communication
// stream's compute at 0.68 makes up 6.8 ms, 16.8 ms in all; beside the compute stream's, at
// compute_interference 0, nothing.
#pragma once

#include "sim/platform.h"

#include <vector>

namespace overlapsim::sim {

class ComputeInterference {
public:
  // `enabled`: some collective kind's share is above 0 (the platform then has progress hosts);
  // `comm_stream_share`: hw::GpuSpec's comm_stream_interference.
  ComputeInterference(const Platform& platform, bool enabled, double comm_stream_share = 0);

  bool enabled() const { return enabled_; }

  // An op starts or ends computing on `rank`'s GPU, on its communication stream or not (ops at
  // once count once).
  void compute_begin(int rank, bool comm_stream = false);
  void compute_end(int rank, bool comm_stream = false);

  // Seconds `rank`'s GPU has computed so far: on any stream, and on its communication stream.
  struct Computed {
    double any = 0;
    double comm_stream = 0;
  };
  Computed computed(int rank) const;

  // What `members` had computed when a transfer's data started to move (empty when disabled).
  std::vector<Computed> snapshot(const std::vector<int>& members) const;
  // Blocks the calling actor while the transfer, which loses `share` of its speed beside compute
  // (its kind's: hw::GpuSpec::compute_interference_of), makes up the progress it lost to its
  // members' compute since `since` (their snapshot).
  void make_up(const std::vector<int>& members, const std::vector<Computed>& since,
               double share) const;

private:
  // Per rank: ops running, when the current busy period began, closed busy periods summed.
  struct Busy {
    std::vector<int> running;
    std::vector<double> since;
    std::vector<double> seconds;
    explicit Busy(std::size_t ranks) : running(ranks, 0), since(ranks, 0), seconds(ranks, 0) {}
    bool begin(std::size_t rank); // true when the rank turned busy
    bool end(std::size_t rank);   // true when it turned idle
    double total(std::size_t rank) const;
  };

  const Platform& platform_;
  bool enabled_;
  double comm_stream_share_;
  Busy any_;         // any stream
  Busy comm_stream_; // the communication stream
};

} // namespace overlapsim::sim
