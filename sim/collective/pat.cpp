#include "sim/collective/pat.h"

#include <algorithm>

namespace overlapsim::sim::collective {

std::vector<Flow> pat_flows(const Group& g, double bytes) {
  std::vector<Flow> flows;
  const int n = g.size();
  const double shard = bytes / n;
  for (int d = 1; d < n; d *= 2)
    for (int i = 0; i < n; ++i)
      flows.push_back({g.ranks[static_cast<std::size_t>(i)],
                       g.ranks[static_cast<std::size_t>((i + d) % n)], std::min(d, n - d) * shard});
  return flows;
}

} // namespace overlapsim::sim::collective
