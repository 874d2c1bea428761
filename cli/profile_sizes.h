// The collective sizes and replicator phases a scenario's algorithms issue, which `overlapsim
// profile` measures besides its geometric sweep (runtime/collective_size.h and
// runtime/replicator_use.h say why).
#pragma once

#include "runtime/collective_size.h"
#include "runtime/replicator_use.h"
#include "scenario/scenario.h"

#include <cstdint>
#include <map>

namespace overlapsim::cli {

struct IssuedOps {
  std::map<CollectiveSize, std::int64_t> collectives;
  std::map<ReplicatorSize, std::int64_t> replicator_phases;
};

// Simulates each of the scenario's algorithms as it is (sim/sim_runtime.h) and returns every size
// their collectives used and every replicator phase they ran, with the calls over all ranks. An
// algorithm whose simulation fails adds nothing (its run reports the failure); the result depends
// on the scenario alone, so every rank of a job computes the same list and issues the same profile
// collectives.
IssuedOps issued_ops(const scenario::Scenario& scenario);

} // namespace overlapsim::cli
