#include "sim/collective/collnet.h"

namespace overlapsim::sim::collective {

std::vector<Flow> collnet_flows(Fabric& fabric, const Group& g, double bytes) {
  std::vector<Flow> flows;
  const Split* sp = fabric.split(g);
  if (!sp || sp->intra.size() < 2)
    return flows;
  const std::size_t m = sp->intra.size();
  for (std::size_t i = 0; i < m; ++i) {
    const auto& here = sp->intra[i]->ranks;
    const auto& next = sp->intra[(i + 1) % m]->ranks;
    const std::size_t lanes = std::min(here.size(), next.size());
    for (std::size_t k = 0; k < lanes; ++k)
      flows.push_back({here[k], next[k], bytes / static_cast<double>(lanes)});
  }
  return flows;
}

} // namespace overlapsim::sim::collective
