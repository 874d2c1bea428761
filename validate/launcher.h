// The local launcher of `overlapsim validate`: starts one process per worker on this machine
// (torchrun-style environment: RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), optionally each in its
// own emulated-network namespace, and watches them. The first worker that fails stops the job:
// the others are killed and the error names the rank. Ctrl-C (SIGINT/SIGTERM) does the same.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace overlapsim::real {

struct LocalLaunch {
  int workers = 2;
  std::vector<std::string> argv; // what every worker runs (this binary and its arguments)
  std::string work_dir;          // holds the rendezvous file (FileStore: no listening socket)
  std::optional<double> emulate_rate_Bps;
  double grace_s = 5; // after a failure, how long the others get to report their own error
  // Give each worker its own share of this process's cores (core_shares), as each GPU is its own
  // device in the simulator; false: the kernel places every thread anywhere.
  bool bind_cores = true;
};

// The cores each of `workers` workers gets out of `available` (sorted CPU ids): consecutive
// equal shares of size(available) / workers, the remainder unused; with more workers than cores,
// one core each, round robin. Unbound, two workers' four busy threads (compute and Gloo) roamed
// over 2 cores and the measured loopback steps varied by up to 90% between repeats; bound, each
// worker's communication competes with its own compute only, which is what the simulator models.
std::vector<std::vector<int>> core_shares(const std::vector<int>& available, int workers);

// Returns when every worker has exited 0; throws std::runtime_error naming the first rank that
// failed (its exit status or signal) otherwise.
void launch_local(const LocalLaunch& launch);

} // namespace overlapsim::real
