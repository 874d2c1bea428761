// The simulator's pipeline schedules (issue 65.3): each stage runs the op order of
// parallel/pipeline_schedule.h, interleaved 1F1B over model chunks and ZB-H1 with its backward
// split into B and W, and the bubble it reports is the papers' closed form where communication
// costs nothing.
#include "hw/backward_split.h"
#include "hw/compute_cost.h"
#include "hw/presets.h"
#include "parallel/pipeline_schedule.h"
#include "parallel/stage_view.h"
#include "scenario/loader.h"
#include "sim/sim_runtime.h"
#include "test_util.h"
#include "trace/metrics.h"

#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace overlapsim {
namespace {

// The scenario of free_comm_job as YAML text.
std::string free_comm_yaml(const std::string& parallelism, int grad_accum) {
  std::string layers;
  for (int l = 0; l < 8; ++l)
    layers += fmt::format("    - {{name: b{}, params: 1M, fwd_flops_per_sample: 100G}}\n", l);
  return fmt::format("name: bubble\ncluster: {{nodes: 1, gpus_per_node: 4, gpu: a100-80gb, "
                     "intra_node: {{bandwidth: 1000GB/s, latency: 0us}}, collectives: fused}}\n"
                     "model:\n  layers:\n{}"
                     "training: {{micro_batch: 1, seq_len: 128, grad_accum: {}, steps: 2, "
                     "warmup_steps: 1}}\nparallelism: {}\nalgorithms: [ddp]\n",
                     layers, grad_accum, parallelism);
}

// 4 GPUs of one node, 8 blocks b0 .. b7 of 100 GFLOP a sample (backward 2x) with no output bytes:
// the stage-to-stage messages are empty and the links have no latency, so no communication costs
// anything and every stage is alike.
scenario::Scenario free_comm_job(const std::string& parallelism, int grad_accum) {
  return scenario::load_scenario_text(free_comm_yaml(parallelism, grad_accum), "bubble.yaml");
}

// A stage's forward or backward seconds for one micro-batch (all its chunks).
double stage_seconds(const parallel::StageView& v, bool backward) {
  double t = 0;
  for (const auto& l : v.scenario.model.spec.layers)
    t += hw::layer_seconds_per_sample(l, v.scenario.cluster.gpu, false, backward) *
         v.scenario.training.micro_batch;
  return t;
}

struct Case {
  const char* parallelism;
  parallel::PipelineSchedule schedule;
  int virtual_stages;
};

// Each stage's simulated bubble per step is the closed form's idle time: with fraction f of the
// makespan idle beside m (T_F + T_B) of compute, (m (T_F + T_B)) f / (1 - f).
TEST(PipelineSchedulesSim, BubbleIsTheClosedFormWithoutCommunication) {
  using parallel::PipelineSchedule;
  const int m = 8, p = 4;
  for (const Case& c : {
           Case{"{pipeline: 4, schedule: gpipe}", PipelineSchedule::gpipe, 1},
           Case{"{pipeline: 4, schedule: 1f1b}", PipelineSchedule::one_f_one_b, 1},
           Case{"{pipeline: 4, schedule: interleaved, virtual_stages: 2}",
                PipelineSchedule::interleaved, 2},
           Case{"{pipeline: 4, schedule: zero-bubble}", PipelineSchedule::zero_bubble_h1, 1},
       }) {
    const auto s = free_comm_job(c.parallelism, m);
    const auto views = parallel::stage_views(s, parallel::ParallelLayout::of(s));
    ASSERT_EQ(views.size(), 4u);
    const double forward = stage_seconds(views[0], false);
    const double backward = stage_seconds(views[0], true);
    // No op list: W is half the backward (a GEMM's two gradients), so T_F = T_B = T_W here.
    const double f = parallel::ideal_bubble_fraction(c.schedule, p, m, c.virtual_stages);
    const double compute = m * (forward + backward);
    const double expected = compute * f / (1 - f);
    const auto r = sim::simulate(s, s.algorithms.front());
    const auto metrics = compute_metrics(r.trace, s.training.warmup_steps, s.training.steps);
    ASSERT_EQ(metrics.pipeline_bubble_per_worker_s.size(), 4u);
    for (int stage = 0; stage < p; ++stage) {
      const double bubble = metrics.pipeline_bubble_per_worker_s[static_cast<std::size_t>(stage)];
      fmt::print("{}: stage {} bubble {:.6g} s, closed form {:.6g} s ({:.4f} of the makespan)\n",
                 c.parallelism, stage, bubble, expected, f);
      EXPECT_NEAR(bubble, expected, 0.01 * expected) << c.parallelism << " stage " << stage;
    }
    EXPECT_LT(metrics.exposed_comm_s + metrics.waiting_s, 1e-3 * metrics.iteration_time_s)
        << c.parallelism;
  }
}

// The ops each stage ran in step 1, in order, as the schedule's names ("F3", "B3.1", "Bi3", "W3").
std::map<int, std::vector<std::string>> ran(const sim::SimulationResult& r, int chunk_layers) {
  std::map<int, std::vector<std::string>> ops;
  for (const auto& e : r.trace.events) {
    if (e.step != 1 || e.stream != StreamKind::compute || e.micro_batch < 0 ||
        (e.category != OpCategory::forward && e.category != OpCategory::backward))
      continue;
    const std::string name = r.trace.name_of(e.name);
    // The op's first layer names its chunk: "bwd b4..b5 (input grad)" and the like.
    const auto digits = name.find_first_of("0123456789");
    const int first_layer = digits == std::string::npos ? 0 : std::stoi(name.substr(digits));
    const int chunk = first_layer / chunk_layers / 4; // 4 stages
    const char* kind = e.category == OpCategory::forward                 ? "F"
                       : name.find("(input grad)") != std::string::npos  ? "Bi"
                       : name.find("(weight grad)") != std::string::npos ? "W"
                                                                         : "B";
    ops[e.worker].push_back(chunk == 0 ? fmt::format("{}{}", kind, e.micro_batch)
                                       : fmt::format("{}{}.{}", kind, e.micro_batch, chunk));
  }
  return ops;
}

// Each stage runs exactly the schedule generator's order, whatever order the algorithm asks in.
TEST(PipelineSchedulesSim, StagesRunTheGeneratorsOrder) {
  using parallel::PipelineSchedule;
  for (const Case& c : {
           Case{"{pipeline: 4, schedule: gpipe}", PipelineSchedule::gpipe, 1},
           Case{"{pipeline: 4, schedule: interleaved, virtual_stages: 2}",
                PipelineSchedule::interleaved, 2},
           Case{"{pipeline: 4, schedule: zero-bubble}", PipelineSchedule::zero_bubble_h1, 1},
       }) {
    const auto s = free_comm_job(c.parallelism, 8);
    const auto r = sim::simulate(s, s.algorithms.front());
    const auto ops = parallel::pipeline_schedule(c.schedule, 4, 8, c.virtual_stages);
    const auto got = ran(r, 8 / (4 * c.virtual_stages));
    for (int stage = 0; stage < 4; ++stage) {
      std::vector<std::string> want;
      for (const auto& op : ops[static_cast<std::size_t>(stage)])
        want.push_back(parallel::to_string(op));
      ASSERT_TRUE(got.contains(stage)) << c.parallelism;
      EXPECT_EQ(got.at(stage), want) << c.parallelism << " stage " << stage;
    }
  }
}

// ZB-H1's W: the wgrad GEMMs and the gradients' accumulation (and the embedding table's gradient);
// everything else in a backward is B.
TEST(PipelineSchedulesSim, WeightGradientShareOfABackward) {
  const auto gpu = *hw::find_gpu_preset("h100-sxm");
  hw::LayerOps ops;
  ops.backward = {hw::gemm_op("fc dgrad", {1024, 2048, 8192}),
                  hw::gemm_op("fc wgrad", {2048, 8192, 1024}),
                  hw::memory_op("fc grad accumulate", 10.0 * 2048 * 8192),
                  hw::memory_op("gelu backward", 3.0 * 1024 * 8192 * 2)};
  EXPECT_FALSE(hw::is_weight_gradient(ops.backward[0]));
  EXPECT_TRUE(hw::is_weight_gradient(ops.backward[1]));
  EXPECT_TRUE(hw::is_weight_gradient(ops.backward[2]));
  EXPECT_FALSE(hw::is_weight_gradient(ops.backward[3]));
  EXPECT_TRUE(hw::is_weight_gradient(hw::memory_op("embedding grad scatter", 1e6)));
  const double t0 = hw::kernel_time_s(gpu, ops.backward[0]),
               t1 = hw::kernel_time_s(gpu, ops.backward[1]),
               t2 = hw::kernel_time_s(gpu, ops.backward[2]),
               t3 = hw::kernel_time_s(gpu, ops.backward[3]);
  EXPECT_DOUBLE_EQ(hw::weight_gradient_share(ops, gpu), (t1 + t2) / (t0 + t1 + t2 + t3));
  EXPECT_EQ(hw::weight_gradient_share(hw::LayerOps{}, gpu), 0.0);
}

// The data-parallel gradient communication of a layer starts only after its last weight
// gradient: under ZB-H1 after the last micro-batch's W; under interleaved 1F1B a chunk's buckets
// start once its last backward is done, beside the other chunk's remaining backwards.
TEST(PipelineSchedulesSim, DataParallelGradientsLeaveAfterTheirLastBackward) {
  for (const char* parallelism : {"{pipeline: 4, schedule: zero-bubble}",
                                  "{pipeline: 4, schedule: interleaved, virtual_stages: 2}"}) {
    // 2 nodes of 4: DP 2 over a 10 GB/s link; 50M parameters a block, a DDP bucket or more each.
    std::string layers;
    for (int l = 0; l < 8; ++l)
      layers += fmt::format("    - {{name: b{}, params: 50M, fwd_flops_per_sample: 100G}}\n", l);
    const auto s = scenario::load_scenario_text(
        fmt::format("name: dp\ncluster: {{nodes: 2, gpus_per_node: 4, gpu: a100-80gb, "
                    "intra_node: nvlink3, inter_node: {{bandwidth: 10GB/s, latency: 5us}}}}\n"
                    "model:\n  layers:\n{}"
                    "training: {{micro_batch: 1, seq_len: 128, grad_accum: 8, steps: 2, "
                    "warmup_steps: 1}}\nparallelism: {}\nalgorithms: [ddp]\n",
                    layers, parallelism),
        "dp.yaml");
    const auto r = sim::simulate(s, s.algorithms.front());
    const bool zb = std::string(parallelism).find("zero") != std::string::npos;
    for (int w = 0; w < 8; ++w) {
      double first_comm = 1e300, last_backward = 0, first_last_w = 1e300;
      for (const auto& e : r.trace.events) {
        if (e.worker != w || e.step != 1)
          continue;
        const std::string name = r.trace.name_of(e.name);
        if (e.category == OpCategory::comm && e.stream == StreamKind::comm && e.group_size == 2 &&
            e.peer < 0)
          first_comm = std::min(first_comm, e.start);
        if (e.category == OpCategory::backward) {
          last_backward = std::max(last_backward, e.end);
          if (e.micro_batch == 7 && name.find("(weight grad)") != std::string::npos)
            first_last_w = std::min(first_last_w, e.end);
        }
      }
      ASSERT_LT(first_comm, 1e300) << parallelism << " worker " << w;
      if (zb)
        EXPECT_GE(first_comm, first_last_w - 1e-12) << "worker " << w;
      else // chunk 1's gradients leave while chunk 0's last backwards run
        EXPECT_LT(first_comm, last_backward) << "worker " << w;
    }
  }
}

// The same through `run`: summary.json's pipeline_bubble_fraction_per_stage times the iteration is
// each stage's closed-form idle time (interleaved: (p-1) (T_F + T_B) / v = 3/2 (T_F + T_B)), and
// the trace names each GPU's stage and numbers its ops by micro-batch (issue 65.7).
TEST(PipelineSchedulesSim, SummaryAndTraceReportTheInterleavedBubble) {
#ifdef OVERLAPSIM_BINARY
  overlapsim::testing::ScratchDir dir;
  const std::string parallelism = "{pipeline: 4, schedule: interleaved, virtual_stages: 2}";
  std::ofstream(dir / "s.yaml") << free_comm_yaml(parallelism, 8);
  const auto [rc, out] = overlapsim::testing::run(
      fmt::format("run {} --no-plots --out {}", (dir / "s.yaml").string(), (dir / "out").string()));
  ASSERT_EQ(rc, 0) << out;
  const auto summary =
      nlohmann::json::parse(overlapsim::testing::slurp(dir / "out" / "summary.json"));
  const auto& row = summary["results"][0];
  const auto s = free_comm_job(parallelism, 8);
  const auto views = parallel::stage_views(s, parallel::ParallelLayout::of(s));
  const double pass = stage_seconds(views[0], false) + stage_seconds(views[0], true);
  const double iteration = row["iteration_time_s"].get<double>();
  ASSERT_EQ(row["pipeline_bubble_fraction_per_stage"].size(), 4u);
  for (const auto& f : row["pipeline_bubble_fraction_per_stage"])
    EXPECT_NEAR(f.get<double>() * iteration, 1.5 * pass, 0.01 * 1.5 * pass);
  EXPECT_NEAR(row["pipeline_bubble_fraction"].get<double>() * iteration, 1.5 * pass,
              0.01 * 1.5 * pass);
  const auto trace =
      nlohmann::json::parse(overlapsim::testing::slurp(dir / "out" / "trace-ddp.json"));
  std::map<int, std::string> names;
  int numbered = 0;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      names[e["pid"].get<int>()] = e["args"]["name"].get<std::string>();
    if (e["ph"] == "X" && e.contains("args") && e["args"].contains("micro_batch"))
      ++numbered;
  }
  EXPECT_EQ(names[0], "node 0 gpu 0 (stage 0, dp 0)");
  EXPECT_EQ(names[3], "node 0 gpu 3 (stage 3, dp 0)");
  // 3 steps of 8 micro-batches through 2 chunks, a forward and a backward each, on 4 GPUs.
  EXPECT_EQ(numbered, 3 * 8 * 2 * 2 * 4);
#endif
}

} // namespace
} // namespace overlapsim
