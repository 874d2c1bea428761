#include "cli/profile_sizes.h"

#include "sim/sim_runtime.h"

#include <stdexcept>

namespace overlapsim::cli {

std::map<CollectiveSize, std::int64_t> issued_collective_sizes(const scenario::Scenario& s) {
  std::map<CollectiveSize, std::int64_t> calls;
  for (const auto& a : s.algorithms) {
    try {
      for (const auto& [size, n] : sim::simulate(s, a).collective_calls)
        calls[size] += n;
    } catch (const std::exception&) {
      // The algorithm's own run or prediction names what is wrong; the profile goes on without it.
    }
  }
  return calls;
}

} // namespace overlapsim::cli
