#include "sim/type_classes.h"

#include <map>

namespace overlapsim::sim {

void fold_node_types(const scenario::Scenario& s, RankClasses& rc, const std::vector<char>& alike) {
  const auto& c = s.cluster;
  if (c.node_types.empty() || !rc.folded)
    return;
  const auto nodes = static_cast<std::size_t>(c.nodes);
  std::vector<int> type(nodes);
  for (std::size_t n = 0; n < nodes; ++n)
    type[n] = c.node_type_of(static_cast<int>(n));
  std::map<int, int> representative{{type[static_cast<std::size_t>(rc.node)], rc.node}};
  for (int t = -1; t < static_cast<int>(c.node_types.size()); ++t) {
    if (representative.contains(t))
      continue;
    std::vector<char> usable(nodes, 0);
    for (std::size_t n = 0; n < nodes; ++n)
      usable[n] = alike[n] && type[n] == t ? 1 : 0;
    if (const int r = busiest_tree_node(c.nodes, usable); r >= 0)
      representative[t] = r;
  }
  for (std::size_t n = 0; n < nodes; ++n) {
    if (rc.runs[n])
      continue;
    const int r = representative.at(type[n]); // n has no straggler: its type has a representative
    rc.runs[n] = static_cast<int>(n) == r ? 1 : 0;
    rc.stand_in[n] = r;
  }
}

} // namespace overlapsim::sim
