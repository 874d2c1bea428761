// cluster.gpu.compute_interference: while a GPU computes, a transfer of its data moves at
// (1 - share) of its speed (sim/compute_interference.h; issue 30); and
// cluster.gpu.collective_handoff_wait: the first collective a stream issues after it had to wait
// for the other stream's signal starts that much later (sim/sim_worker.cpp). Pinned by hand.
#include "scenario/calibration.h"
#include "sim/child_process.h"
#include "sim/compute_interference.h"
#include "sim/platform.h"
#include "test_util.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

namespace overlapsim {
namespace {

namespace sg4 = simgrid::s4u;
using testing::scenario_from;
using testing::simulate;

// On GPU 0 of a SimGrid platform at share 0.5, a transfer whose network part takes 10 ms runs
// beside `compute_s` of compute that starts with it; returns when the transfer ends.
double transfer_end(double compute_s, double kind_share = 0.5) {
  auto cluster = testing::four_blocks_on_two_nodes(0, 1).cluster;
  cluster.gpu.compute_interference = 0.5;
  sim::ChildProcess child([&cluster, compute_s, kind_share] {
    int argc = 1;
    char name[] = "interference";
    char* argv[] = {name, nullptr};
    sg4::Engine engine(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    sim::configure_engine(engine, cluster);
    const auto platform = sim::build_platform(cluster);
    sim::ComputeInterference interference(platform, cluster.gpu.any_compute_interference());
    double done = -1;
    auto* gpu = platform.gpus[0];
    sg4::Actor::create("compute", gpu, [&] {
      interference.compute_begin(0);
      sg4::this_actor::execute(gpu->get_speed() * compute_s);
      interference.compute_end(0);
    });
    sg4::Actor::create("comm", gpu, [&] {
      const std::vector<int> members{0, 1};
      const auto since = interference.snapshot(members);
      sg4::this_actor::sleep_for(0.010); // the network's part
      interference.make_up(members, since, {kind_share, kind_share});
      done = sg4::Engine::get_clock();
    });
    engine.run();
    return std::to_string(done);
  });
  return std::stod(child.collect());
}

// 10 ms beside 10 ms of compute lost 5 ms of progress, made up after it at full speed: 15 ms.
// Beside 12 ms of compute the make-up's first 2 ms run at half speed (1 ms of progress), the
// other 4 ms at full speed: 16 ms. Beside 4 ms: 12 ms. Alone: 10 ms.
TEST(ComputeInterference, ATransferBesideComputeMakesUpTheProgressItLost) {
  EXPECT_NEAR(transfer_end(0.010), 0.015, 1e-9);
  EXPECT_NEAR(transfer_end(0.012), 0.016, 1e-9);
  EXPECT_NEAR(transfer_end(0.004), 0.012, 1e-9);
  EXPECT_NEAR(transfer_end(0.0), 0.010, 1e-9);
  // A kind measured at its own 0.25 makes up its own share: 2.5 ms after 10 ms beside compute.
  EXPECT_NEAR(transfer_end(0.010, 0.25), 0.0125, 1e-9);
  EXPECT_NEAR(transfer_end(0.010, 0.0), 0.010, 1e-9);
}

// Two nodes of one 100 TFLOP/s GPU on a 10 GB/s, 10 us network; l1's 200 MB bucket all-reduces in
// 2 x (10 us + 100 MB / 10 GB/s) = 20.02 ms beside l0's 20 ms backward (both GPUs compute it).
std::string scenario_text(const std::string& interference) {
  return R"(name: compute-interference
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s)" +
         interference + R"(}
  inter_node: {bandwidth: 10GB/s, latency: 10us}
  collectives: fused
model:
  layers:
    - {name: l0, params: 1M, fwd_flops_per_sample: 1T}
    - {name: l1, params: 100M, fwd_flops_per_sample: 100G}
training: {micro_batch: 1, seq_len: 1, steps: 3}
algorithms: [ddp]
)";
}

// GPU 0's longest all-reduce of step 1 (l1's bucket).
double bucket_all_reduce(const Trace& t) {
  double longest = 0;
  for (const auto& e : t.events)
    if (e.worker == 0 && e.step == 1 && e.stream == StreamKind::comm)
      longest = std::max(longest, e.end - e.start);
  return longest;
}

// At 0.5 the all-reduce loses half of the 20.004 ms of compute beside it (l0's backward and the
// copy of its 2 MB of gradients into its bucket, 4 MB through 1 TB/s): 20.02 + 10.002 ms.
TEST(ComputeInterference, DdpsBucketBesideTheBackwardTakesLonger) {
  const std::map<std::string, std::string> options = {{"bucket_cap", "200MB"}};
  const auto free = simulate(scenario_from(scenario_text("")), "ddp", options);
  EXPECT_NEAR(bucket_all_reduce(free.trace), 0.02002, 1e-6);
  const auto slowed =
      simulate(scenario_from(scenario_text(", compute_interference: 0.5")), "ddp", options);
  EXPECT_NEAR(bucket_all_reduce(slowed.trace), 0.030022, 1e-7);
}

TEST(ComputeInterference, ComesFromTheScenarioOrAMeasuredProfileAndIsBounded) {
  EXPECT_EQ(scenario_from(scenario_text("")).cluster.gpu.compute_interference, 0.0);
  EXPECT_EQ(
      scenario_from(scenario_text(", compute_interference: 0.3")).cluster.gpu.compute_interference,
      0.3);
  EXPECT_THROW(scenario_from(scenario_text(", compute_interference: 0.95")), std::runtime_error);
  scenario::Calibration c;
  c.model = "compute-interference";
  c.layers = {{"l0", 0.01, 0.02}, {"l1", 0.001, 0.002}};
  c.compute_interference = 0.375;
  const testing::ScratchDir dir;
  const auto path = dir / "interference.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(scenario::read_calibration(path.string()).compute_interference, 0.375);
  auto with_profile = scenario_text("");
  with_profile.replace(with_profile.find("training:"), 0, "  profile: " + path.string() + "\n");
  EXPECT_EQ(scenario_from(with_profile).cluster.gpu.compute_interference, 0.375);
}

// GPU 0's all-reduces of step 1, in the order they started: {start, end}.
std::vector<std::pair<double, double>> step_one_all_reduces(const Trace& t) {
  std::vector<std::pair<double, double>> spans;
  for (const auto& e : t.events)
    if (e.worker == 0 && e.step == 1 && e.stream == StreamKind::comm)
      spans.emplace_back(e.start, e.end);
  std::sort(spans.begin(), spans.end());
  return spans;
}

// The communication stream waits for l1's bucket while l1's backward computes: its all-reduce
// starts 300 us late, then takes its 20.02 ms. l0's bucket was released while that all-reduce ran:
// no wait for its signal, so it takes what it took without the hand-off wait. Both GPUs wait alike:
// the step, which ends after l1's bucket, takes 300 us longer, so step 1 starts 300 us later.
TEST(CollectiveHandoffWait, OnlyTheFirstCollectiveAfterWaitingForASignalWaits) {
  const std::map<std::string, std::string> options = {{"bucket_cap", "200MB"}};
  const auto free = simulate(scenario_from(scenario_text("")), "ddp", options);
  const auto waited =
      simulate(scenario_from(scenario_text(", collective_handoff_wait: 300us")), "ddp", options);
  const auto before = step_one_all_reduces(free.trace);
  const auto after = step_one_all_reduces(waited.trace);
  ASSERT_EQ(before.size(), 2U);
  ASSERT_EQ(after.size(), 2U);
  EXPECT_NEAR(before[0].second - before[0].first, 0.02002, 1e-6);
  EXPECT_NEAR(after[0].second - after[0].first, 0.02002 + 0.0003, 1e-6);
  EXPECT_NEAR(after[0].first - before[0].first, 0.0003, 1e-9);
  EXPECT_NEAR(after[1].second - after[1].first, before[1].second - before[1].first, 1e-9);
}

TEST(CollectiveHandoffWait, ComesFromTheScenarioOrAMeasuredProfileAndIsBounded) {
  EXPECT_EQ(scenario_from(scenario_text("")).cluster.gpu.collective_handoff_wait_s, 0.0);
  EXPECT_DOUBLE_EQ(scenario_from(scenario_text(", collective_handoff_wait: 250us"))
                       .cluster.gpu.collective_handoff_wait_s,
                   250e-6);
  EXPECT_THROW(scenario_from(scenario_text(", collective_handoff_wait: 2s")), std::runtime_error);
  EXPECT_THROW(scenario_from(scenario_text(", collective_handoff_wait: -1us")), std::runtime_error);
  scenario::Calibration c;
  c.model = "compute-interference";
  c.layers = {{"l0", 0.01, 0.02}, {"l1", 0.001, 0.002}};
  c.collective_handoff_wait_s = 4.5e-4;
  const testing::ScratchDir dir;
  const auto path = dir / "launch-wait.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(scenario::read_calibration(path.string()).collective_handoff_wait_s, 4.5e-4);
  auto with_profile = scenario_text("");
  with_profile.replace(with_profile.find("training:"), 0, "  profile: " + path.string() + "\n");
  EXPECT_EQ(scenario_from(with_profile).cluster.gpu.collective_handoff_wait_s, 4.5e-4);
  c.collective_handoff_wait_s = 3;
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_THROW(scenario::read_calibration(path.string()), std::runtime_error);
}

// GPU 0's comm-stream compute ops of step `step` by name: their durations, in order.
std::map<std::string, std::vector<double>> comm_stream_compute(const Trace& t, int step) {
  std::map<std::string, std::vector<double>> ops;
  for (const auto& e : t.events)
    if (e.worker == 0 && e.stream == StreamKind::comm && e.category != OpCategory::comm &&
        e.step == step)
      ops[std::string(t.name_of(e.name))].push_back(e.end - e.start);
  return ops;
}

// ACCO's communication stream waits for each round's gradients, then fills its micro-batch count
// (Algorithm 1, line 25), all-reduces it, and steps the optimizer after the reduce-scatter: the
// fill, the first compute op after the wait, takes 300 us longer; the optimizer step, after the
// fill and two collectives but no wait, takes what it took.
TEST(ComputeHandoffWait, OnlyTheFirstComputeOpAfterWaitingForASignalTakesLonger) {
  const auto free = simulate(scenario_from(scenario_text("")), "acco", {});
  const auto waited =
      simulate(scenario_from(scenario_text(", compute_handoff_wait: 300us")), "acco", {});
  const auto before = comm_stream_compute(free.trace, -1);
  const auto after = comm_stream_compute(waited.trace, -1);
  ASSERT_TRUE(before.contains("fill")) << free.trace.events.size();
  ASSERT_EQ(before.at("fill").size(), after.at("fill").size());
  for (std::size_t i = 0; i < before.at("fill").size(); ++i)
    EXPECT_NEAR(after.at("fill")[i] - before.at("fill")[i], 0.0003, 1e-9) << i;
  const auto steps_before = comm_stream_compute(free.trace, 1),
             steps_after = comm_stream_compute(waited.trace, 1);
  ASSERT_TRUE(steps_before.contains("optimizer step"));
  EXPECT_NEAR(steps_after.at("optimizer step").front(), steps_before.at("optimizer step").front(),
              1e-9);
}

TEST(ComputeHandoffWait, ComesFromTheScenarioOrAMeasuredProfileAndIsBounded) {
  EXPECT_EQ(scenario_from(scenario_text("")).cluster.gpu.compute_handoff_wait_s, 0.0);
  EXPECT_DOUBLE_EQ(scenario_from(scenario_text(", compute_handoff_wait: 12us"))
                       .cluster.gpu.compute_handoff_wait_s,
                   12e-6);
  EXPECT_THROW(scenario_from(scenario_text(", compute_handoff_wait: 2s")), std::runtime_error);
  scenario::Calibration c;
  c.model = "compute-interference";
  c.layers = {{"l0", 0.01, 0.02}, {"l1", 0.001, 0.002}};
  c.compute_handoff_wait_s = 1.25e-5;
  const testing::ScratchDir dir;
  const auto path = dir / "wake.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(scenario::read_calibration(path.string()).compute_handoff_wait_s, 1.25e-5);
  auto with_profile = scenario_text("");
  with_profile.replace(with_profile.find("training:"), 0, "  profile: " + path.string() + "\n");
  EXPECT_EQ(scenario_from(with_profile).cluster.gpu.compute_handoff_wait_s, 1.25e-5);
  c.compute_handoff_wait_s = 3;
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_THROW(scenario::read_calibration(path.string()), std::runtime_error);
}

} // namespace
} // namespace overlapsim
