// The analysis invariants of issue 15.2 on every algorithm and every shipped scenario: the lower
// bound never exceeds the iteration time, and the critical path of the last steady-state step
// (its busy ops plus the idle gaps between them) spans the whole step.
#include "algorithms/algorithm.h"
#include "test_util.h"
#include "trace/analysis.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace overlapsim {
namespace {

void expect_invariants(const scenario::Scenario& s, const scenario::AlgorithmSpec& algorithm,
                       const std::string& what) {
  const auto result = sim::simulate(s, algorithm);
  const auto m = compute_metrics(result.trace, s.training.warmup_steps, s.training.steps);
  const auto a = analyze(result.trace, m);
  const double step = m.iteration_time_s;
  EXPECT_GT(a.lower_bound_s, 0) << what;
  EXPECT_LE(a.lower_bound_s, step * (1 + 1e-9)) << what;
  // length = busy ops on the path + idle gaps between them; the path starts inside the step.
  EXPECT_LE(a.critical_path.busy_s, a.critical_path.length_s * (1 + 1e-9)) << what;
  EXPECT_LE(a.critical_path.length_s, step * (1 + 1e-9)) << what;
  EXPECT_GE(a.critical_path.length_s, step * (1 - 1e-6)) << what;
}

TEST(AnalysisInvariants, EveryAlgorithmOnStaggeredAndStraggledClusters) {
  // The 4-stage CDP case of the issue (4 GPUs, 25M parameters and 5 ms forward per stage, 10 GB/s),
  // and a two-level cluster with a straggler and jitter.
  const auto cdp = testing::scenario_from(R"(name: cdp4
cluster:
  nodes: 1
  gpus_per_node: 4
  gpu: a100-80gb
  intra_node: {bandwidth: 10GB/s, latency: 5us}
model:
  layers:
    - {name: stage, params: 25M, fwd_flops_per_sample: 702G, activation_bytes_per_sample: 1MB, repeat: 4}
training: {micro_batch: 1, seq_len: 1, steps: 6}
algorithms: [ddp]
)");
  const auto straggled = testing::scenario_from(R"(name: lb
cluster:
  nodes: 4
  gpus_per_node: 2
  gpu: a100-80gb
  intra_node: nvlink3
  inter_node: {bandwidth: 5Gb/s, latency: 5us}
  stragglers: [{gpu: 3, slowdown: 1.5}]
  jitter: {distribution: lognormal, sigma: 0.2}
model:
  layers:
    - {name: b, params: 20M, fwd_flops_per_sample: 300G, activation_bytes_per_sample: 10MB, repeat: 8}
training: {micro_batch: 2, seq_len: 1, grad_accum: 2, steps: 3}
algorithms: [ddp]
)");
  for (const auto& name : algorithm_names()) {
    scenario::AlgorithmSpec a;
    a.name = a.label = name;
    a.where = "test";
    expect_invariants(cdp, a, "cdp4 " + name);
    expect_invariants(straggled, a, "straggled " + name);
  }
}

// scripts/sanitize.sh sets OVERLAPSIM_SANITIZED_SUBSET=1: under ASan + UBSan the full sweep below
// took 139 s of the sanitizer suite (CI's limit is 40 min for both builds and suites), repeating
// what the normal build checks in full on the same code paths. There every shipped scenario is
// still loaded (the loader under the sanitizers) and every algorithm a scenario lists is still
// simulated, once, on the smallest scenario that lists it: one spanning two nodes or more where
// there is one (inter-node collectives), then fewest GPUs, then first by file name.
bool sanitized_subset() {
  const char* v = std::getenv("OVERLAPSIM_SANITIZED_SUBSET");
  return v != nullptr && std::string(v) == "1";
}

TEST(AnalysisInvariants, EveryShippedScenario) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios"))
    if (entry.path().extension() == ".yaml")
      files.push_back(entry.path());
  std::sort(files.begin(), files.end()); // the subset's ties go by file name
  // The subset's order of preference: several nodes first, then fewer GPUs.
  const auto size = [](const scenario::Scenario& s) {
    return std::pair{s.cluster.nodes < 2, s.cluster.world_size()};
  };
  const bool subset = sanitized_subset();
  struct Pick {
    scenario::Scenario s;
    scenario::AlgorithmSpec algorithm;
    std::string what;
  };
  std::map<std::string, Pick> smallest; // by algorithm name, in the subset
  int checked = 0;
  for (const auto& path : files) {
    const auto s = scenario::load_scenario(path.string());
    for (const auto& algorithm : s.algorithms) {
      const std::string what = path.filename().string() + " " + algorithm.label;
      if (!subset) {
        expect_invariants(s, algorithm, what);
        ++checked;
        continue;
      }
      const auto it = smallest.find(algorithm.name);
      if (it == smallest.end() || size(s) < size(it->second.s))
        smallest.insert_or_assign(algorithm.name, Pick{s, algorithm, what});
    }
  }
  for (const auto& [name, pick] : smallest) {
    expect_invariants(pick.s, pick.algorithm, pick.what);
    ++checked;
  }
  EXPECT_GE(files.size(), 30u);
  EXPECT_GE(checked, subset ? 10 : 30);
}

} // namespace
} // namespace overlapsim
