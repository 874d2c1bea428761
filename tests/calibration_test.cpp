// Calibration profiles: the alpha-beta fit, nccl-tests import, and how scenarios consume a
// profile (per-layer times, the optimizer's cost, fitted links) through model.profile and
// cluster.calibration.
#include "scenario/calibration.h"
#include "scenario/loader.h"
#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace overlapsim::scenario {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

// Points of an exact ring all-reduce on 4 ranks: t = 6 alpha + 1.5 S / B.
std::vector<SizeTime> ring_points(double alpha, double bandwidth) {
  std::vector<SizeTime> p;
  for (double s = 1e3; s <= 1e9; s *= 10)
    p.push_back({s, 6 * alpha + 1.5 * s / bandwidth});
  return p;
}

TEST(Calibration, FitRecoversAlphaAndBetaOfARingAllReduce) {
  const auto f = fit_alpha_beta("all_reduce", 4, ring_points(5e-6, 12.5e9));
  EXPECT_NEAR(f.latency_s, 5e-6, 1e-9);
  EXPECT_NEAR(f.bandwidth_Bps, 12.5e9, 1e3);
  EXPECT_LT(f.max_relative_residual, 1e-9);
  // reduce-scatter: (n-1) alpha + (n-1)/n S / B.
  std::vector<SizeTime> rs;
  for (double s : {1e4, 1e6, 1e8})
    rs.push_back({s, 3 * 2e-6 + 0.75 * s / 1e9});
  const auto g = fit_alpha_beta("reduce_scatter", 4, rs);
  EXPECT_NEAR(g.latency_s, 2e-6, 1e-10);
  EXPECT_NEAR(g.bandwidth_Bps, 1e9, 1);
}

TEST(Calibration, FitRejectsUnusableMeasurements) {
  EXPECT_THROW(fit_alpha_beta("all_reduce", 2, {{1e6, 1e-3}}), std::runtime_error);
  EXPECT_THROW(fit_alpha_beta("all_reduce", 2, {{1e3, 2e-3}, {1e6, 1e-3}}), std::runtime_error);
  EXPECT_THROW(fit_alpha_beta("gather", 2, ring_points(1e-6, 1e9)), std::runtime_error);
  EXPECT_THROW(fit_alpha_beta("all_reduce", 0, ring_points(1e-6, 1e9)), std::runtime_error);
}

const char* kNcclTestsLog = R"(# nThread 1 nGpus 1 minBytes 8 maxBytes 1073741824 step: 2(factor)
#
# Using devices
#  Rank  0 Group  0 Pid  10 on node1 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  1 Group  0 Pid  11 on node1 device  1 [0x0b] NVIDIA A100-SXM4-80GB
#  Rank  2 Group  0 Pid  12 on node2 device  0 [0x07] NVIDIA A100-SXM4-80GB
#  Rank  3 Group  0 Pid  13 on node2 device  1 [0x0b] NVIDIA A100-SXM4-80GB
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
     1048576        262144     float     sum      -1    156.0    6.72   10.08      0    157.0    6.68   10.02      0
    16777216       4194304     float     sum      -1   2046.0    8.20   12.30      0   2050.0    8.18   12.28      0
   268435456      67108864     float     sum      -1  32226.0    8.33   12.49      0  32230.0    8.33   12.49      0
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 11.6
)";

TEST(Calibration, ImportsAnNcclTestsLog) {
  // Rows were made from alpha = 5 us, B = 12.5 GB/s on 4 ranks: t = 30 us + 1.5 S / B.
  const auto f = import_nccl_tests(kNcclTestsLog, "log.txt", "all_reduce", 0);
  EXPECT_EQ(f.ranks, 4);
  ASSERT_EQ(f.points.size(), 3u);
  EXPECT_DOUBLE_EQ(f.points[0].bytes, 1048576);
  EXPECT_DOUBLE_EQ(f.points[0].seconds, 156e-6);
  EXPECT_NEAR(f.bandwidth_Bps, 12.5e9, 0.01 * 12.5e9);
  EXPECT_NEAR(f.latency_s, 5e-6, 1e-6);
  // The older table without the root column, and a malformed row.
  const auto g = import_nccl_tests("  1048576  262144  float  sum  156.0  6.72  10.08  0  157.0  "
                                   "6.68  10.02  0\n  16777216 4194304 float sum 2046.0 8.20 "
                                   "12.30 0 2050.0 8.18 12.28 0\n",
                                   "old.txt", "all_reduce", 4);
  EXPECT_NEAR(g.bandwidth_Bps, f.bandwidth_Bps, 0.02 * f.bandwidth_Bps);
  try {
    import_nccl_tests("#  Rank 0\n#  Rank 1\n 1048576 262144 float sum -1 abc 1 2 0 1 2 3 0\n",
                      "bad.txt", "all_reduce", 0);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.txt:3"));
  }
  EXPECT_THROW(
      import_nccl_tests(" 1048576 262144 float sum -1 156 1 2 0 1 2 3 0\n", "x", "all_reduce", 0),
      std::runtime_error); // no rank count
}

Calibration mlp_profile() {
  Calibration c;
  c.source = "test";
  c.model = "mlp";
  c.micro_batch = 8;
  c.layers = {{"fc0", 1e-3, 2e-3}, {"fc1", 3e-3, 4e-3}};
  c.optimizer_time_per_param_s = 1e-9;
  c.memory_bandwidth_Bps = 5e9;
  c.inter_node =
      fit_alpha_beta("all_reduce", 2, {{1e3, 2e-3 + 1e3 / 1e7}, {1e6, 2e-3 + 1e6 / 1e7}});
  return c;
}

TEST(Calibration, JsonRoundTrips) {
  const testing::ScratchDir dir;
  const auto path = (dir / "p.json").string();
  std::ofstream(path) << calibration_json(mlp_profile());
  const auto c = read_calibration(path);
  ASSERT_EQ(c.layers.size(), 2u);
  EXPECT_EQ(c.layers[1].name, "fc1");
  EXPECT_DOUBLE_EQ(c.layers[1].bwd_time_per_sample_s, 4e-3);
  EXPECT_DOUBLE_EQ(c.optimizer_time_per_param_s, 1e-9);
  ASSERT_TRUE(c.inter_node.has_value());
  EXPECT_NEAR(c.inter_node->bandwidth_Bps, 1e7, 1);
  EXPECT_NEAR(c.inter_node->latency_s, 1e-3, 1e-9); // 2 ms over 2(n-1) = 2 steps
  EXPECT_FALSE(c.intra_node.has_value());
  std::ofstream(path) << "{\"schema\": \"something-else\"}";
  EXPECT_THROW(read_calibration(path), std::runtime_error);
}

TEST(Calibration, ScenarioConsumesProfileAndCalibration) {
  const testing::ScratchDir dir;
  std::ofstream(dir / "profile.json") << calibration_json(mlp_profile());
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, calibration: profile.json}
model: {preset: mlp, width: 16, depth: 2, profile: profile.json}
training: {micro_batch: 8, steps: 2}
algorithms: [ddp]
)";
  const auto s = load_scenario(scenario);
  EXPECT_DOUBLE_EQ(s.model.spec.layers[0].fwd_time_per_sample_s, 1e-3);
  EXPECT_DOUBLE_EQ(s.model.spec.layers[1].bwd_time_per_sample_s, 4e-3);
  EXPECT_DOUBLE_EQ(s.model.spec.optimizer_time_per_param_s, 1e-9);
  EXPECT_DOUBLE_EQ(s.cluster.gpu.hbm_bandwidth_Bps, 5e9);
  EXPECT_NEAR(s.cluster.inter_node.bandwidth_Bps, 1e7, 1); // no inter_node key needed
  EXPECT_NEAR(s.cluster.inter_node.latency_s, 1e-3, 1e-9);
  EXPECT_EQ(s.model.profile, (dir / "profile.json").lexically_normal().string());

  // A profile of another model is an error naming the file, line and key.
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, calibration: profile.json}
model: {preset: mlp, width: 16, depth: 3, profile: profile.json}
training: {micro_batch: 8, steps: 2}
algorithms: [ddp]
)";
  try {
    load_scenario(scenario);
    FAIL() << "expected an error";
  } catch (const ScenarioError& e) {
    EXPECT_THAT(e.what(), HasSubstr("s.yaml:3"));
    EXPECT_THAT(e.what(), HasSubstr("model.profile"));
    EXPECT_THAT(e.what(), HasSubstr("2 layers, the model 3"));
  }
}

// Measured times drive the simulation: one GPU's DDP step is the profile's per-sample forward
// and backward times times the micro-batch, plus the optimizer's time per parameter.
TEST(Calibration, ProfiledTimesSetTheSimulatedStep) {
  const testing::ScratchDir dir;
  std::ofstream(dir / "profile.json") << calibration_json(mlp_profile());
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 1, gpus_per_node: 1, gpu: a100-80gb}
model: {preset: mlp, width: 16, depth: 2, profile: profile.json}
training: {micro_batch: 8, steps: 3}
algorithms: [ddp]
)";
  const auto s = load_scenario(scenario);
  const auto r = overlapsim::testing::simulate(s, "ddp");
  const double params = 2 * (16 * 16 + 16);
  EXPECT_NEAR(r.metrics.iteration_time_s, 8 * (1e-3 + 2e-3 + 3e-3 + 4e-3) + params * 1e-9, 1e-9);
}

// Per-op fits: the link is the all-reduce's (1 ms a step, 10 MB/s); a reduce-scatter measured at
// 2 ms + S/2 / 40 MB/s on 2 ranks runs with S' = S x 1e7/4e7 + 1 step x (2 - 1) ms x 1e7 / (1/2)
// = 0.25 S + 20 kB, so the link's model gives 1 ms + S'/2 / 10 MB/s = its own fitted time.
Calibration profile_with_ops() {
  auto c = mlp_profile();
  auto points = [](double latency, double bandwidth) {
    return std::vector<SizeTime>{{1e3, latency + 0.5e3 / bandwidth},
                                 {1e6, latency + 0.5e6 / bandwidth}};
  };
  c.inter_node_ops = {fit_alpha_beta("reduce_scatter", 2, points(2e-3, 4e7)),
                      fit_alpha_beta("all_gather", 2, points(5e-4, 2e7))};
  return c;
}

TEST(Calibration, EachCollectiveRunsAtItsOwnFittedTime) {
  const auto c = profile_with_ops();
  const auto m = collective_bytes_map(*c.inter_node, c.inter_node_ops[0]);
  EXPECT_NEAR(m.scale, 0.25, 1e-9);
  EXPECT_NEAR(m.offset, 2e4, 1e-3);

  const testing::ScratchDir dir;
  std::ofstream(dir / "profile.json") << calibration_json(c);
  ASSERT_EQ(read_calibration((dir / "profile.json").string()).inter_node_ops.size(), 2u);
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, calibration: profile.json}
model: {preset: mlp, width: 1024, depth: 2, dtype: fp32}
training: {micro_batch: 8, steps: 2}
algorithms: [{name: zero1, bucket_cap: 1GB}]
)";
  const auto s = load_scenario(scenario);
  const auto r = overlapsim::testing::simulate(s, "zero1", {{"bucket_cap", "1GB"}});
  const double bytes = 4.0 * 2 * (1024 * 1024 + 1024); // fp32 gradients, the full array
  int checked = 0;
  for (const auto& e : r.trace.events) {
    const auto name = r.trace.name_of(e.name);
    if (e.worker != 0 || e.category != OpCategory::comm)
      continue;
    if (name.starts_with("reduce-scatter")) {
      EXPECT_NEAR(e.end - e.start, 2e-3 + 0.5 * bytes / 4e7, 1e-6) << name;
      EXPECT_NEAR(e.bytes, 0.5 * bytes, 1); // what is sent stays the op's real volume
      ++checked;
    } else if (name.starts_with("all-gather")) {
      EXPECT_NEAR(e.end - e.start, 5e-4 + 0.5 * bytes / 2e7, 1e-6) << name;
      ++checked;
    }
  }
  EXPECT_GE(checked, 4);
}

// Gloo's pieced all-gather on loopback is flat, then steep: no alpha-beta line passes through
// its points. On the link of mlp_profile (1 ms a step, 10 MB/s) a 2-rank all-gather of an S'-byte
// array takes 1 ms + 0.5 S' / 1e7, so a point measured at T maps to S' = (T - 1 ms) x 2e7:
// 2 ms -> 2e4, 2.5 ms -> 3e4, 0.2 s -> 3.98e6; in between, straight lines; a point slower than a
// larger one's keeps the larger one's bytes (no message runs faster for being larger).
constexpr double kArray = 4.0 * 2 * (1024 * 1024 + 1024); // mlp 1024 x 2, fp32: the full array

LinkFit knee_all_gather() {
  return fit_alpha_beta("all_gather", 2,
                        {{1e4, 2e-3}, {1e6, 2.5e-3}, {2e6, 2.0e-3}, {kArray, 0.2}});
}

TEST(Calibration, MeasuredPointsMapOntoTheLinkWhereTheFitMissesThem) {
  const auto link = *mlp_profile().inter_node;
  const auto op = knee_all_gather();
  const auto m = collective_bytes_map(link, op);
  ASSERT_EQ(m.table.size(), 4u);
  EXPECT_NEAR(m.bytes_for(1e4, 2), 2e4, 1e-6);
  EXPECT_NEAR(m.bytes_for(1e6, 2), 3e4, 1e-6);
  EXPECT_NEAR(m.bytes_for(505000, 2), 2.5e4, 1e-6); // halfway between the first two points
  EXPECT_NEAR(m.bytes_for(2e6, 2), 3e4, 1e-6);      // measured faster than 1 MB: held at 1 MB's
  EXPECT_NEAR(m.bytes_for(kArray, 2), 3.98e6, 1e-3);
  EXPECT_NEAR(m.bytes_for(kArray + 1e6, 2), 3.98e6 + m.scale * 1e6, 1e-3); // the fit's slope on
  EXPECT_NEAR(m.bytes_for(5e3, 2), std::max(0.0, 2e4 - m.scale * 5e3), 1e-6);
  // Another group size was not measured: the fit's line.
  EXPECT_NEAR(m.bytes_for(kArray, 4), m.scale * kArray + m.offset, 1e-6);
  // The fit alone is far off the largest point: what the table is for.
  const double fitted = 1e-3 + 0.5 * (m.scale * kArray + m.offset) / 1e7;
  EXPECT_GT(std::abs(fitted - 0.2) / 0.2, 0.1);
}

TEST(Calibration, ZeroOnesAllGatherTakesItsMeasuredTime) {
  auto c = mlp_profile();
  c.inter_node_ops = {knee_all_gather()};
  const testing::ScratchDir dir;
  std::ofstream(dir / "profile.json") << calibration_json(c);
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, calibration: profile.json}
model: {preset: mlp, width: 1024, depth: 2, dtype: fp32}
training: {micro_batch: 8, steps: 2}
algorithms: [{name: zero1, bucket_cap: 1GB}]
)";
  const auto r =
      overlapsim::testing::simulate(load_scenario(scenario), "zero1", {{"bucket_cap", "1GB"}});
  int checked = 0;
  for (const auto& e : r.trace.events)
    if (e.worker == 0 && e.category == OpCategory::comm &&
        r.trace.name_of(e.name).starts_with("all-gather")) {
      EXPECT_NEAR(e.end - e.start, 0.2, 1e-6);
      EXPECT_NEAR(e.bytes, 0.5 * kArray, 1); // what is sent stays the op's real volume
      ++checked;
    }
  EXPECT_GE(checked, 2);
}

// The link of mlp_profile has 1 ms a step. An all-gather measured at 0.4 ms (one step) and an
// all-reduce at 1.2 ms (two steps, 0.6 ms each) lower it to 0.4 ms; a point slower than the fit
// allows leaves it. Loaded, the link carries the floor and every op still takes its measured time.
TEST(Calibration, TheLinkLatencyLetsTheFastestMeasuredPointRun) {
  auto c = mlp_profile();
  EXPECT_DOUBLE_EQ(latency_floor(*c.inter_node, {}), 1e-3);
  c.inter_node->points.push_back({8, 1.2e-3});
  c.inter_node_ops = {fit_alpha_beta("all_gather", 2, {{8, 0.4e-3}, {1e6, 0.4e-3 + 0.5e6 / 1e7}})};
  EXPECT_NEAR(latency_floor(*c.inter_node, {*c.inter_node}), 0.6e-3, 1e-12);
  EXPECT_NEAR(latency_floor(*c.inter_node, {*c.inter_node, c.inter_node_ops[0]}), 0.4e-3, 1e-12);

  const testing::ScratchDir dir;
  std::ofstream(dir / "profile.json") << calibration_json(c);
  std::ofstream(dir / "s.yaml") << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, calibration: profile.json}
model: {preset: mlp, width: 1024, depth: 2, dtype: fp32}
training: {micro_batch: 8, steps: 2}
algorithms: [ddp]
)";
  const auto s = load_scenario((dir / "s.yaml").string());
  EXPECT_NEAR(s.cluster.inter_node.latency_s, 0.4e-3, 1e-12);
  // An 8-byte all-reduce on the lowered link: 2 x 0.4 ms + S' / 1e7 = its measured 1.2 ms.
  const auto& ar = s.cluster.collective_bytes.at("all_reduce");
  EXPECT_NEAR(2 * 0.4e-3 + ar.bytes_for(8, 2) / 1e7, 1.2e-3, 1e-12);
  const auto& ag = s.cluster.collective_bytes.at("all_gather");
  EXPECT_NEAR(0.4e-3 + 0.5 * ag.bytes_for(8, 2) / 1e7, 0.4e-3, 1e-12);
  EXPECT_NEAR(0.4e-3 + 0.5 * ag.bytes_for(1e6, 2) / 1e7, 0.4e-3 + 0.5e6 / 1e7, 1e-12);
}

// A point-to-point message measured at 3 ms + S / 25 MB/s (send_recv: one step, all of S) runs
// with S' = S x 1e7 / 2.5e7 + (3 - 1) ms x 1e7 = 0.4 S + 20 kB, so one hop of the link (1 ms,
// 10 MB/s) takes its own fitted time; the bytes reported as sent stay S.
// Over one rank an op costs its measured points, interpolated; past them the fit's slope carries
// on from the nearest point, never below the fixed cost. Points in any order.
TEST(Calibration, OneRankOpsInterpolateTheirMeasuredPoints) {
  LinkFit f;
  f.op = "reduce_scatter";
  f.ranks = 1;
  f.latency_s = 5e-5;
  f.bandwidth_Bps = 4e9;
  f.points = {{4e6, 1.2e-3}, {1e3, 1e-4}, {1e6, 3e-4}};
  EXPECT_NEAR(f.local_seconds_for(2.5e6), 3e-4 + 0.5 * 0.9e-3, 1e-15);
  EXPECT_NEAR(f.local_seconds_for(8e6), 1.2e-3 + 4e6 / 4e9, 1e-15);
  EXPECT_NEAR(f.local_seconds_for(0), 1e-4 - 1e3 / 4e9, 1e-15);
  f.latency_s = 1e-4 - 1e3 / 8e9; // the floor, above the line's value at 0
  EXPECT_NEAR(f.local_seconds_for(0), f.latency_s, 1e-15);
  EXPECT_EQ(ring_shape("all_gather", 1).steps, 1.0);
  EXPECT_EQ(ring_shape("all_reduce", 1).bus_factor, 1.0);
  EXPECT_THROW(ring_shape("gather", 1), std::runtime_error);
}

// One GPU: ZeRO-1's one-bucket reduce-scatter of the mlp's 2,099,200 fp32 gradients (8,396,800 B)
// writes its shard over its input, so it takes the in-place one-rank reduce-scatter's measured
// 20 us + S / 1 TB/s = 28.3968 us, not the out-of-place one's 0.1 ms + S / 1 GB/s; the
// all-gather, which the profile did not measure over one rank, costs nothing. With only the
// out-of-place form measured, that prices it: 8.4968 ms. The calibration round-trips its local
// ops, and refuses one measured on more ranks.
TEST(Calibration, CollectivesOverOneRankTakeTheirMeasuredTime) {
  auto c = mlp_profile();
  c.inter_node.reset();
  c.local_ops = {
      fit_alpha_beta("reduce_scatter", 1, {{1e3, 1e-4 + 1e3 / 1e9}, {1e8, 1e-4 + 0.1}}),
      fit_alpha_beta("reduce_scatter", 1, {{1e3, 2e-5 + 1e3 / 1e12}, {1e8, 2e-5 + 1e-4}})};
  c.local_ops[1].in_place = true;
  EXPECT_NEAR(c.local_ops[0].latency_s, 1e-4, 1e-12);
  EXPECT_NEAR(c.local_ops[0].bandwidth_Bps, 1e9, 1);
  const testing::ScratchDir dir;
  std::ofstream(dir / "profile.json") << calibration_json(c);
  const auto read = read_calibration((dir / "profile.json").string());
  ASSERT_EQ(read.local_ops.size(), 2u);
  EXPECT_FALSE(read.local_ops[0].in_place);
  EXPECT_TRUE(read.local_ops[1].in_place);
  std::ofstream(dir / "s.yaml") << R"(name: cal
cluster: {nodes: 1, gpus_per_node: 1, gpu: a100-80gb, calibration: profile.json}
model: {preset: mlp, width: 1024, depth: 2, dtype: fp32}
training: {micro_batch: 8, steps: 2}
algorithms: [ddp]
)";
  auto expect_zero1 = [&](double reduce_scatter_s) {
    const auto r = overlapsim::testing::simulate(load_scenario((dir / "s.yaml").string()), "zero1",
                                                 {{"bucket_cap", "1GB"}});
    int reduce_scatters = 0, all_gathers = 0;
    for (const auto& e : r.trace.events) {
      const std::string name{r.trace.name_of(e.name)};
      if (e.category != OpCategory::comm)
        continue;
      if (name.starts_with("reduce-scatter")) {
        EXPECT_NEAR(e.end - e.start, reduce_scatter_s, 1e-9);
        ++reduce_scatters;
      } else if (name.starts_with("all-gather")) {
        EXPECT_EQ(e.end - e.start, 0.0);
        ++all_gathers;
      }
    }
    EXPECT_GE(reduce_scatters, 2); // one a step
    EXPECT_EQ(all_gathers, reduce_scatters);
  };
  expect_zero1(2e-5 + 8396800 / 1e12);
  c.local_ops.pop_back();
  std::ofstream(dir / "profile.json") << calibration_json(c);
  expect_zero1(1e-4 + 8396800 / 1e9);

  c.local_ops[0].ranks = 2;
  std::ofstream(dir / "profile.json") << calibration_json(c);
  try {
    read_calibration((dir / "profile.json").string());
    FAIL() << "a local op measured on 2 ranks was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("links.local_ops[0]: 'ranks' is 2, expected 1"));
  }
}

TEST(Calibration, PointToPointMessagesRunAtTheirOwnFittedTime) {
  auto c = mlp_profile();
  c.inter_node_ops = {
      fit_alpha_beta("send_recv", 2, {{1e3, 3e-3 + 1e3 / 2.5e7}, {1e6, 3e-3 + 1e6 / 2.5e7}})};
  const auto m = collective_bytes_map(*c.inter_node, c.inter_node_ops[0]);
  EXPECT_NEAR(m.scale, 0.4, 1e-9);
  EXPECT_NEAR(m.offset, 2e4, 1e-3);

  const testing::ScratchDir dir;
  std::ofstream(dir / "profile.json") << calibration_json(c);
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, calibration: profile.json}
model: {preset: mlp, width: 1024, depth: 2, dtype: fp32}
training: {micro_batch: 8, steps: 2}
algorithms: [cdp-v2]
)";
  const auto s = load_scenario(scenario);
  const auto r = overlapsim::testing::simulate(s, "cdp-v2");
  int checked = 0;
  for (const auto& e : r.trace.events) {
    if (e.category != OpCategory::comm || !(e.bytes > 0) ||
        !r.trace.name_of(e.name).starts_with("send"))
      continue;
    // A send waits for its receiver at most; the shortest ones are the transfer alone.
    EXPECT_GE(e.end - e.start, 3e-3 + e.bytes / 2.5e7 - 1e-9) << r.trace.name_of(e.name);
    ++checked;
  }
  EXPECT_GE(checked, 2);
  double shortest = 1e9, its_bytes = 0;
  for (const auto& e : r.trace.events)
    if (e.category == OpCategory::comm && e.bytes > 0 &&
        r.trace.name_of(e.name).starts_with("send") && e.end - e.start < shortest)
      shortest = e.end - e.start, its_bytes = e.bytes;
  EXPECT_NEAR(shortest, 3e-3 + its_bytes / 2.5e7, 1e-6);
}

// Issue 30.1: optimizer steps measured over shards are priced on their own points, not as a share
// of the full step: between two points on their line, beyond them in proportion.
// ACCO's estimate (uncommitted) costs its measured share of a committed step of the same shard:
// 1.25 of it here, by the work each executes.
TEST(Calibration, AccosEstimateTakesItsMeasuredShareOfAStep) {
  const testing::ScratchDir dir;
  auto profile = mlp_profile();
  profile.optimizer_estimate_ratio = 1.25;
  std::ofstream(dir / "profile.json") << calibration_json(profile);
  EXPECT_DOUBLE_EQ(read_calibration((dir / "profile.json").string()).optimizer_estimate_ratio,
                   1.25);
  const auto path = (dir / "s.yaml").string();
  std::ofstream(path) << R"(name: cal
cluster: {nodes: 1, gpus_per_node: 2, gpu: a100-80gb, intra_node: {bandwidth: 1TB/s, latency: 0us}}
model: {preset: mlp, width: 16, depth: 2, profile: profile.json, dtype: fp32}
training: {micro_batch: 8, steps: 3}
algorithms: [acco]
)";
  const auto r = overlapsim::testing::simulate(load_scenario(path), "acco");
  std::vector<double> steps, estimates;
  for (const auto& e : r.trace.events)
    if (e.worker == 0 && e.category == OpCategory::optimizer)
      (r.trace.name_of(e.name) == "optimizer estimate" ? estimates : steps).push_back(e.flops);
  ASSERT_FALSE(steps.empty());
  ASSERT_FALSE(estimates.empty());
  for (const double f : estimates)
    EXPECT_NEAR(f, 1.25 * steps.front(), 1e-9 * f);
}

TEST(Calibration, OptimizerStepsInterpolateBetweenMeasuredShards) {
  hw::ModelSpec m;
  m.optimizer_time_per_param_s = 1e-9;
  EXPECT_DOUBLE_EQ(m.measured_optimizer_seconds(1000), 1e-6); // no points: per parameter
  m.optimizer_points = {{1000, 1e-6}, {2000, 4e-6}}; // the shard fits a cache, the whole not
  EXPECT_DOUBLE_EQ(m.measured_optimizer_seconds(500), 0.5e-6); // 1e-6 x 500 / 1000
  EXPECT_DOUBLE_EQ(m.measured_optimizer_seconds(1000), 1e-6);
  EXPECT_DOUBLE_EQ(m.measured_optimizer_seconds(1500), 2.5e-6); // halfway: (1 + 4) / 2 us
  EXPECT_DOUBLE_EQ(m.measured_optimizer_seconds(4000), 8e-6);   // 4e-6 x 4000 / 2000
  // Not measured alone: the same price alone.
  EXPECT_DOUBLE_EQ(m.measured_optimizer_alone_seconds(1500), 2.5e-6);
  m.optimizer_alone_points = {{1000, 0.5e-6}, {2000, 2e-6}};
  EXPECT_DOUBLE_EQ(m.measured_optimizer_alone_seconds(1500), 1.25e-6);

  // Through a profile: DDP steps all 544 parameters, ZeRO-1 on 2 GPUs its 272.
  const testing::ScratchDir dir;
  auto profile = mlp_profile();
  profile.optimizer_points = {{272, 1e-6}, {544, 8e-6}};
  std::ofstream(dir / "profile.json") << calibration_json(profile);
  EXPECT_EQ(read_calibration((dir / "profile.json").string()).optimizer_points,
            profile.optimizer_points);
  const auto path = (dir / "s.yaml").string();
  std::ofstream(path) << R"(name: cal
cluster: {nodes: 1, gpus_per_node: 2, gpu: a100-80gb, intra_node: {bandwidth: 1TB/s, latency: 0us}}
model: {preset: mlp, width: 16, depth: 2, profile: profile.json, dtype: fp32}
training: {micro_batch: 8, steps: 3}
algorithms: [ddp]
)";
  const auto s = load_scenario(path);
  const double compute = 8 * (1e-3 + 2e-3 + 3e-3 + 4e-3);
  EXPECT_NEAR(overlapsim::testing::simulate(s, "ddp", {{"gradient_as_bucket_view", "true"}})
                  .metrics.compute_s_per_step,
              compute + 8e-6, 1e-9);
  EXPECT_NEAR(overlapsim::testing::simulate(s, "zero1").metrics.compute_s_per_step, compute + 1e-6,
              1e-9);

  // The same steps alone and the workers sharing a memory system: kept by the JSON and the
  // scenario; alone, ZeRO-1's shard takes its own price (both workers stepping at once there, the
  // contended one: sim/memory_contention.h, tests/memory_contention_test.cpp).
  profile.optimizer_alone_points = {{272, 0.5e-6}, {544, 4e-6}};
  profile.memory_shared_by = 2;
  profile.memory_ops["copy"] = {1e-6, 2e-10, 1e-10};
  std::ofstream(dir / "profile.json") << calibration_json(profile);
  const auto read = read_calibration((dir / "profile.json").string());
  EXPECT_EQ(read.optimizer_alone_points, profile.optimizer_alone_points);
  EXPECT_EQ(read.memory_shared_by, 2);
  EXPECT_DOUBLE_EQ(read.memory_ops.at("copy").alone_per_byte_s, 1e-10);
  EXPECT_DOUBLE_EQ(load_scenario(path).model.spec.memory_ops.at("copy").alone_per_byte_s, 1e-10);
  profile.memory_ops.clear();
  std::ofstream(dir / "profile.json") << calibration_json(profile);
  const auto shared = load_scenario(path);
  EXPECT_EQ(shared.model.spec.memory_shared_by, 2);
  EXPECT_DOUBLE_EQ(shared.model.spec.measured_optimizer_alone_seconds(408), 2.25e-6);
  EXPECT_NEAR(overlapsim::testing::simulate(shared, "zero1").metrics.compute_s_per_step,
              compute + 1e-6, 1e-9);
  // The workers' measured spread becomes the cluster's jitter (a one-second op's sigma, marked
  // measured in the summary's scenario) where the scenario gives none, and never replaces one it
  // gives, 'none' included.
  EXPECT_FALSE(shared.cluster.jitter.active());
  profile.compute_jitter_sigma_1s = 0.004;
  std::ofstream(dir / "profile.json") << calibration_json(profile);
  EXPECT_DOUBLE_EQ(read_calibration((dir / "profile.json").string()).compute_jitter_sigma_1s,
                   0.004);
  const auto spread = load_scenario(path);
  EXPECT_EQ(spread.cluster.jitter.distribution, JitterDistribution::lognormal);
  EXPECT_DOUBLE_EQ(spread.cluster.jitter.sigma_1s, 0.004);
  EXPECT_DOUBLE_EQ(spread.cluster.jitter.sigma, 0);
  EXPECT_TRUE(spread.cluster.jitter.measured);
  EXPECT_EQ(to_json(spread)["cluster"]["jitter"]["measured"], true);
  const auto own = load_scenario(path, {"cluster.jitter={distribution: none}"});
  EXPECT_FALSE(own.cluster.jitter.active());
  EXPECT_FALSE(to_json(own)["cluster"]["jitter"].contains("measured"));
  profile.compute_jitter_sigma_1s = 0;
  // A number of workers that is not a whole positive one names the file and the key.
  std::ofstream(dir / "bad.json")
      << R"({"schema": "overlapsim-calibration/1", "model": {"name": "m", "micro_batch": 1,
  "layers": [], "memory_shared_by": 1.5}, "links": {}})";
  try {
    read_calibration((dir / "bad.json").string());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.json: model: 'memory_shared_by' must be a whole number"));
  }

  // Points out of order or not numbers name the file and the point.
  std::ofstream(dir / "bad.json")
      << R"({"schema": "overlapsim-calibration/1", "model": {"name": "m", "micro_batch": 1,
  "layers": [], "optimizer_points": [[2000, 1e-6], [1000, 2e-6]]}, "links": {}})";
  try {
    read_calibration((dir / "bad.json").string());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("bad.json: model.optimizer_points[1]: expected parameters "
                                    "ascending"));
  }
}

// Issue 30.3: DiLoCo's outer step takes its measured price per parameter, not a copy's bandwidth.
TEST(Calibration, OuterStepTakesItsMeasuredPrice) {
  const testing::ScratchDir dir;
  auto profile = mlp_profile();
  profile.outer_step_time_per_param_s = 2e-9;
  profile.outer_step_alone_time_per_param_s = 1.5e-9;
  std::ofstream(dir / "profile.json") << calibration_json(profile);
  const auto read = read_calibration((dir / "profile.json").string());
  EXPECT_DOUBLE_EQ(read.outer_step_time_per_param_s, 2e-9);
  EXPECT_DOUBLE_EQ(read.outer_step_alone_time_per_param_s, 1.5e-9);
  const auto path = (dir / "s.yaml").string();
  std::ofstream(path) << R"(name: cal
cluster: {nodes: 1, gpus_per_node: 2, gpu: a100-80gb, intra_node: {bandwidth: 1TB/s, latency: 0us}}
model: {preset: mlp, width: 16, depth: 2, profile: profile.json, dtype: fp32}
training: {micro_batch: 8, steps: 4}
algorithms: [{name: diloco, H: 2}]
)";
  const auto r = overlapsim::testing::simulate(load_scenario(path), "diloco", {{"H", "2"}});
  int outer = 0;
  for (const auto& e : r.trace.events)
    if (r.trace.name_of(e.name) == "outer step") {
      EXPECT_NEAR(e.end - e.start, 2e-9 * 544, 1e-12); // the mlp's 544 parameters
      ++outer;
    }
  EXPECT_GE(outer, 2);
}

// Issue 30.3: an element-wise op the profile measured is priced by its own fixed cost and cost per
// byte, not the memory bandwidth. ACCO on 2 one-GPU nodes accumulates the kept gradients into its
// shard on the comm stream each correction round; priced by 5 GB/s its few KB take a microsecond.
// Measured at 1 ms a call, it takes 1 ms alone and up to 2 ms where the compute stream runs beside
// it (two activities share the GPU's host: sim/sim_worker.h).
TEST(Calibration, EachMeasuredMemoryOpHasItsOwnPrice) {
  const testing::ScratchDir dir;
  auto profile = mlp_profile();
  const auto write = [&](const Calibration& c) {
    std::ofstream(dir / "profile.json") << calibration_json(c);
  };
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, inter_node: ethernet-10g}
model: {preset: mlp, width: 16, depth: 2, profile: profile.json}
training: {micro_batch: 8, steps: 3}
algorithms: [acco]
)";
  const auto accumulate_time = [&] {
    const auto r = overlapsim::testing::simulate(load_scenario(scenario), "acco");
    for (const auto& e : r.trace.events)
      if (r.trace.name_of(e.name) == "accumulate")
        return e.end - e.start;
    ADD_FAILURE() << "no accumulate";
    return 0.0;
  };
  write(profile);
  EXPECT_LT(accumulate_time(), 2e-6);
  profile.memory_ops["accumulate"] = {1e-3, 1e-10};
  write(profile);
  // The JSON keeps it, and the simulation prices by it.
  const auto read = read_calibration((dir / "profile.json").string());
  EXPECT_DOUBLE_EQ(read.memory_ops.at("accumulate").fixed_s, 1e-3);
  EXPECT_DOUBLE_EQ(read.memory_ops.at("accumulate").per_byte_s, 1e-10);
  const double measured_price = accumulate_time();
  EXPECT_GE(measured_price, 1e-3);
  EXPECT_LE(measured_price, 2 * (1e-3 + 1e-6));
  // An op it does not know is an error naming it.
  std::ofstream(dir / "bad.json")
      << R"({"schema": "overlapsim-calibration/1", "model": {"layers": [], "memory_ops": {"transpose": {"fixed_s": 0, "per_byte_s": 0}}}})";
  try {
    read_calibration((dir / "bad.json").string());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("memory_ops.transpose: unknown op"));
  }
}

// Issue 30.3: local SGD reloads the optimizer's master copy from each averaged layer. A GPU's fp32
// training has none (nothing to price), but the real runtime's optimizer keeps one for fp32 too;
// measured, the reload is priced for fp32 models as well. mlp 16 x 2 (272 parameters a layer,
// 8 bytes each), local SGD with H = 2: every second step averages both layers.
TEST(Calibration, AMeasuredMasterReloadIsPricedForFp32ModelsToo) {
  const testing::ScratchDir dir;
  auto profile = mlp_profile();
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, inter_node: ethernet-10g}
model: {preset: mlp, width: 16, depth: 2, dtype: fp32, profile: profile.json}
training: {micro_batch: 8, steps: 4, warmup_steps: 0}
algorithms: [{name: local-sgd, H: 2}]
)";
  const auto reloads = [&] {
    std::ofstream(dir / "profile.json") << calibration_json(profile);
    const auto r =
        overlapsim::testing::simulate(load_scenario(scenario), "local-sgd", {{"H", "2"}});
    std::vector<double> out;
    for (const auto& e : r.trace.events)
      if (r.trace.name_of(e.name) == "reload master")
        out.push_back(e.end - e.start);
    return out;
  };
  EXPECT_TRUE(reloads().empty());
  profile.memory_ops["reload master"] = {1e-3, 1e-6};
  const auto priced = reloads();
  EXPECT_EQ(
      read_calibration((dir / "profile.json").string()).memory_ops.at("reload master").per_byte_s,
      1e-6);
  ASSERT_EQ(priced.size(), 8u); // 2 layers at steps 1 and 3, on each of the 2 ranks
  for (const double d : priced)
    EXPECT_NEAR(d, 1e-3 + 272 * 8 * 1e-6, 1e-9); // 3.176 ms on the comm stream, alone
}

// Issue 30.3: a replicator phase the profile measured is priced as a whole, by its fixed cost and
// cost per element, under the real runtime's name; the simulation lists the uses it ran (what the
// profile then measures). DeMo on 2 one-GPU nodes runs an encode and a decode + update over the
// whole model (mlp 16 x 2: 2 x (16 x 16 + 16) = 544 parameters) each step; without a price both
// are the memory-bound kernels of algorithms/replicator_cost.h.
TEST(Calibration, MeasuredReplicatorPhasesArePricedAsAWhole) {
  const testing::ScratchDir dir;
  auto profile = mlp_profile();
  const auto scenario = (dir / "s.yaml").string();
  std::ofstream(scenario) << R"(name: cal
cluster: {nodes: 2, gpus_per_node: 1, gpu: a100-80gb, inter_node: ethernet-10g}
model: {preset: mlp, width: 16, depth: 2, profile: profile.json}
training: {micro_batch: 8, steps: 3, warmup_steps: 1}
algorithms: [{name: demo, chunk: 16, top_k: 4}]
)";
  const auto run = [&] {
    std::ofstream(dir / "profile.json") << calibration_json(profile);
    AlgorithmSpec a;
    a.name = a.label = "demo";
    a.where = "test";
    a.options["chunk"] = AlgorithmOption{"16", "test"};
    a.options["top_k"] = AlgorithmOption{"4", "test"};
    return sim::simulate(load_scenario(scenario), a);
  };
  const auto durations = [](const sim::SimulationResult& r, const std::string& name) {
    std::vector<double> out;
    for (const auto& e : r.trace.events)
      if (r.trace.name_of(e.name) == name)
        out.push_back(e.end - e.start);
    return out;
  };
  const auto unpriced = run();
  EXPECT_TRUE(durations(unpriced, "demo encode piece 0").empty());
  EXPECT_FALSE(durations(unpriced, "dct encode").empty());
  // Both phases, exchanged over both workers, on the whole model, once per step (4 with the
  // warm-up) on each of the 2 ranks (too few to fold: sim/rank_classes.h).
  EXPECT_THAT(unpriced.simulation, HasSubstr("full"));
  ASSERT_EQ(unpriced.replicator_calls.size(), 2u);
  for (const auto& [size, calls] : unpriced.replicator_calls) {
    EXPECT_EQ(size.elements, 544);
    EXPECT_EQ(calls, 2 * 4);
    EXPECT_TRUE(size.use.exchanged);
    EXPECT_EQ(size.use.group_size, 2);
    EXPECT_EQ(size.use.config.chunk, 16);
    EXPECT_EQ(size.use.config.top_k, 4);
  }
  profile.replicator_phases["demo encode (chunk 16, top-k 4, fp32 values, 2 ranks)"] = {1e-3, 1e-6};
  profile.replicator_phases["demo decode + update (chunk 16, top-k 4, fp32 values, 2 ranks)"] = {
      2e-3, 0};
  const auto priced = run();
  const auto read = read_calibration((dir / "profile.json").string());
  EXPECT_DOUBLE_EQ(
      read.replicator_phases.at("demo encode (chunk 16, top-k 4, fp32 values, 2 ranks)")
          .per_element_s,
      1e-6);
  EXPECT_TRUE(durations(priced, "dct encode").empty());
  const auto encode = durations(priced, "demo encode piece 0");
  const auto decode = durations(priced, "demo decode + update piece 0");
  ASSERT_EQ(encode.size(), 2 * 4u);
  ASSERT_EQ(decode.size(), 2 * 4u);
  for (const double d : encode)
    // 544 elements in 3 blocks of 16 x 16: 768 transformed, 1 ms + 768 us; nothing runs beside it.
    EXPECT_NEAR(d, 1e-3 + 768 * 1e-6, 1e-9);
  for (const double d : decode)
    EXPECT_NEAR(d, 2e-3, 1e-9);
  // A price that is not a map of numbers is an error naming it.
  std::ofstream(dir / "bad.json")
      << R"j({"schema": "overlapsim-calibration/1", "model": {"layers": [], "replicator_phases": {"demo encode (no exchange)": {"fixed_s": -1, "per_element_s": 0}}}})j";
  try {
    read_calibration((dir / "bad.json").string());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("replicator_phases.demo encode (no exchange)"));
    EXPECT_THAT(e.what(), HasSubstr("'fixed_s' must be a non-negative number"));
  }
}

} // namespace
} // namespace overlapsim::scenario
