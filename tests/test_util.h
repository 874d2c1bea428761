// Helpers shared by the simulator's tests: scenarios from inline YAML, one-call simulation.
#pragma once

#include "scenario/loader.h"
#include "sim/sim_runtime.h"
#include "trace/metrics.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace overlapsim::testing {

#ifdef OVERLAPSIM_BINARY
// Runs the overlapsim executable with `args` (and `env`, "NAME=value ..." before the command): its
// exit status and what it printed (both streams).
inline std::pair<int, std::string> run_shell(const std::string& command) {
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  return {WEXITSTATUS(pclose(p)), out};
}
inline std::pair<int, std::string> run(const std::string& args, const std::string& env = "") {
  return run_shell(env + " " + std::string(OVERLAPSIM_BINARY) + " " + args);
}
#endif

// A fresh directory for the running test, removed when it goes out of scope. Its name holds the
// test's name and this process's id: ctest runs every test in its own process, several at once,
// and two checkouts may run their suites on one machine, so a fixed /tmp name races.
class ScratchDir {
public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "none";
    for (char& c : name)
      if (c == '/')
        c = '_';
    path_ = std::filesystem::temp_directory_path() /
            ("overlapsim-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The loader's error for `yaml` (with --set `overrides`), or "no error".
inline std::string error_of(const std::string& yaml,
                            const std::vector<std::string>& overrides = {}) {
  try {
    scenario::load_scenario_text(yaml, "bad.yaml", overrides);
  } catch (const scenario::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

// `s` with the first `from` replaced by `to`; a test failure when `from` is absent.
inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

// The cluster of the hand calculations: GPUs of exactly 100 TFLOP/s (efficiency 1) and 1 TB/s
// HBM, 100 GB/s 1 us inside a node, 10 GB/s 10 us between nodes: every duration is a round number.
// `extra` goes at the end of the cluster map (two-space indented keys).
inline std::string round_cluster(int nodes, int gpus_per_node = 1, const std::string& extra = "") {
  return "cluster:\n  nodes: " + std::to_string(nodes) +
         "\n  gpus_per_node: " + std::to_string(gpus_per_node) +
         "\n  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s}\n"
         "  intra_node: {bandwidth: 100GB/s, latency: 1us}\n"
         "  inter_node: {bandwidth: 10GB/s, latency: 10us}\n"
         // The alpha-beta network view, whose times are hand-calculable; NCCL's protocol
         // model (the default) has tests of its own.
         "  collectives: fused\n" +
         extra;
}

// A small two-node scenario for the command-line tests: 2 x 1 A100 over 10 Gb/s, four 2M-parameter
// blocks, two steps; named `name`, running `algorithms`.
inline std::string two_node_scenario(const std::string& name,
                                     const std::string& algorithms = "[ddp]") {
  return "name: " + name + R"(
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: a100-80gb
  inter_node: {bandwidth: 10Gb/s, latency: 5us}
model:
  layers:
    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}
training: {micro_batch: 2, seq_len: 128, steps: 2}
algorithms: )" +
         algorithms + "\n";
}

// One GPU and 4 layers (embedding, 2 blocks, head) that a PyTorch profiler trace's modules map onto
// (the profiler-import tests).
inline constexpr const char* kKinetoScenario = R"(name: kineto
cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm}
model:
  layers:
    - {name: embedding, params: 1M, fwd_flops_per_sample: 1G}
    - {name: block, params: 1M, fwd_flops_per_sample: 1G, repeat: 2}
    - {name: head, params: 1M, fwd_flops_per_sample: 1G}
training: {micro_batch: 2, steps: 2}
algorithms: [ddp]
)";

// Four layers of 25M parameters and 100 GFLOP forward a sample: on round_cluster(), forward 1 ms
// and backward 2 ms each; in bf16 with AdamW the step is 100M x 28 B / 1 TB/s = 2.8 ms.
inline constexpr const char* kFourBlocks =
    "model:\n  layers:\n    - {name: block, params: 25M, fwd_flops_per_sample: 100G, repeat: 4}\n";

inline scenario::Scenario scenario_from(const std::string& yaml,
                                        const std::vector<std::string>& overrides = {}) {
  return scenario::load_scenario_text(yaml, "test.yaml", overrides);
}

// kFourBlocks on round_cluster(2), AdamW, micro-batch 1, `warmup_steps` then `steps` measured.
inline scenario::Scenario four_blocks_on_two_nodes(int warmup_steps, int steps,
                                                   const std::string& algorithms = "[ddp]") {
  return scenario_from("name: four\n" + round_cluster(2) + kFourBlocks +
                       "training: {micro_batch: 1, seq_len: 1, warmup_steps: " +
                       std::to_string(warmup_steps) + ", steps: " + std::to_string(steps) +
                       ", optimizer: adamw}\nalgorithms: " + algorithms + "\n");
}

struct Simulated {
  Trace trace;
  Metrics metrics;
};

inline Simulated simulate(const scenario::Scenario& s, const std::string& algorithm,
                          std::map<std::string, std::string> options = {}) {
  scenario::AlgorithmSpec a;
  a.name = a.label = algorithm;
  a.where = "test";
  for (auto& [k, v] : options)
    a.options[k] = scenario::AlgorithmOption{v, "test"};
  auto result = sim::simulate(s, a);
  auto metrics = compute_metrics(result.trace, s.training.warmup_steps, s.training.steps);
  return {std::move(result.trace), std::move(metrics)};
}

} // namespace overlapsim::testing
