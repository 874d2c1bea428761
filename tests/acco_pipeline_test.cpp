// ACCO, ACCO-WP and DPU on the data-parallel dimension of a pipeline (issue 65, item 5): a round
// is one pass of the stage's schedule, training.grad_accum micro-batches on every stage
// (algorithms/acco.cpp); the round's communication overlaps the next pass.
#include "hw/compute_cost.h"
#include "parallel/memory.h"
#include "parallel/stage_view.h"
#include "scenario/loader.h"
#include "sim/sim_runtime.h"
#include "test_util.h"
#include "trace/metrics.h"

#include <fmt/format.h>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

// 4 A100s of one node, 8 blocks of 1M parameters and 100 GFLOP a sample, micro-batch 1: PP2 x
// DP2 (the layout's tp-dp-pp order makes GPUs 0, 1 stage 0 and GPUs 2, 3 stage 1; a stage's
// replicas are neighbours). `link`: the node's links. The blocks have no output bytes: the
// stage-to-stage messages are empty, and with no latency they cost nothing.
std::string job_yaml(const std::string& link, int grad_accum, const std::string& algorithms) {
  return fmt::format("name: accopipe\ncluster: {{nodes: 1, gpus_per_node: 4, gpu: a100-80gb, "
                     "intra_node: {}}}\nmodel:\n  layers:\n"
                     "    - {{name: b, params: 1M, fwd_flops_per_sample: 100G, repeat: 8}}\n"
                     "training: {{micro_batch: 1, seq_len: 128, grad_accum: {}, steps: 3, "
                     "warmup_steps: 1, optimizer: adamw}}\nparallelism: {{pipeline: 2}}\n"
                     "algorithms: {}\n",
                     link, grad_accum, algorithms);
}
scenario::Scenario job(const std::string& link, int grad_accum) {
  return scenario::load_scenario_text(job_yaml(link, grad_accum, "[ddp]"), "accopipe.yaml");
}
constexpr const char* kFree = "{bandwidth: 1000GB/s, latency: 0us}";
// 8 MB of a stage's gradients over 2 replicas at 1 GB/s: an all-reduce of 8 ms, a reduce-scatter
// and an all-gather of 4 ms each, a fifth of a pass at m = 4 (below).
constexpr const char* kSlow = "{bandwidth: 1GB/s, latency: 0us}";

testing::Simulated run(const scenario::Scenario& s, const char* algorithm) {
  return testing::simulate(s, algorithm);
}

// One stage's forward (or backward) seconds for a micro-batch.
double stage_seconds(const scenario::Scenario& s, bool backward) {
  const auto views = parallel::stage_views(s, parallel::ParallelLayout::of(s));
  double t = 0;
  for (const auto& l : views.front().scenario.model.spec.layers)
    t += hw::layer_seconds_per_sample(l, s.cluster.gpu, false, backward);
  return t;
}

TEST(AccoPipeline, EveryStageAccumulatesOnePassARound) {
  const int m = 4;
  const auto s = job(kSlow, m);
  for (const char* a : {"acco", "acco-wp", "dpu"}) {
    const auto r = run(s, a);
    const int rounds = std::string(a) == "acco" ? 2 : 1;
    // Every GPU (both stages, both replicas) records grad_accum micro-batches per round, rounds
    // per optimizer step, for each of the 4 steps (warm-up included).
    std::map<int, int> marks;
    for (const auto& mark : r.trace.accumulations) {
      EXPECT_EQ(mark.micro_batches, rounds * m) << a << " GPU " << mark.worker;
      ++marks[mark.worker];
    }
    ASSERT_EQ(marks.size(), 4u) << a;
    for (const auto& [gpu, n] : marks)
      EXPECT_EQ(n, 4) << a << " GPU " << gpu;
    // The forwards of step 1 on each GPU: the stage's layers, once per micro-batch of each round.
    std::map<int, int> forwards;
    for (const auto& e : r.trace.events)
      if (e.step == 1 && e.category == OpCategory::forward && e.micro_batch >= 0)
        ++forwards[e.worker];
    for (int gpu = 0; gpu < 4; ++gpu)
      EXPECT_EQ(forwards[gpu], rounds * m) << a << " GPU " << gpu;
    // DP 2 pipelines of m samples a pass: samples counted once per pipeline.
    EXPECT_NEAR(r.metrics.samples / r.metrics.steps, 2.0 * rounds * m, 1e-9) << a;
  }
}

TEST(AccoPipeline, FreeCommunicationStepIsDdpsPipelineStep) {
  // 1F1B on p = 2 stages of m = 8 micro-batches, every stage alike: the pass takes
  // (m + p - 1)(T_F + T_B) with T_B = 2 T_F (T_F = 4 x 100 GFLOP on an A100: 2.85 ms; 76.9 ms).
  // DDP adds its optimizer step on the compute stream after the pass (4M parameters x 28 bytes
  // through 2 TB/s of HBM, 56 us); DPU's and ACCO-WP's round adds two hand-off copies of the
  // stage's 4M bf16 parameters (16 MB each, 8 us) and runs the optimizer on the other stream.
  // So each of their optimizer steps (ACCO: each pass) is DDP's step within 0.5% of the pass
  // (simulated: DDP +0.15%, the others +0.07..+0.11%).
  const int m = 8, p = 2;
  const auto s = job(kFree, m);
  const double forward = stage_seconds(s, false), backward = stage_seconds(s, true);
  const double pass = (m + p - 1) * (forward + backward);
  const auto ddp = run(s, "ddp");
  fmt::print("pass {:.6g} s, ddp step {:.6g} s\n", pass, ddp.metrics.iteration_time_s);
  EXPECT_NEAR(ddp.metrics.iteration_time_s, pass, 0.005 * pass);
  for (const char* a : {"dpu", "acco-wp", "acco"}) {
    const auto r = run(s, a);
    const double per_pass = r.metrics.iteration_time_s / (std::string(a) == "acco" ? 2 : 1);
    fmt::print("{}: {:.6g} s per pass, exposed comm {:.3g} s\n", a, per_pass,
               r.metrics.exposed_comm_s);
    EXPECT_NEAR(per_pass, ddp.metrics.iteration_time_s, 0.005 * pass) << a;
    EXPECT_LT(r.metrics.exposed_comm_s, 0.001 * pass) << a;
  }
}

TEST(AccoPipeline, SlowCommunicationHidesBehindTheNextPass) {
  // m = 4: a pass of (4 + 1) x 3 x 2.85 ms = 42.7 ms. DDP's one 25 MiB bucket holds the stage's
  // 8 MB of gradients, released after the pass's last backward: its all-reduce over the 2
  // replicas (ring bus factor 2 (n - 1) / n = 1) takes 8 MB / 1 GB/s = 8 ms, all exposed.
  // ACCO's round (a reduce-scatter and an all-gather of 4 ms each) hides behind the next pass:
  // each pass within 3% of the bare pass (simulated +1.3%: the copies, the optimizer beside the
  // compute).
  const int m = 4;
  const auto s = job(kSlow, m);
  const auto ddp = run(s, "ddp");
  const double pass = (m + 1) * (stage_seconds(s, false) + stage_seconds(s, true));
  fmt::print("pass {:.6g} s; ddp {:.6g} s, exposed {:.4g} s\n", pass, ddp.metrics.iteration_time_s,
             ddp.metrics.exposed_comm_s);
  EXPECT_NEAR(ddp.metrics.exposed_comm_s, 8e-3, 0.05 * 8e-3);
  EXPECT_NEAR(ddp.metrics.iteration_time_s, pass + 8e-3, 0.01 * pass);
  for (const char* a : {"dpu", "acco-wp", "acco"}) {
    const auto r = run(s, a);
    const double per_pass = r.metrics.iteration_time_s / (std::string(a) == "acco" ? 2 : 1);
    fmt::print("{}: {:.6g} s per pass, exposed {:.4g} s\n", a, per_pass, r.metrics.exposed_comm_s);
    EXPECT_NEAR(per_pass, pass, 0.03 * pass) << a;
    EXPECT_LT(per_pass, ddp.metrics.iteration_time_s - 6e-3) << a;
    EXPECT_LT(r.metrics.exposed_comm_s, 0.001 * pass) << a;
  }
}

TEST(AccoPipeline, MemoryCountsTheHandOffBufferOfTheStageShard) {
  // Per GPU of a stage: its 4M parameters P in bf16, their gradients, AdamW's K = 12 bytes
  // (fp32 master + 2 moments) of its 1/2 shard (DP 2), as memory.h counts a sharded optimizer;
  // ACCO's buffers on top: the hand-off buffer (2P bytes), the reduced gradients' shard (2P/2)
  // and the two micro-batch counts (16 B). No pipeline receive buffers: the messages are empty.
  const auto s = job(kSlow, 4);
  const double P = 4e6;
  const auto stages = parallel::memory_per_stage(s, true);
  ASSERT_EQ(stages.size(), 2u);
  EXPECT_DOUBLE_EQ(stages[0].weights, 2 * P);
  EXPECT_DOUBLE_EQ(stages[0].grads, 2 * P);
  EXPECT_DOUBLE_EQ(stages[0].optimizer_state, 12 * P / 2);
  EXPECT_DOUBLE_EQ(stages[0].p2p_buffers, 0);
  const auto r = sim::simulate(s, scenario::AlgorithmSpec{"acco", "acco", {}, ""});
  ASSERT_EQ(r.trace.peak_memory.size(), 4u);
  for (std::size_t gpu = 0; gpu < 4; ++gpu) {
    const auto& mem = r.trace.peak_memory[gpu];
    const auto at = [&](MemoryCategory c) { return mem[static_cast<std::size_t>(c)]; };
    EXPECT_DOUBLE_EQ(at(MemoryCategory::params), stages[0].weights) << gpu;
    EXPECT_DOUBLE_EQ(at(MemoryCategory::grads), stages[0].grads) << gpu;
    EXPECT_DOUBLE_EQ(at(MemoryCategory::optimizer_state), stages[0].optimizer_state) << gpu;
    EXPECT_DOUBLE_EQ(at(MemoryCategory::buffers), 2 * P + 2 * P / 2 + 16) << gpu; // 10 MB
  }
}

TEST(AccoPipeline, TensorTimesPipelineAgreesOnTheCount) {
  // gpt-tiny on TP2 x PP2 x DP2 (8 GPUs of a node): each DP group is one (tensor, stage) pair.
  const auto s = scenario::load_scenario_text(
      "name: tp-pp\ncluster: {nodes: 1, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4}\n"
      "model: {preset: gpt-tiny, vocab: 256, d_model: 128, n_layers: 4, n_heads: 4}\ntraining: "
      "{micro_batch: 2, seq_len: 128, grad_accum: 4, "
      "steps: 2, warmup_steps: 1}\nparallelism: {tensor: 2, pipeline: 2}\nalgorithms: [ddp]\n",
      "tp-pp.yaml");
  for (const char* a : {"acco", "dpu"}) {
    const auto r = run(s, a);
    const int rounds = std::string(a) == "acco" ? 2 : 1;
    std::map<int, int> marks;
    for (const auto& mark : r.trace.accumulations) {
      EXPECT_EQ(mark.micro_batches, rounds * 4) << a << " GPU " << mark.worker;
      ++marks[mark.worker];
    }
    EXPECT_EQ(marks.size(), 8u) << a;
    // DP 2 pipelines of 4 micro-batches of 2 samples, per round.
    EXPECT_NEAR(r.metrics.samples / r.metrics.steps, 2.0 * 4 * 2 * rounds, 1e-9) << a;
    // The DP collectives join the 2 replicas of one (tensor, stage) pair.
    for (const auto& e : r.trace.events)
      if (e.category == OpCategory::comm && e.stream == StreamKind::comm && e.peer < 0) {
        EXPECT_EQ(e.group_size, 2) << a << " " << r.trace.name_of(e.name);
      }
  }
}

TEST(AccoPipeline, AnOtherCountIsRefused) {
  const auto s = job(kFree, 4);
  for (const char* option : {"min_micro_batches", "max_micro_batches"}) {
    scenario::AlgorithmSpec a{"acco", "acco", {}, "test"};
    a.options[option] = scenario::AlgorithmOption{"3", "test"};
    try {
      sim::simulate(s, a);
      ADD_FAILURE() << option << " 3 ran";
    } catch (const std::exception& e) {
      EXPECT_THAT(e.what(), HasSubstr(fmt::format("{}: 3 on a pipeline", option)));
      EXPECT_THAT(e.what(), HasSubstr("training.grad_accum = 4"));
    }
  }
  // The pipeline's own count is accepted.
  scenario::AlgorithmSpec a{"dpu", "dpu", {}, "test"};
  a.options["min_micro_batches"] = scenario::AlgorithmOption{"4", "test"};
  EXPECT_NO_THROW(sim::simulate(s, a));
}

TEST(AccoPipeline, SummarySamplesPerStep) {
  // DP 2 pipelines of grad_accum = 4 micro-batches of 1 sample a pass: DDP and DPU 8 samples a
  // step, ACCO 16 (two passes).
  overlapsim::testing::ScratchDir dir;
  const auto path = dir / "s.yaml";
  std::ofstream(path) << job_yaml(kFree, 4, "[ddp, acco, dpu]");
  const auto [rc, out] = overlapsim::testing::run(
      fmt::format("run {} --no-plots --out {}", path.string(), (dir / "out").string()));
  ASSERT_EQ(rc, 0) << out;
  const auto summary =
      nlohmann::json::parse(overlapsim::testing::slurp(dir / "out" / "summary.json"));
  std::map<std::string, double> samples;
  for (const auto& row : summary.at("results"))
    samples[row.at("algorithm").get<std::string>()] = row.at("samples_per_step").get<double>();
  EXPECT_EQ(samples, (std::map<std::string, double>{{"acco", 16}, {"ddp", 8}, {"dpu", 8}}));
  // The report says how many micro-batches a delayed round takes here.
  EXPECT_THAT(overlapsim::testing::slurp(dir / "out" / "report.md"),
              HasSubstr("apply gradients one round late, from one pass of the "
                        "pipeline's schedule a round;"));
}

} // namespace
} // namespace overlapsim
