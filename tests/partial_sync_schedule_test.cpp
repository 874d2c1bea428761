// Partial synchronisation schedules (DreamDDP paper, Definition 1 and Algorithm 2) and the authors'
// cost model, pinned against the numbers their code gives (scenarios/data/README.md).
#include "algorithms/partial_sync_schedule.h"
#include "scenario/layer_table.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>

namespace overlapsim {
namespace {

const std::string kGpt2Table =
    std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/data/gpt2-8w-10gbit-layers.tsv";

LayerCosts costs_of(const std::vector<scenario::LayerTimes>& table) {
  LayerCosts c;
  for (const auto& l : table) {
    c.bp_s.push_back(l.bp_s);
    c.comm_s.push_back(l.comm_s);
  }
  return c;
}

// The data README's toy case: L1..L4 in forward order, L4 nearest the output.
LayerCosts toy() {
  return LayerCosts{{5, 5, 3, 8}, {3, 8, 3, 3}};
}

TEST(LayerTable, ReadsTheAuthorsProfile) {
  const auto table = scenario::read_layer_table(kGpt2Table);
  ASSERT_EQ(table.size(), 125u);
  EXPECT_EQ(table.front().name, "transformer.wte");
  EXPECT_EQ(table.back().name, "lm_head");
  EXPECT_EQ(table.front().fwd_s, 0.0); // no forward column
  const auto c = costs_of(table);
  EXPECT_NEAR(c.total_bp(), 0.07166543664603398, 1e-12);
  EXPECT_NEAR(c.total_comm(), 0.22794119517008465, 1e-12);
}

TEST(LayerTable, ReadsAForwardColumnAndNamesBadCells) {
  const auto t = scenario::parse_layer_table("module\tfwd_s\tbp_s\tcomm_s\na\t1\t2\t3\n", "t.tsv");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].fwd_s, 1.0);
  EXPECT_EQ(t[0].bp_s, 2.0);
  EXPECT_EQ(t[0].comm_s, 3.0);
  EXPECT_THAT([] { scenario::parse_layer_table("bp_s\tcomm_s\n1\t2\n1\tx\n", "t.tsv"); },
              testing::ThrowsMessage<std::runtime_error>(
                  testing::AllOf(testing::HasSubstr("t.tsv:3"), testing::HasSubstr("'comm_s'"),
                                 testing::HasSubstr("'x'"))));
  EXPECT_THAT([] { scenario::parse_layer_table("bp_s\tfwd_s\n1\t2\n", "t.tsv"); },
              testing::ThrowsMessage<std::runtime_error>(testing::HasSubstr("'comm_s'")));
  EXPECT_THAT([] { scenario::parse_layer_table("bp_s\tcomm_s\n1\n", "t.tsv"); },
              testing::ThrowsMessage<std::runtime_error>(testing::HasSubstr("t.tsv:2")));
}

TEST(PartialSync, ToyCasePlsgdWaits) {
  // H = 2, groups {L4, L3} and {L2, L1}. Iteration 1: L2's backward ends at 8+3+5 = 16, its
  // all-reduce runs 16..24, L1's 24..27 while the backward ends at 21: wait 6.
  const auto a = equal_number_partition(4, 2);
  EXPECT_EQ(a, (Assignment{1, 1, 0, 0}));
  EXPECT_THAT(period_waits(toy(), a, 2), testing::ElementsAre(0.0, 6.0));
}

TEST(PartialSync, ToyCaseDreamddpScheduleAndTimes) {
  const auto a = dreamddp_schedule(toy(), 2);
  EXPECT_EQ(a, (Assignment{1, 1, 0, 0})); // {L4: 0, L3: 0, L2: 1, L1: 1}
  EXPECT_DOUBLE_EQ(total_wait(toy(), a, 2), 6.0);
  const auto t = cost_model_iteration_times(toy(), 2);
  EXPECT_DOUBLE_EQ(t.s_sgd, 38.0);      // 21 + 17
  EXPECT_DOUBLE_EQ(t.flsgd, 29.483);    // 21 + 499 x 17 / 1000
  EXPECT_DOUBLE_EQ(t.plsgd_enp, 24.0);  // 21 + 500 x 6 / 1000
  EXPECT_DOUBLE_EQ(t.dreamddp, 23.994); // 21 + 499 x 6 / 1000
}

TEST(PartialSync, Gpt2ProfileMatchesTheAuthorsCostModel) {
  const auto c = costs_of(scenario::read_layer_table(kGpt2Table));
  // The authors report W = 0.05362496 for their schedule (the table's dream_iter_H10 column);
  // this serial-stream model charges their schedule 0.0545493 (their accounting sits between it
  // and Eq. 9's bound, 0.0535448). Our DFS schedule costs less than theirs in this model, and its
  // W is within 0.5 % of what they report.
  const auto a = dreamddp_schedule(c, 10);
  EXPECT_NEAR(total_wait(c, a, 10), 0.05362496, 0.05362496 * 0.005);
  EXPECT_NEAR(total_wait(c, a, 10), 0.0538312, 1e-6);
  const auto h10 = cost_model_iteration_times(c, 10);
  const auto h5 = cost_model_iteration_times(c, 5);
  const double tol = 0.005; // 0.5 %
  EXPECT_NEAR(h10.s_sgd, 0.299607, 0.299607 * tol);
  EXPECT_NEAR(h10.flsgd, 0.094232, 0.094232 * tol);
  EXPECT_NEAR(h5.flsgd, 0.117026, 0.117026 * tol);
  EXPECT_NEAR(h10.plsgd_enp, 0.078104, 0.078104 * tol);
  EXPECT_NEAR(h5.plsgd_enp, 0.088106, 0.088106 * tol);
  EXPECT_NEAR(h10.dreamddp, 0.076974, 0.076974 * tol);
  EXPECT_NEAR(h5.dreamddp, 0.083928, 0.083928 * tol);
}

TEST(PartialSync, Gpt2PlsgdGroupsAndWaits) {
  const auto c = costs_of(scenario::read_layer_table(kGpt2Table));
  const auto a = equal_number_partition(125, 10);
  EXPECT_EQ(a.front(), 9); // transformer.wte, as the table's plsgd_enp_iter_H10 column
  EXPECT_EQ(a.back(), 0);  // lm_head
  EXPECT_EQ(std::count(a.begin(), a.end(), 9), 8);
  const auto w = period_waits(c, a, 10);
  const std::vector<double> authors{0.00225061, 0, 0, 0, 0, 0, 0, 0, 0.00820391, 0.05392788};
  for (int h = 0; h < 10; ++h)
    EXPECT_NEAR(w[h], authors[h], 2e-6) << "iteration " << h;
}

TEST(PartialSync, DfsAgainstTheBruteForceOptimum) {
  EXPECT_DOUBLE_EQ(total_wait(toy(), brute_force_schedule(toy(), 2), 2), 6.0);
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> bp(0.5, 5.0), comm(0.1, 8.0);
  int cases = 0;
  int optimal = 0;
  for (int L = 4; L <= 12; L += 2)
    for (int H = 2; H <= 4; ++H)
      for (int rep = 0; rep < 5; ++rep) {
        LayerCosts c;
        for (int l = 0; l < L; ++l) {
          c.bp_s.push_back(bp(rng));
          c.comm_s.push_back(comm(rng));
        }
        const double dfs = total_wait(c, dreamddp_schedule(c, H), H);
        const double best = total_wait(c, brute_force_schedule(c, H), H);
        EXPECT_LE(best, dfs + 1e-12);
        if (dfs <= best + 1e-12)
          ++optimal;
        ++cases;
      }
  EXPECT_EQ(cases, 75);
  // Property 2 (delayed CO assignment) is a heuristic, as the paper says under it: on these 75
  // random profiles the pruned DFS finds the optimum 64 times.
  EXPECT_EQ(optimal, 64);
}

TEST(PartialSync, BubbleFillingAddsOnlyHiddenOutputLayers) {
  // Toy, iteration 1 syncs {L2, L1} with wait 6: adding L4 (its all-reduce 8..11, before L2's at
  // 16) keeps the wait at 6; adding L3 too (11..14) still does.
  const auto extra = bubble_filling(toy(), Assignment{1, 1, 0, 0}, 2);
  EXPECT_TRUE(extra[0].empty());
  EXPECT_THAT(extra[1], testing::ElementsAre(3, 2));
}

} // namespace
} // namespace overlapsim
