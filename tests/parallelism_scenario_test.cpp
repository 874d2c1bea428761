// The scenario's `parallelism` section (issue 65): its keys, --set, the errors that name file,
// line and key, the echo in summary.json, and run/sweep's refusal until it is simulated.
#include "scenario/loader.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

namespace overlapsim::scenario {
namespace {

using overlapsim::testing::error_of;
using ::testing::HasSubstr;

// 2 nodes x 8 GPUs; llama2-7b: 32 heads, d_model 4096, d_ff 11008, 32 blocks (34 layers).
std::string scenario_with(const std::string& parallelism, int grad_accum = 8) {
  return fmt::format(R"(name: p
cluster: {{nodes: 2, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, inter_node: ib-ndr}}
model: {{preset: llama2-7b}}
training: {{micro_batch: 1, seq_len: 4096, grad_accum: {}}}
algorithms: [ddp]
{})",
                     grad_accum, parallelism);
}

std::string replace_model(std::string yaml, const std::string& preset) {
  return overlapsim::testing::replace(yaml, "llama2-7b", preset);
}

TEST(ParallelismSection, EveryKeyIsRead) {
  const auto s = load_scenario_text(scenario_with(R"(parallelism:
  tensor: 4
  sequence_parallel: true
  pipeline: 2
  schedule: interleaved
  virtual_stages: 2
  stages: [9, 8, 8, 9]
  order: tp-pp-dp
  recompute: selective
  tp_comm_overlap: true
)"),
                                    "p.yaml");
  const auto& p = s.parallelism;
  EXPECT_EQ(p.tensor, 4);
  EXPECT_TRUE(p.sequence_parallel);
  EXPECT_EQ(p.pipeline, 2);
  EXPECT_EQ(p.data_parallel(s.cluster.world_size()), 2); // 16 / (4 x 2)
  EXPECT_EQ(p.schedule, PipelineSchedule::interleaved);
  EXPECT_EQ(p.virtual_stages, 2);
  EXPECT_EQ(p.stages, (std::vector<int>{9, 8, 8, 9}));
  EXPECT_EQ(order_string(p.order), "tp-pp-dp");
  EXPECT_EQ(p.recompute, Recompute::selective);
  EXPECT_TRUE(p.tp_comm_overlap);
  EXPECT_EQ(p.tensor_where, "p.yaml:7");
  EXPECT_EQ(p.pipeline_where, "p.yaml:9");
  // TP 4 stays inside 8-GPU nodes, and recompute is simulated: no warning.
  EXPECT_TRUE(s.warnings.empty());
  EXPECT_FALSE(p.is_default());
}

TEST(ParallelismSection, DefaultsAndSet) {
  const auto plain = load_scenario_text(scenario_with(""), "p.yaml");
  EXPECT_TRUE(plain.parallelism.is_default());
  EXPECT_EQ(plain.parallelism.data_parallel(16), 16);
  EXPECT_EQ(order_string(plain.parallelism.order), "tp-dp-pp");
  EXPECT_EQ(plain.parallelism.schedule, PipelineSchedule::one_f_one_b);
  // --set makes the section where there was none, like any other key.
  const auto set = load_scenario_text(scenario_with(""), "p.yaml",
                                      {"parallelism.tensor=2", "parallelism.pipeline=4"});
  EXPECT_EQ(set.parallelism.tensor, 2);
  EXPECT_EQ(set.parallelism.pipeline, 4);
  EXPECT_EQ(set.parallelism.tensor_where, "--set parallelism.tensor");
  EXPECT_THAT(error_of(scenario_with(""), {"parallelism.tensor=3"}),
              HasSubstr("--set parallelism.tensor: key 'parallelism.tensor': 3 does not divide "
                        "the cluster's 16 GPUs"));
  // Every permutation of tp, dp, pp.
  for (const char* order : {"tp-dp-pp", "tp-pp-dp", "dp-tp-pp", "dp-pp-tp", "pp-tp-dp", "pp-dp-tp"})
    EXPECT_EQ(order_string(load_scenario_text(scenario_with(""), "p.yaml",
                                              {std::string("parallelism.order=") + order})
                               .parallelism.order),
              order);
}

TEST(ParallelismSection, ErrorsNameFileLineAndKey) {
  const auto err = [](const std::string& section, int grad_accum = 8) {
    return error_of(scenario_with("parallelism:\n" + section, grad_accum));
  };
  EXPECT_THAT(err("  tensor: 3\n"),
              HasSubstr("bad.yaml:7: key 'parallelism.tensor': 3 does not divide the cluster's 16 "
                        "GPUs"));
  EXPECT_THAT(err("  pipeline: 5\n"), HasSubstr("bad.yaml:7: key 'parallelism.pipeline': 5 does "
                                                "not divide the cluster's 16 GPUs"));
  EXPECT_THAT(err("  tensor: 8\n  pipeline: 4\n"),
              HasSubstr("bad.yaml:8: key 'parallelism.pipeline': tensor x pipeline = 8 x 4 = 32 "
                        "does not divide the cluster's 16 GPUs"));
  // d_ff 11000 = 2^3 x 1375: TP 16 divides llama2-7b's 32 heads and 4096 but not it.
  EXPECT_THAT(error_of(scenario_with("parallelism:\n  tensor: 16\n"), {"model.d_ff=11000"}),
              HasSubstr("bad.yaml:7: key 'parallelism.tensor': 16 does not divide the model's "
                        "11000 FFN size (d_ff)"));
  EXPECT_THAT(error_of(replace_model(scenario_with("parallelism: {tensor: 8}"), "gpt-neo-125m")),
              HasSubstr("key 'parallelism.tensor': 8 does not divide the model's 12 attention "
                        "heads (n_heads)"));
  // vit-b16: 12 heads, and 12 blocks between its embedding and head.
  EXPECT_THAT(error_of(replace_model(scenario_with("parallelism: {tensor: 8}"), "vit-b16")),
              HasSubstr("8 does not divide the model's 12 attention heads (n_heads)"));
  EXPECT_THAT(error_of(replace_model(scenario_with("parallelism: {pipeline: 16}"), "vit-b16")),
              HasSubstr("key 'parallelism.pipeline': 16 stages (pipeline x virtual_stages = 16 x "
                        "1) for 12 blocks"));
  EXPECT_THAT(err("  pipeline: 2\n  stages: [10, 0, 24]\n"),
              HasSubstr("bad.yaml:8: key 'parallelism.stages': expected 2 layer counts (pipeline "
                        "x virtual_stages = 2 x 1), got 3"));
  EXPECT_THAT(err("  pipeline: 2\n  stages: [34, 0]\n"),
              HasSubstr("key 'parallelism.stages': stage 1 has no layer"));
  EXPECT_THAT(err("  pipeline: 2\n  stages: [10, 10]\n"),
              HasSubstr("key 'parallelism.stages': the counts add up to 20 layers, the model has "
                        "34 (embedding and head included)"));
  EXPECT_THAT(err("  pipeline: 16\n  schedule: interleaved\n  virtual_stages: 4\n", 16),
              HasSubstr("bad.yaml:7: key 'parallelism.pipeline': 64 stages (pipeline x "
                        "virtual_stages = 16 x 4) for 32 blocks: a stage would have no layer"));
  EXPECT_THAT(err("  pipeline: 2\n  virtual_stages: 2\n"),
              HasSubstr("bad.yaml:8: key 'parallelism.virtual_stages': 2 model chunks per GPU "
                        "need schedule: interleaved (the schedule is 1f1b)"));
  EXPECT_THAT(err("  pipeline: 4\n  schedule: interleaved\n  virtual_stages: 2\n", 6),
              HasSubstr("bad.yaml:8: key 'parallelism.schedule': interleaved 1F1B needs the "
                        "micro-batches per step (training.grad_accum: 6) to be a multiple of "
                        "pipeline (4)"));
  EXPECT_THAT(err("  order: tp-dp-tp\n"),
              HasSubstr("bad.yaml:7: key 'parallelism.order': expected a permutation of tp, dp "
                        "and pp"));
  EXPECT_THAT(err("  schedule: 2f2b\n"),
              HasSubstr("key 'parallelism.schedule': expected one of gpipe, 1f1b, interleaved, "
                        "zero-bubble, got '2f2b'"));
  EXPECT_THAT(err("  recompute: some\n"),
              HasSubstr("expected one of none, selective, full, got 'some'"));
  EXPECT_THAT(err("  stages: even\n"), HasSubstr("expected one of balanced, got 'even'"));
  EXPECT_THAT(err("  data: 2\n"),
              HasSubstr("bad.yaml:7: key 'parallelism.data': unknown key; expected one of: "
                        "tensor, sequence_parallel"));
}

TEST(ParallelismSection, TensorGroupAcrossNodesWarns) {
  // 4 nodes x 4 GPUs, TP 8: each group spans two nodes.
  const auto s = load_scenario_text(
      overlapsim::testing::replace(scenario_with("parallelism: {tensor: 8}"),
                                   "nodes: 2, gpus_per_node: 8", "nodes: 4, gpus_per_node: 4"),
      "p.yaml");
  ASSERT_EQ(s.warnings.size(), 1u);
  EXPECT_THAT(s.warnings[0], HasSubstr("p.yaml:6: key 'parallelism.tensor': a TP group of 8 GPUs "
                                       "(order tp-dp-pp) spans several nodes of 4 GPUs"));
  // dp-tp-pp on 2 x 8: TP 2 with a stride of 8 pairs GPU g with g + 8, on the other node.
  const auto strided =
      load_scenario_text(scenario_with("parallelism: {tensor: 2, order: dp-tp-pp}"), "p.yaml");
  EXPECT_EQ(strided.warnings.size(), 1u);
  EXPECT_TRUE(
      load_scenario_text(scenario_with("parallelism: {tensor: 8}"), "p.yaml").warnings.empty());
}

TEST(ParallelismSection, KeysWithNoEffectWarn) {
  const auto s = load_scenario_text(scenario_with(R"(parallelism:
  sequence_parallel: true
  tp_comm_overlap: true
  schedule: gpipe
  stages: balanced
  recompute: full
)"),
                                    "p.yaml");
  ASSERT_EQ(s.warnings.size(), 4u);
  EXPECT_EQ(s.warnings[0], "p.yaml:7: key 'parallelism.sequence_parallel' has no effect: no "
                           "tensor parallelism (parallelism.tensor: 1)");
  EXPECT_THAT(s.warnings[1],
              HasSubstr("p.yaml:8: key 'parallelism.tp_comm_overlap' has no effect"));
  EXPECT_EQ(s.warnings[2], "p.yaml:9: key 'parallelism.schedule' has no effect: one pipeline "
                           "stage (parallelism.pipeline: 1)");
  EXPECT_THAT(s.warnings[3], HasSubstr("p.yaml:10: key 'parallelism.stages' has no effect"));
  // recompute runs without TP or PP too (Megatron's per-block recomputation); it has no effect
  // on a model without transformer blocks.
  const auto mlp = load_scenario_text(R"(name: p
cluster: {nodes: 1, gpus_per_node: 2, gpu: h100-sxm, intra_node: nvlink4}
model:
  layers:
    - {name: b, params: 1M, fwd_flops_per_sample: 1G}
training: {micro_batch: 1, seq_len: 128}
algorithms: [ddp]
parallelism: {recompute: selective}
)",
                                      "p.yaml");
  ASSERT_EQ(mlp.warnings.size(), 1u);
  EXPECT_THAT(mlp.warnings[0], HasSubstr("p.yaml:8: key 'parallelism.recompute' has no effect: "
                                         "not a transformer"));
  // With TP and stages they matter (and run refuses the scenario until simulated).
  const auto t = load_scenario_text(
      scenario_with("parallelism: {tensor: 2, sequence_parallel: true, pipeline: 2, schedule: "
                    "gpipe}"),
      "p.yaml");
  EXPECT_TRUE(t.warnings.empty());
}

TEST(ParallelismSection, EchoedOnlyWhenNotDefault) {
  const auto plain = to_json(load_scenario_text(scenario_with(""), "p.yaml"));
  EXPECT_FALSE(plain.contains("parallelism"));
  const auto written =
      to_json(load_scenario_text(scenario_with("parallelism: {tensor: 1, pipeline: 1}"), "p.yaml"));
  EXPECT_FALSE(written.contains("parallelism")); // the defaults, written out
  const auto j = to_json(load_scenario_text(
      scenario_with("parallelism: {tensor: 2, pipeline: 2, recompute: full}"), "p.yaml"));
  ASSERT_TRUE(j.contains("parallelism"));
  EXPECT_EQ(j["parallelism"]["tensor"], 2);
  EXPECT_EQ(j["parallelism"]["pipeline"], 2);
  EXPECT_EQ(j["parallelism"]["data"], 4);
  EXPECT_EQ(j["parallelism"]["schedule"], "1f1b");
  EXPECT_EQ(j["parallelism"]["stages"], "balanced");
  EXPECT_EQ(j["parallelism"]["order"], "tp-dp-pp");
  EXPECT_EQ(j["parallelism"]["recompute"], "full");
}

// Every schedule runs (sim/sim_worker.cpp drives each stage by parallel/pipeline_schedule.h).
TEST(ParallelismSection, RunSimulatesEverySchedule) {
#ifdef OVERLAPSIM_BINARY
  for (const char* schedule : {"interleaved", "zero-bubble"}) {
    overlapsim::testing::ScratchDir dir;
    const auto path = dir / "s.yaml";
    std::ofstream(path) << overlapsim::testing::two_node_scenario("p");
    const auto [rc, out] = overlapsim::testing::run(fmt::format(
        "run {} --no-plots --out {} --set parallelism.pipeline=2 --set "
        "parallelism.schedule={} --set training.grad_accum=4{}",
        path.string(), (dir / "out").string(), schedule,
        std::string(schedule) == "interleaved" ? " --set parallelism.virtual_stages=2" : ""));
    EXPECT_EQ(rc, 0) << schedule << out;
    EXPECT_THAT(overlapsim::testing::slurp(dir / "out" / "summary.json"),
                HasSubstr("\"pipeline_bubble_fraction_per_stage\""))
        << schedule;
  }
#endif
}

} // namespace
} // namespace overlapsim::scenario
