#include "hw/fat_tree_route.h"

namespace overlapsim::hw {

void dmodk_cables(const FatTree& tree, long long a, long long b, std::vector<CableKey>& out) {
  const int top = tree.common_level(a, b);
  // Keys: (level, direction, the subtree under the level's switch, d_1..d_l), mixed-radix.
  std::uint64_t digits = 0, w_below = 1, w_above = 1;
  long long block = 1;
  for (int l = 1; l < top; ++l) {
    const auto i = static_cast<std::size_t>(l);
    block *= tree.down[i - 1];
    w_below *= tree.up[i - 1];
    const auto w = static_cast<std::uint64_t>(tree.up[i]);
    digits = digits * w + static_cast<std::uint64_t>(b) / w_below % w;
    w_above *= w; // digits < w_above
    const auto slots = static_cast<std::uint64_t>(tree.slots);
    for (const std::uint64_t dir : {0ULL, 1ULL}) {
      const auto under = static_cast<std::uint64_t>((dir == 0 ? a : b) / block);
      out.push_back(((static_cast<std::uint64_t>(l) * 2 + dir) * slots + under) * w_above + digits);
    }
  }
}

} // namespace overlapsim::hw
