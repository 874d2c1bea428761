#include "sim/collective/position_siblings.h"

namespace overlapsim::sim::collective {

std::vector<Flow> with_position_siblings(const std::vector<Flow>& flows, int gpus_per_node) {
  const int g = gpus_per_node;
  const auto position = [g](int rank) { return static_cast<std::size_t>(rank % g); };
  std::vector<char> held(static_cast<std::size_t>(g), 0);
  for (const Flow& f : flows)
    held[position(f.src)] = held[position(f.dst)] = 1;
  std::vector<char> covered = held;
  std::vector<Flow> all = flows;
  for (int k = 1; k < g; ++k) {
    bool free = true;
    for (int p = 0; p < g && free; ++p)
      free = !held[static_cast<std::size_t>(p)] || !covered[static_cast<std::size_t>((p + k) % g)];
    if (!free)
      continue;
    for (int p = 0; p < g; ++p)
      if (held[static_cast<std::size_t>(p)])
        covered[static_cast<std::size_t>((p + k) % g)] = 1;
    const auto shifted = [g, k](int rank) { return rank - rank % g + (rank % g + k) % g; };
    for (const Flow& f : flows)
      all.push_back({shifted(f.src), shifted(f.dst), f.bytes});
  }
  return all;
}

} // namespace overlapsim::sim::collective
