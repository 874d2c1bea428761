// Tensor and pipeline parallelism in the simulator (issue 65): each GPU runs its stage's layers at
// its tensor-parallel shard, its TP collectives priced by comm/, micro-batches cross stages by
// GPipe's or 1F1B's order, and the data-parallel algorithm sees its DP group as the world.
#include "hw/compute_cost.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/stage_view.h"
#include "scenario/loader.h"
#include "sim/sim_runtime.h"
#include "test_util.h"
#include "trace/metrics.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

// gpt-neo-1.3b (16 heads, d_ff 8192) on `nodes` x `gpus` H100s with NVLink 4 and NDR.
scenario::Scenario job(int nodes, int gpus, const std::string& parallelism, int grad_accum,
                       const std::vector<std::string>& overrides = {}) {
  return scenario::load_scenario_text(
      fmt::format("name: 3d\ncluster: {{nodes: {}, gpus_per_node: {}, gpu: h100-sxm, intra_node: "
                  "nvlink4, inter_node: ib-ndr}}\nmodel: {{preset: gpt-neo-1.3b}}\n"
                  "training: {{micro_batch: 1, seq_len: 1024, grad_accum: {}, steps: 3, "
                  "warmup_steps: 1}}\nparallelism: {}\nalgorithms: [ddp]\n",
                  nodes, gpus, grad_accum, parallelism),
      "3d.yaml", overrides);
}

double stage_seconds(const parallel::StageView& v, bool backward) {
  double t = 0;
  for (const auto& l : v.scenario.model.spec.layers)
    t += hw::layer_seconds_per_sample(l, v.scenario.cluster.gpu, false, backward) *
         v.scenario.training.micro_batch;
  return t;
}

TEST(TensorParallel, EachRankRunsItsShardAndItsCollectivesOnTheComputeStream) {
  const auto s = job(1, 8, "{tensor: 8}", 1);
  const auto layout = parallel::ParallelLayout::of(s);
  const auto views = parallel::stage_views(s, layout);
  ASSERT_EQ(views.size(), 1u);
  const auto& v = views.front();
  // Parameters per rank: the blocks' GEMM weights / 8, norms and biases whole.
  EXPECT_LT(v.scenario.model.spec.total_params(), s.model.spec.total_params() / 7.5);
  EXPECT_GT(v.scenario.model.spec.total_params(), s.model.spec.total_params() / 8);
  // A block's forward: 2 all-reduces of b s h bf16 values (1 x 1024 x 2048 x 2 B = 4 MiB).
  const auto& block = v.tensor_comm[1];
  EXPECT_EQ(block.forward_calls, 2);
  EXPECT_EQ(block.forward_bytes, 2 * 1024.0 * 2048 * 2);
  EXPECT_GT(block.forward_s, 0);

  const auto r = sim::simulate(s, s.algorithms.front());
  double tp_forward = 0, tp_backward = 0;
  int forward_events = 0;
  for (const auto& e : r.trace.events)
    if (e.worker == 0 && e.step == 1 && e.detail >= 0 &&
        r.trace.name_of(e.detail) == "tensor-parallel") {
      EXPECT_EQ(e.stream, StreamKind::compute);
      if (r.trace.name_of(e.name).starts_with("tensor-parallel forward"))
        tp_forward += e.end - e.start, ++forward_events;
      else
        tp_backward += e.end - e.start;
    }
  // One forward op per micro-batch; the backward's per layer range DDP runs (its buckets).
  EXPECT_EQ(forward_events, 1);
  double forward_priced = 0, backward_priced = 0;
  for (const auto& c : v.tensor_comm)
    forward_priced += c.forward_s, backward_priced += c.backward_s;
  EXPECT_NEAR(tp_forward, forward_priced, 1e-9);
  EXPECT_NEAR(tp_backward, backward_priced, 1e-9);
  // Samples counted once per pipeline: 1 micro-batch of 1 sample a step for the whole job.
  const auto m = compute_metrics(r.trace, s.training.warmup_steps, s.training.steps);
  EXPECT_NEAR(m.samples / m.steps, 1.0, 1e-9);
}

TEST(PipelineParallel, OneFOneBStepIsTheScheduleMakespanPlusTheOptimizer) {
  // 4 stages on 4 GPUs of a node, 8 micro-batches, DP 1: DDP is single-device training per stage.
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const auto s = job(1, 4, fmt::format("{{pipeline: 4, schedule: {}}}", schedule), 8);
    const auto layout = parallel::ParallelLayout::of(s);
    const auto views = parallel::stage_views(s, layout);
    parallel::StageDurations d;
    for (const auto& v : views)
      d.push_back({parallel::ChunkDurations{stage_seconds(v, false), stage_seconds(v, true), 0}});
    const auto ops =
        parallel::pipeline_schedule(parallel::parse_pipeline_schedule(schedule), 4, 8, 1);
    // A message of b s h bf16 values over NVLink 4: its latency and bytes at 360 GB/s.
    const double hop = 1e-6 + views[0].message_bytes / s.cluster.intra_node.bandwidth_Bps;
    const auto timing = parallel::evaluate_schedule(ops, d, hop);
    const auto r = sim::simulate(s, s.algorithms.front());
    const auto m = compute_metrics(r.trace, s.training.warmup_steps, s.training.steps);
    // The step: the schedule's makespan, then each stage's optimizer step (the slowest stage's
    // bounds the next step's start), within 3%.
    EXPECT_GT(m.iteration_time_s, timing.makespan) << schedule;
    EXPECT_LT(m.iteration_time_s, timing.makespan * 1.03 + 0.01) << schedule;
    // Samples: the pipeline's 8 micro-batches of 1, counted once.
    EXPECT_NEAR(m.samples / m.steps, 8.0, 1e-9);
    // Stage 0 keeps 1F1B's p = 4 micro-batches' activations at its peak, GPipe all 8.
    const double per_mb = [&] {
      double a = 0;
      for (const auto& l : views[0].scenario.model.spec.layers)
        a += l.activation_bytes_per_sample;
      return a;
    }();
    const double kept = std::string(schedule) == "1f1b" ? 4 : 8;
    EXPECT_NEAR(r.trace.peak_memory[0][static_cast<std::size_t>(MemoryCategory::activations)],
                kept * per_mb, 1e-6 * per_mb)
        << schedule;
  }
}

// Issue 65.3: a stage's compute idle in its pipeline receives is the pipeline bubble, which the
// schedule evaluator predicts; nothing of it is left as exposed communication or waiting.
TEST(PipelineParallel, BubbleIsTheSchedulesIdleTime) {
  for (const char* schedule : {"1f1b", "gpipe"}) {
    const auto s = job(1, 4, fmt::format("{{pipeline: 4, schedule: {}}}", schedule), 8);
    const auto layout = parallel::ParallelLayout::of(s);
    const auto views = parallel::stage_views(s, layout);
    parallel::StageDurations d;
    for (const auto& v : views)
      d.push_back({parallel::ChunkDurations{stage_seconds(v, false), stage_seconds(v, true), 0}});
    const auto ops =
        parallel::pipeline_schedule(parallel::parse_pipeline_schedule(schedule), 4, 8, 1);
    const double hop = 1e-6 + views[0].message_bytes / s.cluster.intra_node.bandwidth_Bps;
    const auto timing = parallel::evaluate_schedule(ops, d, hop);
    const auto r = sim::simulate(s, s.algorithms.front());
    const auto m = compute_metrics(r.trace, s.training.warmup_steps, s.training.steps);
    ASSERT_EQ(m.pipeline_bubble_per_worker_s.size(), 4u);
    const double stage0 = m.pipeline_bubble_per_worker_s[0] / m.iteration_time_s;
    const double predicted = timing.bubble[0] / timing.makespan;
    fmt::print("{}: stage 0 {:.4f} (evaluator {:.4f}), mean {:.4f} (evaluator {:.4f}), "
               "exposed {:.3g} s, waiting {:.3g} s, bubble {:.4g} s, step {:.4g} s\n",
               schedule, stage0, predicted, m.pipeline_bubble_s / m.iteration_time_s,
               timing.bubble_fraction, m.exposed_comm_s, m.waiting_s, m.pipeline_bubble_s,
               m.iteration_time_s);
    EXPECT_NEAR(stage0, predicted, 0.03 * predicted) << schedule;
    EXPECT_LT(m.exposed_comm_s + m.waiting_s, 0.01 * m.iteration_time_s) << schedule;
    EXPECT_NEAR(m.pipeline_bubble_s / m.iteration_time_s, timing.bubble_fraction,
                0.03 * timing.bubble_fraction)
        << schedule;
  }
  // Stages alike (a 64-word vocabulary leaves the head and embedding tiny beside 6 blocks each):
  // GPipe's bubble is the papers' (p-1) / (m+p-1) = 3/11.
  const auto s = job(1, 4, "{pipeline: 4, schedule: gpipe}", 8, {"model.vocab=64"});
  const auto r = sim::simulate(s, s.algorithms.front());
  const auto m = compute_metrics(r.trace, s.training.warmup_steps, s.training.steps);
  fmt::print("gpipe, vocab 64: bubble fraction {:.4f} vs 3/11 = {:.4f}\n",
             m.pipeline_bubble_s / m.iteration_time_s, 3.0 / 11);
  EXPECT_NEAR(m.pipeline_bubble_s / m.iteration_time_s, 3.0 / 11, 0.02);
}

TEST(PipelineParallel, DataParallelAlgorithmsRunOnEachStagesReplicas) {
  // 2 nodes x 4 GPUs: pipeline 4 inside a node (tp-dp-pp puts stages 2 GPUs apart), DP 2.
  auto s = job(2, 4, "{pipeline: 4}", 4);
  for (const char* name : {"ddp", "zero1", "local-sgd", "diloco"}) {
    const auto r = sim::simulate(s, scenario::AlgorithmSpec{name, name, {}, ""});
    const auto m = compute_metrics(r.trace, s.training.warmup_steps, s.training.steps);
    EXPECT_GT(m.iteration_time_s, 0) << name;
    // DP 2 pipelines of 4 micro-batches of 1 sample.
    EXPECT_NEAR(m.samples / m.steps, 8.0, 1e-9) << name;
    // Each DP all-reduce joins the 2 replicas of a stage, never all 8 GPUs.
    for (const auto& e : r.trace.events) {
      if (e.category == OpCategory::comm && e.stream == StreamKind::comm && e.peer < 0 &&
          e.detail >= 0 && r.trace.name_of(e.detail) != "p2p") {
        EXPECT_LE(e.group_size, 2) << name << " " << r.trace.name_of(e.name);
      }
    }
  }
  // ACCO, ACCO-WP and DPU run there (tests/acco_pipeline_test.cpp); CDP's cyclic schedule does
  // not.
  for (const char* name : {"cdp-v2"}) {
    try {
      sim::simulate(s, scenario::AlgorithmSpec{name, name, {}, ""});
      ADD_FAILURE() << name << " ran on a pipeline";
    } catch (const std::exception& e) {
      EXPECT_THAT(e.what(), HasSubstr("pipeline")) << name;
    }
  }
}

TEST(PipelineParallel, ThroughTheCommandLine) {
  overlapsim::testing::ScratchDir dir;
  const auto path = dir / "s.yaml";
  std::ofstream(path) << overlapsim::testing::two_node_scenario("p");
  const auto [rc, out] = overlapsim::testing::run(fmt::format(
      "run {} --no-plots --out {} --set parallelism.pipeline=2 --set training.grad_accum=4",
      path.string(), (dir / "out").string()));
  EXPECT_EQ(rc, 0) << out;
  const auto summary = overlapsim::testing::slurp(dir / "out" / "summary.json");
  EXPECT_THAT(summary, HasSubstr("\"parallelism\""));
  EXPECT_THAT(summary, HasSubstr("\"pipeline_bubble_fraction_per_stage\""));
  EXPECT_THAT(out, HasSubstr("bubble")); // the table's column
  EXPECT_THAT(overlapsim::testing::slurp(dir / "out" / "report.md"),
              HasSubstr("| pipeline bubble |"));
  EXPECT_THAT(overlapsim::testing::slurp(dir / "out" / "summary.csv"),
              HasSubstr(",pipeline_bubble_s\n"));
}

} // namespace
} // namespace overlapsim
