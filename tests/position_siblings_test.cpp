// The groups beside a collective's group on leaves that hold several GPU positions' NICs
// (sim/collective/position_siblings.h, issue 64.2).
#include "sim/collective/position_siblings.h"

#include <gtest/gtest.h>

namespace overlapsim::sim::collective {
namespace {

std::vector<std::pair<int, int>> ends(const std::vector<Flow>& flows) {
  std::vector<std::pair<int, int>> e;
  for (const Flow& f : flows)
    e.emplace_back(f.src, f.dst);
  return e;
}

TEST(PositionSiblings, ASamePositionRingGainsEveryOtherPosition) {
  // GPU 1 of 3 nodes of 4 GPUs: a ring 1 -> 5 -> 9 -> 1. Its copies start at positions 2, 3, 0.
  const std::vector<Flow> ring{{1, 5, 2.0}, {5, 9, 2.0}, {9, 1, 2.0}};
  const auto all = with_position_siblings(ring, 4);
  ASSERT_EQ(all.size(), 12U);
  EXPECT_EQ(ends(all), (std::vector<std::pair<int, int>>{{1, 5},
                                                         {5, 9},
                                                         {9, 1},
                                                         {2, 6},
                                                         {6, 10},
                                                         {10, 2},
                                                         {3, 7},
                                                         {7, 11},
                                                         {11, 3},
                                                         {0, 4},
                                                         {4, 8},
                                                         {8, 0}}));
  for (const Flow& f : all)
    EXPECT_EQ(f.bytes, 2.0);
}

TEST(PositionSiblings, HalvesAndStridesTile) {
  // Positions {0, 1} of 4: one copy at {2, 3}; positions {0, 2}: one at {1, 3}.
  EXPECT_EQ(ends(with_position_siblings({{0, 5, 1.0}}, 4)),
            (std::vector<std::pair<int, int>>{{0, 5}, {2, 7}}));
  EXPECT_EQ(ends(with_position_siblings({{0, 6, 1.0}}, 4)),
            (std::vector<std::pair<int, int>>{{0, 6}, {1, 7}}));
}

TEST(PositionSiblings, AGroupOfEveryPositionIsAlone) {
  const std::vector<Flow> world{{0, 1, 1.0}, {1, 2, 1.0}, {2, 3, 1.0}, {3, 0, 1.0}};
  EXPECT_EQ(with_position_siblings(world, 2).size(), 4U);
  EXPECT_EQ(with_position_siblings({}, 8).size(), 0U);
}

} // namespace
} // namespace overlapsim::sim::collective
