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
#pragma once

#include "sim/platform.h"

#include <vector>

namespace overlapsim::sim {

class ComputeInterference {
public:
  // `enabled`: some collective kind's share is above 0 (the platform then has progress hosts).
  ComputeInterference(const Platform& platform, bool enabled);

  bool enabled() const { return enabled_; }

  // An op starts or ends computing on `rank`'s GPU (any stream; ops at once count once).
  void compute_begin(int rank);
  void compute_end(int rank);

  // Seconds `rank`'s GPU has computed so far.
  double computed(int rank) const;

  // What `members` had computed when a transfer's data started to move (empty when disabled).
  std::vector<double> snapshot(const std::vector<int>& members) const;
  // Blocks the calling actor while the transfer, which loses `shares[i]` of its speed beside
  // member i's compute (its kind's on that member's GPU: hw::GpuSpec::compute_interference_of),
  // makes up the progress it lost to its members' compute since `since` (their snapshot): the
  // most any one member cost it.
  void make_up(const std::vector<int>& members, const std::vector<double>& since,
               const std::vector<double>& shares) const;

private:
  const Platform& platform_;
  bool enabled_;
  std::vector<int> busy_;            // compute ops running, per rank
  std::vector<double> busy_since_;   // when the current busy period began
  std::vector<double> busy_seconds_; // closed busy periods, summed
};

} // namespace overlapsim::sim
