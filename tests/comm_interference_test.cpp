// cluster.gpu.comm_interference: while a collective runs on a GPU, it takes that share of the
// GPU's compute speed (NCCL's kernels hold SMs; Gloo's threads hold cores). Pinned by hand.
#include "scenario/calibration.h"
#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// Two nodes of one 100 TFLOP/s GPU on a 10 GB/s, 10 us network. l1 (100M params, 200 MB of bf16
// gradients, its own bucket at a 200 MB cap) ends the backward; its all-reduce, 2 x (10 us +
// 100 MB / 10 GB/s) = 20.02 ms, runs while l0's 20 ms backward (1 TFLOP x 2) computes.
std::string scenario_text(const std::string& interference) {
  return R"(name: interference
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s)" +
         interference + R"(}
  inter_node: {bandwidth: 10GB/s, latency: 10us}
model:
  layers:
    - {name: l0, params: 1M, fwd_flops_per_sample: 1T}
    - {name: l1, params: 100M, fwd_flops_per_sample: 100G}
training: {micro_batch: 1, seq_len: 1, steps: 3}
algorithms: [ddp]
)";
}

double duration_of(const Trace& t, const std::string& name, int step) {
  for (const auto& e : t.events)
    if (e.worker == 0 && e.step == step && t.name_of(e.name) == name)
      return e.end - e.start;
  ADD_FAILURE() << "no event " << name;
  return 0;
}

TEST(CommInterference, ARunningCollectiveSlowsTheComputeBesideIt) {
  const std::map<std::string, std::string> options = {{"bucket_cap", "200MB"}};
  const auto free = simulate(scenario_from(scenario_text("")), "ddp", options);
  const auto slowed =
      simulate(scenario_from(scenario_text(", comm_interference: 0.25")), "ddp", options);
  // Without interference l0's backward takes its 20 ms.
  EXPECT_NEAR(duration_of(free.trace, "bwd l0", 1), 0.020, 1e-6);
  // With 0.25: for the all-reduce's 20.02 ms l0 computes at 75% (15.015 ms of work), then the
  // remaining 4.985 ms at full speed: 25.005 ms.
  EXPECT_NEAR(duration_of(slowed.trace, "bwd l0", 1), 0.025005, 1e-6);
  // The collective itself is not slowed, and forwards (nothing running beside them) are not.
  EXPECT_NEAR(duration_of(slowed.trace, "all-reduce bucket 0", 1),
              duration_of(free.trace, "all-reduce bucket 0", 1), 1e-9);
  EXPECT_NEAR(duration_of(slowed.trace, "fwd l0..l1", 1), 0.011, 1e-6);
}

TEST(CommInterference, ComesFromTheScenarioOrAMeasuredProfileAndIsBounded) {
  EXPECT_EQ(scenario_from(scenario_text("")).cluster.gpu.comm_interference, 0.0);
  EXPECT_EQ(scenario_from(scenario_text(", comm_interference: 0.3")).cluster.gpu.comm_interference,
            0.3);
  EXPECT_THROW(scenario_from(scenario_text(", comm_interference: 0.95")), std::runtime_error);
  // A profile carries it in its model section, and a scenario that loads the profile uses it.
  scenario::Calibration c;
  c.model = "interference";
  c.layers = {{"l0", 0.01, 0.02}, {"l1", 0.001, 0.002}};
  c.comm_interference = 0.125;
  const testing::ScratchDir dir;
  const auto path = dir / "interference.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(scenario::read_calibration(path.string()).comm_interference, 0.125);
  auto with_profile = scenario_text("");
  with_profile.replace(with_profile.find("training:"), 0, "  profile: " + path.string() + "\n");
  EXPECT_EQ(scenario_from(with_profile).cluster.gpu.comm_interference, 0.125);
}

} // namespace
} // namespace overlapsim
