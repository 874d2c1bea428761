// d-mod-k routes over a fat tree's cables (hw/fat_tree_route.h) by hand, and a folded fat tree's
// collective held to the busiest cable the full tree's routes load (Fabric::uplink_time).
#include "hw/fat_tree.h"
#include "hw/fat_tree_route.h"
#include "sim/collective_timing.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

namespace overlapsim {
namespace {

hw::FatTree leaf_spine_2to1(int nodes) {
  hw::FabricSpec f;
  f.topology = hw::FabricSpec::Topology::fat_tree;
  f.levels = 2;
  f.oversubscription = 2;
  f.placement = hw::FabricSpec::Placement::node;
  return hw::build_fat_tree(f, nodes, 8);
}

std::vector<hw::CableKey> cables(const hw::FatTree& t, long long a, long long b) {
  std::vector<hw::CableKey> out;
  hw::dmodk_cables(t, a, b, out);
  return out;
}

int shared(const std::vector<hw::CableKey>& x, const std::vector<hw::CableKey>& y) {
  return static_cast<int>(
      std::count_if(x.begin(), x.end(), [&](hw::CableKey c) { return std::ranges::count(y, c); }));
}

TEST(DmodkRoutes, TwoLevelsPickTheSpineByTheDestinationPortModuloTheUplinks) {
  // leaf-spine-2to1 over 32 x 8 NICs: 64-port leaves 43 down, 21 up; 6 leaves, 21 spines.
  const auto t = leaf_spine_2to1(32);
  ASSERT_EQ(t.leaf_down, 43);
  ASSERT_EQ(t.leaf_up, 21);
  EXPECT_TRUE(cables(t, 8, 16).empty()); // one leaf (ports 0-42)
  // 8 (leaf 0) -> 50 (leaf 1): spine 50 mod 21 = 8, up leaf 0 -> 8 and down 8 -> leaf 1.
  const auto to50 = cables(t, 8, 50);
  ASSERT_EQ(to50.size(), 2u);
  EXPECT_EQ(shared(to50, cables(t, 9, 71)), 2);   // 71 mod 21 = 8, leaf 1: both cables
  EXPECT_EQ(shared(to50, cables(t, 9, 51)), 0);   // spine 9
  EXPECT_EQ(shared(to50, cables(t, 100, 50)), 1); // from leaf 2: the cable down only
  EXPECT_EQ(shared(to50, cables(t, 8, 92)), 1);   // 92 mod 21 = 8 on leaf 2: the cable up only
  EXPECT_EQ(shared(to50, cables(t, 50, 8)), 0);   // the other direction
}

TEST(DmodkRoutes, ThreeLevelsAddADigitPerLevel) {
  // radix 4, 3 levels, 1:1: down {2, 2, 2}, up {1, 2, 2}; 8 ports. From port 0 to 7: d_1 = 7 mod
  // 2 = 1, d_2 = (7 / 2) mod 2 = 1; to 5: d_1 = 1, d_2 = 0. Same cable up from leaf 0, different
  // ones above; down, both into switch (ports 4-7, d_1 = 1), then different leaves.
  hw::FabricSpec f;
  f.topology = hw::FabricSpec::Topology::fat_tree;
  f.radix = 4;
  f.levels = 3;
  const auto t = hw::build_fat_tree(f, 8, 1);
  ASSERT_EQ(t.down, (std::vector<unsigned>{2, 2, 2}));
  ASSERT_EQ(t.up, (std::vector<unsigned>{1, 2, 2}));
  const auto to7 = cables(t, 0, 7), to5 = cables(t, 0, 5);
  ASSERT_EQ(to7.size(), 4u); // levels 1 and 2, up and down
  EXPECT_EQ(to7[0], to5[0]); // leaf 0 up to d_1 = 1
  EXPECT_NE(to7[1], to5[1]); // down into leaf 3 against leaf 2
  EXPECT_NE(to7[2], to5[2]); // d_2 differs
  // From port 2 (leaf 1), the same digits: both down cables, and the level-2 cable up, since
  // ports 0 to 3 sit under one level-2 switch.
  EXPECT_EQ(shared(to7, cables(t, 2, 7)), 3);
}

TEST(FoldedFatTree, ChargesTheSpineCablesDmodkCollides) {
  // One 128 MiB NVLSTree all-reduce over 32 DGX H100 nodes on leaf-spine-2to1: node 1's GPUs
  // send 4 x 8 MiB each (both trees), 671 us at a NIC's 50 GB/s; in full, d-mod-k sends 7 of
  // the flows out of leaf 2 up one cable to spine 0 (58.7 MB, 1,174 us). Spread evenly over a
  // leaf's 21 uplinks the fold was 31% fast (1,189 against 1,736 us); now both are 1,736 us.
  const std::string yaml =
      "name: f\ncluster: {preset: dgx-h100, nodes: 32, fabric: leaf-spine-2to1}\n"
      "model: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
      "algorithms: [ddp]\n";
  const auto folded =
      sim::time_collective(testing::scenario_from(yaml), CollectiveOp::all_reduce, 128 << 20);
  const auto full = sim::time_collective(testing::scenario_from(yaml, {"cluster.rank_classes=off"}),
                                         CollectiveOp::all_reduce, 128 << 20);
  EXPECT_EQ(full.algorithm, "nvlstree/Simple");
  EXPECT_NEAR(full.time_s, 1736.3e-6, 0.5e-6);
  EXPECT_NEAR(folded.time_s / full.time_s, 1.0, 1e-3);
}

} // namespace
} // namespace overlapsim
