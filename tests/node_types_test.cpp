// Mixed GPU types (cluster.node_types, issue 64.2; sim/node_type_compute.h, sim/type_classes.h):
// each GPU computes at its own GPU's roofline and holds its own memory, and rank classes fold one
// node per type, to the full simulation's summary.
#include "cli/run_command.h"
#include "sim/rank_classes.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

// 4 nodes x 2 GPUs (NVLink inside, Omni-Path between), GPT-Neo 125M at a short sequence; `types`
// the node_types list ("" for none).
std::string types_yaml(const std::string& gpu, const std::string& types,
                       const std::string& extra = "") {
  return "name: types\n"
         "cluster: {nodes: 4, gpus_per_node: 2, gpu: " +
         gpu + ", intra_node: nvlink3, inter_node: omnipath-100" +
         (types.empty() ? "" : ", node_types: " + types) + extra +
         "}\n"
         "model: {preset: gpt-neo-125m, dtype: bf16}\n"
         "training: {micro_batch: 2, seq_len: 256, grad_accum: 2, warmup_steps: 1, steps: 2, "
         "optimizer: adamw}\n"
         "algorithms: [ddp]\n";
}

constexpr const char* kHalf40 = "[{nodes: [2, 3], gpu: a100-40gb}]";

TEST(NodeTypes, TheKeyReadsAGpuPerListOfNodes) {
  const auto s = testing::scenario_from(types_yaml("a100-80gb", kHalf40));
  ASSERT_EQ(s.cluster.node_types.size(), 1u);
  EXPECT_EQ(s.cluster.node_types[0].nodes, (std::vector<int>{2, 3}));
  EXPECT_EQ(s.cluster.node_type_of(1), -1);
  EXPECT_EQ(s.cluster.node_type_of(3), 0);
  EXPECT_EQ(s.cluster.gpu_of_node(0).name, "a100-80gb");
  EXPECT_EQ(s.cluster.gpu_of_node(2).name, "a100-40gb");
  EXPECT_DOUBLE_EQ(s.cluster.gpu_of_node(2).memory_bytes, 40e9);
  const auto error = [](const std::string& types) {
    try {
      testing::scenario_from(types_yaml("a100-80gb", types));
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error("[{nodes: [1], gpu: h100-sxm}, {nodes: [2, 1], gpu: v100}]"),
              HasSubstr("test.yaml:2: key 'cluster.node_types.1.nodes.1': node 1 is already in "
                        "node_types entry 0"));
  EXPECT_THAT(error("[{nodes: [4], gpu: h100-sxm}]"),
              HasSubstr("key 'cluster.node_types.0.nodes.0'"));
  EXPECT_THAT(error("[{nodes: [0], gpu: no-such-gpu}]"),
              HasSubstr("key 'cluster.node_types.0.gpu'"));
}

// Every node of a type: the same run as that GPU as the cluster's, to the last digit.
TEST(NodeTypes, EachGpuComputesAtItsOwnRoofline) {
  const auto typed = testing::simulate(
      testing::scenario_from(types_yaml("a100-80gb", "[{nodes: [0, 1, 2, 3], gpu: a100-40gb}]",
                                        ", rank_classes: off")),
      "ddp");
  const auto plain = testing::simulate(
      testing::scenario_from(types_yaml("a100-40gb", "", ", rank_classes: off")), "ddp");
  const auto faster = testing::simulate(
      testing::scenario_from(types_yaml("a100-80gb", "", ", rank_classes: off")), "ddp");
  EXPECT_EQ(typed.metrics.iteration_time_s, plain.metrics.iteration_time_s);
  EXPECT_EQ(typed.metrics.compute_s_per_step, plain.metrics.compute_s_per_step);
  // The 40 GB A100's HBM (1.555 against 2.039 TB/s) slows its memory-bound kernels and steps.
  EXPECT_GT(plain.metrics.compute_s_per_step, faster.metrics.compute_s_per_step);
}

TEST(NodeTypes, OneNodePerTypeFoldsToTheFullSummary) {
  const auto s = testing::scenario_from(types_yaml("a100-80gb", kHalf40));
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  const auto rc = sim::choose_rank_classes(s, *make_algorithm(a));
  ASSERT_TRUE(rc.folded) << rc.why_full;
  // NCCL's trees over 4 nodes load nodes 1 and 2 most: 1 runs for nodes 0 and 1, 2 for 2 and 3.
  EXPECT_EQ(rc.simulated_nodes(), (std::vector<int>{1, 2}));
  EXPECT_EQ(rc.representative(0), 2);
  EXPECT_EQ(rc.representative(7), 5);

  const auto folded = testing::simulate(s, "ddp");
  const auto full = testing::simulate(
      testing::scenario_from(types_yaml("a100-80gb", kHalf40, ", rank_classes: off")), "ddp");
  EXPECT_EQ(folded.trace.workers, 4);
  const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-9 * std::abs(y); };
  EXPECT_PRED2(close, folded.metrics.iteration_time_s, full.metrics.iteration_time_s);
  EXPECT_PRED2(close, folded.metrics.compute_s_per_step, full.metrics.compute_s_per_step);
  EXPECT_PRED2(close, folded.metrics.comm_s_per_step, full.metrics.comm_s_per_step);
  EXPECT_PRED2(close, folded.metrics.waiting_s, full.metrics.waiting_s);
  EXPECT_PRED2(close, folded.metrics.exposed_comm_s, full.metrics.exposed_comm_s);
  EXPECT_PRED2(close, folded.metrics.peak_memory_bytes, full.metrics.peak_memory_bytes);
  ASSERT_EQ(folded.metrics.idle_fraction.size(), 8u);
  for (std::size_t g = 0; g < 8; ++g)
    EXPECT_NEAR(folded.metrics.idle_fraction[g], full.metrics.idle_fraction[g], 1e-9) << g;
  // The faster GPUs wait for the slower ones each step.
  EXPECT_GT(full.metrics.idle_fraction[0], full.metrics.idle_fraction[4]);

  // Each GPU's memory is its own: the row holds the 40 GB A100's, the one with the least room.
  const auto row = cli::make_row(s, "ddp", folded.trace);
  EXPECT_DOUBLE_EQ(row.gpu_memory_bytes, 40e9);
  EXPECT_DOUBLE_EQ(row.memory_available_bytes, s.cluster.gpu_of_node(2).memory_available());
}

} // namespace
} // namespace overlapsim
