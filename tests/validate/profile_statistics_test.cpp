#include "validate/profile_statistics.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>

namespace overlapsim::real {
namespace {

TEST(ProfileStatistics, ExpectedTimeKeepsTheSlowTailTheRunPays) {
  // 9 repeats at 1 ms and one at 11 ms: the run pays 2 ms on average; the median says 1 ms.
  std::vector<double> t(9, 1e-3);
  t.push_back(11e-3);
  EXPECT_DOUBLE_EQ(expected_time(t), 2e-3);
}

TEST(ProfileStatistics, ExpectedTimeDropsTheSlowestFivePercent) {
  // 40 repeats: the 2 slowest (a 75 ms first touch, a 30 ms preemption) go; 38 remain.
  std::vector<double> t(36, 1e-3);
  t.push_back(3e-3);
  t.push_back(5e-3);
  t.push_back(75e-3);
  t.push_back(30e-3);
  EXPECT_DOUBLE_EQ(expected_time(t), (36 * 1e-3 + 3e-3 + 5e-3) / 38);
  EXPECT_EQ(expected_time({}), 0);
}

TEST(ProfileStatistics, ComputeDriftIsTheLastThirdOverTheFirst) {
  // A forward of 10, 10, 11, 11, 12, 12 ms and a backward of 20, 20, 21, 21, 22, 22 ms, in the
  // order they ran: the first thirds' medians add up to 30 ms, the last thirds' to 34 ms: +13.3%.
  // A pass with fewer than three repeats has no thirds and is left out.
  const std::map<std::string, std::vector<double>> passes = {
      {"fwd", {10e-3, 10e-3, 11e-3, 11e-3, 12e-3, 12e-3}},
      {"bwd", {20e-3, 20e-3, 21e-3, 21e-3, 22e-3, 22e-3}},
      {"short", {1.0, 2.0}}};
  EXPECT_NEAR(compute_drift(passes), 34.0 / 30 - 1, 1e-12);
  // A stall in the last third moves its median, not the drift.
  EXPECT_NEAR(
      compute_drift({{"fwd", {10e-3, 10e-3, 10e-3, 10e-3, 10e-3, 10e-3, 10e-3, 10e-3, 90e-3}}}),
      0.0, 1e-12);
  EXPECT_TRUE(std::isnan(compute_drift({{"fwd", {1.0, 2.0}}})));
  EXPECT_TRUE(std::isnan(compute_drift({})));
}

TEST(ProfileStatistics, EveryNthKeepsTheLastOfEachRepeatsRuns) {
  // Three repeats of two steps each (the first issued to an idle GPU, 188 us; the second behind
  // it, 31 us) and one unfinished: the second of each.
  const std::vector<double> t{188e-6, 31e-6, 190e-6, 32e-6, 185e-6, 30e-6, 200e-6};
  EXPECT_EQ(every_nth(t, 2), (std::vector<double>{31e-6, 32e-6, 30e-6}));
  EXPECT_EQ(every_nth(t, 1), t);
  EXPECT_EQ(every_nth(t, 0), t);
  EXPECT_TRUE(every_nth({1.0}, 2).empty());
}

TEST(ProfileStatistics, FirstEndTimeTakesEachRepeatsFastestMember) {
  // Two members, three repeats: the fastest 10, 11 and 12 ms.
  EXPECT_DOUBLE_EQ(first_end_time({{10e-3, 18e-3, 12e-3}, {12e-3, 11e-3, 13e-3}}), 11e-3);
  EXPECT_DOUBLE_EQ(first_end_time({{4e-3, 6e-3}}), 5e-3);         // one member: its own
  EXPECT_DOUBLE_EQ(first_end_time({{1e-3, 9e-3}, {3e-3}}), 1e-3); // cut to the shortest
  EXPECT_EQ(first_end_time({}), 0);
}

TEST(ProfileStatistics, TheLastCallersLagIsTheMedianWhereTheLateMemberAlwaysEndsLast) {
  // Member 0 late in repeats 0 and 2, member 1 in 1 and 3: the late one ends 6, 5, 7 and 9 ms
  // after the other; the median, 6.5 ms.
  EXPECT_DOUBLE_EQ(last_caller_lag({{20e-3, 12e-3, 25e-3, 10e-3}, {14e-3, 17e-3, 18e-3, 19e-3}}),
                   6.5e-3);
  // An end that falls either way (the late member first in repeat 1): no lag.
  EXPECT_EQ(last_caller_lag({{20e-3, 12e-3}, {14e-3, 10e-3}}), 0);
  // Three members: repeat k's late member against the earliest of the other two (6, 7, 8 ms).
  EXPECT_DOUBLE_EQ(last_caller_lag({{9e-3, 1e-3, 2e-3}, {3e-3, 8e-3, 4e-3}, {5e-3, 6e-3, 10e-3}}),
                   7e-3);
  EXPECT_EQ(last_caller_lag({{1e-3, 2e-3}}), 0); // one member
  EXPECT_EQ(last_caller_lag({{}, {}}), 0);
}

TEST(ProfileStatistics, TheEndSpreadIsTheMedianOfEachRepeatsLastLessFirst) {
  // Two members, four repeats apart by 8, 1, 3 and 6 ms, whichever ends last: the median, 4.5 ms.
  EXPECT_DOUBLE_EQ(end_spread({{10e-3, 12e-3, 15e-3, 20e-3}, {18e-3, 11e-3, 12e-3, 14e-3}}),
                   4.5e-3);
  // Three members: each repeat's widest (9 - 1 = 8, 8 - 3 = 5, 10 - 4 = 6 ms).
  EXPECT_DOUBLE_EQ(end_spread({{9e-3, 3e-3, 4e-3}, {1e-3, 8e-3, 10e-3}, {5e-3, 6e-3, 7e-3}}), 6e-3);
  EXPECT_DOUBLE_EQ(end_spread({{1e-3, 9e-3}, {3e-3}}), 2e-3); // cut to the shortest
  EXPECT_EQ(end_spread({{1e-3, 2e-3}}), 0);                   // one member
  EXPECT_EQ(end_spread({{}, {}}), 0);
}

TEST(ProfileStatistics, AMessagesDelayAgainstALoadIsThePairedMedian) {
  // The mlp's probe over an emulated 100 Mbit/s link: 138.8 ms alone each time, loaded 163.2,
  // 198.3, 159.7, 286.2 and 163.6 ms: delays 24.4, 59.5, 20.9, 147.4 and 24.8 ms; the median is
  // 24.8 ms where the means' difference is 55.4 ms.
  const std::vector<double> alone(5, 138.8e-3);
  const std::vector<double> loaded{163.2e-3, 198.3e-3, 159.7e-3, 286.2e-3, 163.6e-3};
  EXPECT_NEAR(paired_median_delay(alone, loaded), 24.8e-3, 1e-12);
  EXPECT_NEAR(expected_time(loaded) - expected_time(alone), 55.4e-3, 1e-12);
  // Paired by repeat: the alone times' own drift cancels (delays 2, 3, 1 ms).
  EXPECT_NEAR(paired_median_delay({10e-3, 20e-3, 30e-3}, {12e-3, 23e-3, 31e-3}), 2e-3, 1e-12);
  // Even count: the middle two's mean; cut to the shorter; never below 0; nothing: 0.
  EXPECT_NEAR(paired_median_delay({1e-3, 1e-3, 1e-3, 1e-3}, {2e-3, 5e-3, 3e-3, 9e-3}), 3e-3, 1e-12);
  EXPECT_NEAR(paired_median_delay({1e-3, 1e-3, 1e-3}, {4e-3, 2e-3}), 2e-3, 1e-12);
  EXPECT_EQ(paired_median_delay({5e-3, 5e-3}, {4e-3, 3e-3}), 0);
  EXPECT_EQ(paired_median_delay({}, {1e-3}), 0);
}

TEST(ProfileStatistics, RepeatsCoverTheTimeBudgetWithinBounds) {
  ProfileOptions o;                       // at least 5, 0.25 s, at most 200
  EXPECT_EQ(repeats_for(o, 0.3), 5);      // a GPU model's step: the minimum
  EXPECT_EQ(repeats_for(o, 0.01), 25);    // 25 x 10 ms = 0.25 s
  EXPECT_EQ(repeats_for(o, 0.0004), 200); // 625 wanted, capped
  EXPECT_EQ(repeats_for(o, 0), 200);
  o.min_time_s = 0.02;
  EXPECT_EQ(repeats_for(o, 0.001), 20);
}

TEST(ProfileStatistics, SweepMeasuresTheSizesTheAlgorithmsIssue) {
  ProfileOptions o;
  o.min_bytes = 1000;
  o.sizes = 3; // 0, then 1 kB, 10 kB, 100 kB
  o.issued = {
      {{"all_reduce", 2, 50e3}, 3},    // measured
      {{"all_reduce", 2, 10.1e3}, 40}, // within 2% of the 10 kB step: that one prices it
      {{"all_reduce", 2, 8}, 40},      // one element per rank: what the 0 measures
      {{"all_reduce", 4, 30e3}, 9},    // another group size
      {{"all_gather", 2, 20e3}, 9},    // another op
      {{"all_reduce", 2, 200e3}, 1},   // beyond the sweep's top: measured too
  };
  const std::vector<double> want{0, 1e3, 1e4, 5e4, 1e5, 2e5};
  const auto got = sweep_sizes(o, 1e5, "all_reduce", 2);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6 * want[i]) << i;
  // A message's 0 is one 4-byte element.
  o.issued = {{{"send_recv", 2, 4}, 5}, {{"send_recv", 2, 64}, 5}};
  EXPECT_EQ(sweep_sizes(o, 1e5, "send_recv", 2).size(), 5u); // 0, three steps, 64 B
}

TEST(ProfileStatistics, SweepTakesTheMostCalledIssuedSizes) {
  ProfileOptions o;
  o.min_bytes = 1e3;
  o.sizes = 2;                                  // 0, 1 kB, 1 MB
  for (int i = 0; i < kMaxIssuedSizes + 3; ++i) // 2 kB called 1 time, 3 kB 2 times, ...
    o.issued[{"reduce_scatter", 2, 2e3 + 1e3 * i}] = i + 1;
  const auto got = sweep_sizes(o, 1e6, "reduce_scatter", 2);
  ASSERT_EQ(got.size(), 3u + kMaxIssuedSizes);
  EXPECT_DOUBLE_EQ(got[2], 5e3); // 2, 3 and 4 kB, the least called, are left out
  EXPECT_DOUBLE_EQ(got[got.size() - 2], 2e3 + 1e3 * (kMaxIssuedSizes + 2));
}

// The optimizer steps a run issues join the shards: the most called first, none at or past the
// full model (measured anyway) nor within 2% of a count already there; collectives do not count.
TEST(ProfileStatistics, OptimizerStepsTakeTheParameterCountsTheAlgorithmsStep) {
  ProfileOptions o;
  o.issued[{kOptimizerStep, 1, 316}] = 40;    // CDP's one-tensor stage
  o.issued[{kOptimizerStep, 1, 50500}] = 30;  // within 2% of the shard 50,000
  o.issued[{kOptimizerStep, 1, 100000}] = 20; // the full model
  o.issued[{kOptimizerStep, 1, 12000}] = 10;  // FSDP's unit shard
  o.issued[{"all_reduce", 2, 4096}] = 100;    // not a step
  EXPECT_EQ(optimizer_step_sizes(o, 100000, {50000}),
            (std::vector<std::int64_t>{316, 12000, 50000}));
  for (int i = 0; i < kMaxIssuedSizes + 2; ++i) // 1,000 called once, 2,000 twice, ...
    o.issued[{kOptimizerStep, 1, 1000.0 * (i + 1)}] = i + 1;
  const auto got = optimizer_step_sizes(o, 100000, {});
  EXPECT_EQ(got.size(), static_cast<std::size_t>(kMaxIssuedSizes));
  EXPECT_EQ(got.front(), 316);                                       // the most called
  EXPECT_TRUE(std::find(got.begin(), got.end(), 1000) == got.end()); // the least
}

TEST(ProfileStatistics, InterferenceRoundsCoverTwiceTheComputeAtLeastAsLongAsOnTheClock) {
  // 60 forwards + backwards of 4 ms, probes of 1 and 2 ms: ceil(0.48 / 0.003) + 2.
  EXPECT_EQ(interference_rounds(60, 0.004, {0.001, 0.002}, 0.0025), 162);
  // A round that took 4 ms on the clock: ceil(0.48 / 0.004) + 2.
  EXPECT_EQ(interference_rounds(60, 0.004, {0.001, 0.002}, 0.004), 122);
  // A probe whose receives all read 0: the clock bounds the loop (480002 rounds from 1 us).
  EXPECT_EQ(interference_rounds(60, 0.004, {0.0}, 0.002), 242);
  EXPECT_EQ(interference_rounds(60, 0.004, {0.0}, 0.0), 480002);
}

TEST(ProfileStatistics, InterferenceProbesLastEightForwardsAndBackwardsWhereTheLinkIsSlow) {
  ASSERT_EQ(kComputeRepeatsPerProbe, 8);
  // The bench's mlp over 100 Mbit/s: 887,040 gradients, all-reduced in 0.3 s, a forward +
  // backward of 4 ms: floor(887040 x 8 x 0.004 / 0.3) = floor(94617.6).
  EXPECT_EQ(interference_probe_elements(887040, 0.004, 0.3, 2), 94617);
  // Over loopback the all-reduce (1.2 ms) is shorter than 8 x 4 ms: the whole gradients.
  EXPECT_EQ(interference_probe_elements(887040, 0.004, 0.0012, 2), 887040);
  // Exactly eight: the whole gradients still.
  EXPECT_EQ(interference_probe_elements(1000, 0.01, 0.08, 2), 1000);
  // Never below one element per rank (1000 x 8 x 1e-9 / 10 s rounds to nothing), nor above n
  // when the all-reduce read 0.
  EXPECT_EQ(interference_probe_elements(1000, 1e-9, 10.0, 4), 4);
  EXPECT_EQ(interference_probe_elements(1000, 0.004, 0.0, 2), 1000);
}

TEST(ProfileStatistics, StartCostLineGoesThroughBothSizes) {
  // A forward lost 0.4 ms beside a 256 KiB start and 1.0 ms beside a 1 MiB one: 0.6 ms per
  // 786,432 bytes, 0.2 ms fixed.
  const auto line = start_cost_line(262144, 0.4e-3, 1048576, 1.0e-3);
  ASSERT_TRUE(line);
  EXPECT_NEAR(line->per_byte_s, 0.6e-3 / 786432, 1e-18);
  EXPECT_NEAR(line->fixed_s, 0.2e-3, 1e-12);
  // A line that would cross 0 below: through the origin and the larger point instead.
  const auto steep = start_cost_line(262144, 0.1e-3, 1048576, 2.0e-3);
  ASSERT_TRUE(steep);
  EXPECT_EQ(steep->fixed_s, 0);
  EXPECT_NEAR(steep->per_byte_s, 2.0e-3 / 1048576, 1e-18);
  // The larger start cost less (noise): flat at the mean; a negative loss counts as none.
  const auto flat = start_cost_line(262144, 0.5e-3, 1048576, 0.3e-3);
  ASSERT_TRUE(flat);
  EXPECT_NEAR(flat->fixed_s, 0.4e-3, 1e-12);
  EXPECT_EQ(flat->per_byte_s, 0);
  const auto half = start_cost_line(262144, -0.2e-3, 1048576, 0.6e-3);
  ASSERT_TRUE(half);
  EXPECT_EQ(half->fixed_s, 0); // 0 - slope x 262144 < 0: through the origin
  EXPECT_NEAR(half->per_byte_s, 0.6e-3 / 1048576, 1e-18);
  EXPECT_FALSE(start_cost_line(262144, -1e-4, 1048576, 0.0));
}

TEST(ProfileStatistics, AStartProbeLastsAsLongAsTheLongestLayerPass) {
  // gpt-tiny's head backward of 32.2 ms: 16 fills of 2 ms; the mlp's 0.76 ms: one.
  EXPECT_EQ(start_probe_fills(32.2e-3, 2e-3), 16);
  EXPECT_EQ(start_probe_fills(0.76e-3, 2e-3), 1);
  EXPECT_EQ(start_probe_fills(3.1e-3, 2e-3), 2); // rounded: 1.55
  // At most 40 ms of fills, and one where nothing was measured.
  EXPECT_EQ(start_probe_fills(0.5, 2e-3), 20);
  EXPECT_EQ(start_probe_fills(0.0, 2e-3), 1);
  EXPECT_EQ(start_probe_fills(10e-3, 0.0), 1);
}

TEST(ProfileStatistics, ATransfersShareIsThePairsMedianSlowdownAsAWeight) {
  // Three pairs: 100 -> 110 ms, 100 -> 125 ms, 50 -> 56 ms: slowdowns 0.10, 0.25 and 0.12, their
  // median 0.12 the transfer's weight against the compute's 1, its share 0.12 / 1.12.
  const std::vector<double> alone{0.100, 0.100, 0.050}, beside{0.110, 0.125, 0.056};
  EXPECT_NEAR(*paired_transfer_weight(alone, beside), 0.12, 1e-12);
  EXPECT_NEAR(*paired_transfer_share(alone, beside), 0.12 / 1.12, 1e-12);
  // A pair that ran faster beside counts (the median), but the weight is never below 0; a pair
  // with a time of 0 is skipped, and beside times past the alone ones are unpaired.
  EXPECT_NEAR(*paired_transfer_weight({0.1, 0.1, 0.0}, {0.09, 0.12, 0.2, 0.5}), 0.05, 1e-12);
  EXPECT_EQ(*paired_transfer_share({0.1}, {0.08}), 0.0);
  EXPECT_FALSE(paired_transfer_share({}, {}));
  EXPECT_FALSE(paired_transfer_share({0.0}, {0.1}));
}

TEST(ProfileStatistics, ATransferProbesCallOutlastsThePassBesideIt) {
  // A call of 1 MB shards lasting 85 ms + 80 ms per further MB: for a 60 ms pass, 2 x 60 + 10 =
  // 130 ms: 1 MB (85 ms) is short, 2 MB (165 ms) outlasts it.
  const auto lasts = [](std::int64_t elements) {
    return 0.085 + 0.080 * (static_cast<double>(elements) / 262144 - 1);
  };
  EXPECT_EQ(outlasting_shard(262144, 1 << 22, 0.130, lasts), 524288);
  // Long enough as it is; at most `most` (the gradients' share) even where that is short.
  EXPECT_EQ(outlasting_shard(262144, 1 << 22, 0.050, lasts), 262144);
  EXPECT_EQ(outlasting_shard(262144, 400000, 1.0, lasts), 400000);
  EXPECT_EQ(outlasting_shard(262144, 100, 1.0, lasts), 100);
}

} // namespace
} // namespace overlapsim::real
