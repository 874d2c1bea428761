#include "cli/profile_sizes.h"

#include "sim/sim_runtime.h"

#include <stdexcept>

namespace overlapsim::cli {

IssuedOps issued_ops(const scenario::Scenario& s) {
  IssuedOps issued;
  for (const auto& a : s.algorithms) {
    try {
      const auto result = sim::simulate(s, a);
      for (const auto& [size, n] : result.collective_calls)
        issued.collectives[size] += n;
      for (const auto& [size, n] : result.replicator_calls)
        issued.replicator_phases[size] += n;
    } catch (const std::exception&) {
      // The algorithm's own run or prediction names what is wrong; the profile goes on without it.
    }
  }
  return issued;
}

} // namespace overlapsim::cli
