// The collective sizes a scenario's algorithms issue, which `overlapsim profile` measures besides
// its geometric sweep (runtime/collective_size.h says why).
#pragma once

#include "runtime/collective_size.h"
#include "scenario/scenario.h"

#include <cstdint>
#include <map>

namespace overlapsim::cli {

// Simulates each of the scenario's algorithms as it is (sim/sim_runtime.h) and returns every size
// their collectives used with the calls over all ranks. An algorithm whose simulation fails adds
// nothing (its run reports the failure); the result depends on the scenario alone, so every rank of
// a job computes the same list and issues the same profile collectives.
std::map<CollectiveSize, std::int64_t> issued_collective_sizes(const scenario::Scenario& scenario);

} // namespace overlapsim::cli
