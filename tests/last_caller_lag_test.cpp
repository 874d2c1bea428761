// A calibrated collective's last caller ends after the others (scenario::SizeTime::
// last_caller_lag_s): the others end when the op's measured time has passed since that call, the
// last caller its lag later. Pinned by hand on a 10 MB reduce-scatter between two GPUs.
#include "algorithms/algorithm.h"
#include "scenario/calibration.h"
#include "test_util.h"

#include <fstream>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;

constexpr std::int64_t kArray = 2'500'000; // fp32 elements: 10 MB

// Rank 1 fills 2 MB (2 ms at 1 GB/s) before the reduce-scatter; rank 0 calls it at once.
class LateReduceScatter final : public Algorithm {
public:
  std::string name() const override { return "late-reduce-scatter"; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class P final : public WorkerProgram {
    public:
      explicit P(Worker& worker)
          : w_(worker), data_(w_.declare({"data", MemoryCategory::buffers, kArray, 4})),
            pair_(w_.topology().group({0, 1})) {}
      void run_compute() override {
        if (w_.rank() == 1)
          w_.fill(Slice{data_, 0, kArray / 5}, 0);
        CollectiveCall c;
        c.op = CollectiveOp::reduce_scatter;
        c.group = &pair_;
        c.data = Slice{data_, 0, kArray};
        c.out = Slice{data_, w_.rank() * kArray / 2, kArray / 2};
        c.name = "sums";
        w_.run(c);
      }
      void run_comm() override {}

    private:
      Worker& w_;
      BufferId data_;
      const Group& pair_;
    };
    return std::make_unique<P>(w);
  }
};

std::string scenario_text(const std::string& cluster_extra) {
  return "name: late\ncluster: {nodes: 2, gpus_per_node: 1, gpu: {name: g, peak_tflops: 100, "
         "memory: 80GB, hbm_bandwidth: 1GB/s}, inter_node: {bandwidth: 1GB/s, latency: 0us}" +
         cluster_extra +
         "}\nmodel: {preset: mlp, width: 64, depth: 2}\ntraining: {micro_batch: 1, seq_len: 1}\n"
         "algorithms: [ddp]\n";
}

// The reduce-scatter measured at 1 and 10 MB: 2 and 11 ms until the first member ended, the last
// caller 1 and 4 ms after the other.
scenario::Calibration measured(double lag_1mb, double lag_10mb) {
  scenario::Calibration c;
  c.inter_node = scenario::LinkFit{.op = "all_reduce", .ranks = 2, .bandwidth_Bps = 1e9};
  c.inter_node_ops.push_back(
      scenario::LinkFit{.op = "reduce_scatter",
                        .ranks = 2,
                        .bandwidth_Bps = 1e9,
                        .points = {{1e6, 0.002, lag_1mb}, {1e7, 0.011, lag_10mb}}});
  return c;
}

// Each rank's start and end of the reduce-scatter.
std::array<std::pair<double, double>, 2> spans(const scenario::Scenario& s) {
  const auto result = sim::simulate(s, LateReduceScatter());
  std::array<std::pair<double, double>, 2> out{};
  for (const auto& e : result.trace.events)
    if (e.category == OpCategory::comm && result.trace.name_of(e.name) == "sums")
      out.at(static_cast<std::size_t>(e.worker)) = {e.start, e.end};
  return out;
}

// Rank 1 calls at 2 ms: the 10 MB op's 11 ms run from there, rank 0 ends at 13 ms and rank 1,
// the last to call, 4 ms later. Without a lag both end at 13 ms.
TEST(LastCallerLag, TheLastCallerEndsTheLagAfterTheOthers) {
  const testing::ScratchDir dir;
  const auto path = dir / "profile.json";
  std::ofstream(path) << scenario::calibration_json(measured(0.001, 0.004));
  const auto apart = spans(scenario_from(scenario_text(", calibration: " + path.string())));
  EXPECT_NEAR(apart[0].first, 0.0, 1e-9);
  EXPECT_NEAR(apart[1].first, 0.002, 1e-6);
  EXPECT_NEAR(apart[0].second, 0.013, 1e-6);
  EXPECT_NEAR(apart[1].second, 0.017, 1e-6);
  std::ofstream(path) << scenario::calibration_json(measured(0, 0));
  const auto together = spans(scenario_from(scenario_text(", calibration: " + path.string())));
  EXPECT_NEAR(together[0].second, 0.013, 1e-6);
  EXPECT_NEAR(together[1].second, 0.013, 1e-6);
}

// Measured with only a spread of the ends (Gloo's one-call all-reduce: which member ends last is
// chance): one member, picked from the op's key, ends the spread after the other, the same one
// in every rerun; a lag of the last caller, where measured, is what counts instead.
TEST(LastCallerLag, WhereOnlyTheEndsSpreadOneMemberPickedFromTheKeyEndsLate) {
  const testing::ScratchDir dir;
  const auto path = dir / "profile.json";
  auto spread_only = measured(0, 0);
  spread_only.inter_node_ops[0].points = {{1e6, 0.002, 0, 0.001}, {1e7, 0.011, 0, 0.003}};
  std::ofstream(path) << scenario::calibration_json(spread_only);
  const auto s = scenario_from(scenario_text(", calibration: " + path.string()));
  const auto ends = spans(s);
  // Rank 1 calls at 2 ms; the first member ends at 13 ms, the other 3 ms later.
  const double first = std::min(ends[0].second, ends[1].second);
  const double last = std::max(ends[0].second, ends[1].second);
  EXPECT_NEAR(first, 0.013, 1e-6);
  EXPECT_NEAR(last, 0.016, 1e-6);
  const auto again = spans(s);
  EXPECT_EQ(again[0].second, ends[0].second);
  EXPECT_EQ(again[1].second, ends[1].second);
  // Both measured: the last caller (rank 1) ends its lag late, whichever the key would pick.
  auto both = spread_only;
  both.inter_node_ops[0].points[1].last_caller_lag_s = 0.004;
  both.inter_node_ops[0].points[0].last_caller_lag_s = 0.001;
  std::ofstream(path) << scenario::calibration_json(both);
  const auto lagged = spans(scenario_from(scenario_text(", calibration: " + path.string())));
  EXPECT_NEAR(lagged[0].second, 0.013, 1e-6);
  EXPECT_NEAR(lagged[1].second, 0.017, 1e-6);
  // The spread interpolates as the lag does, on the measured group size only.
  const auto m =
      scenario::collective_bytes_map(*spread_only.inter_node, spread_only.inter_node_ops[0]);
  EXPECT_NEAR(m.end_spread_for(5.5e6, 2), 0.002, 1e-12);
  EXPECT_EQ(m.end_spread_for(5.5e6, 4), 0);
  EXPECT_EQ(m.last_caller_lag_for(5.5e6, 2), 0);
}

TEST(LastCallerLag, InterpolatedBetweenSizesAndOnlyForTheMeasuredGroupSize) {
  const auto m = scenario::collective_bytes_map(*measured(0.001, 0.004).inter_node,
                                                measured(0.001, 0.004).inter_node_ops[0]);
  EXPECT_NEAR(m.last_caller_lag_for(5.5e6, 2), 0.0025, 1e-12); // halfway
  EXPECT_NEAR(m.last_caller_lag_for(1e5, 2), 0.001, 1e-12);    // the nearest measured size's
  EXPECT_NEAR(m.last_caller_lag_for(1e8, 2), 0.004, 1e-12);
  EXPECT_EQ(m.last_caller_lag_for(5.5e6, 4), 0); // measured on two ranks, not four
  // Measured as none at 1 MB (written as no key) and 4 ms at 10 MB: 0 at 1 MB and below, not the
  // 10 MB point's lag lent to every size.
  const auto from_zero = scenario::collective_bytes_map(*measured(0, 0.004).inter_node,
                                                        measured(0, 0.004).inter_node_ops[0]);
  EXPECT_EQ(from_zero.last_caller_lag_for(1e5, 2), 0);
  EXPECT_NEAR(from_zero.last_caller_lag_for(5.5e6, 2), 0.002, 1e-12);
  EXPECT_EQ(
      scenario::collective_bytes_map(*measured(0, 0).inter_node, measured(0, 0).inter_node_ops[0])
          .last_caller_lag_for(5.5e6, 2),
      0);
}

TEST(LastCallerLag, SurvivesTheProfilesRoundTripAndIsChecked) {
  const testing::ScratchDir dir;
  const auto path = dir / "profile.json";
  auto c = measured(0.001, 0.004);
  std::ofstream(path) << scenario::calibration_json(c);
  const auto read = scenario::read_calibration(path.string());
  EXPECT_EQ(read.inter_node_ops.at(0).points.at(1).last_caller_lag_s, 0.004);
  EXPECT_EQ(read.inter_node->points.size(), 0u);
  c.inter_node_ops[0].points[1].end_spread_s = 0.003;
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(
      scenario::read_calibration(path.string()).inter_node_ops.at(0).points.at(1).end_spread_s,
      0.003);
  c.inter_node_ops[0].points[1].end_spread_s = 12;
  std::ofstream(path) << scenario::calibration_json(c);
  try {
    scenario::read_calibration(path.string());
    FAIL() << "a spread of 12 s was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'end_spread_s' must be at most 10"), std::string::npos)
        << e.what();
  }
  c.inter_node_ops[0].points[1].end_spread_s = 0;
  c.inter_node_ops[0].points[0].last_caller_lag_s = -0.001;
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(
      scenario::read_calibration(path.string()).inter_node_ops.at(0).points.at(0).last_caller_lag_s,
      0); // not written: negative means none
  c.inter_node_ops[0].points[0].last_caller_lag_s = 11;
  std::ofstream(path) << scenario::calibration_json(c);
  try {
    scenario::read_calibration(path.string());
    FAIL() << "a lag of 11 s was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("last_caller_lag_s"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(path.string()), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace overlapsim
