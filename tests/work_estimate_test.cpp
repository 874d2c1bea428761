// Issue 63.5-6: the up-front estimate counts what it missed (a collective per bucket of 1 KB,
// ring-step messages, ACCO's accumulation at a slow link, a collective per layer), predicts wall
// time, and refuses past --max-time with the estimate; out of memory reads as such.
#include "cli/run_command.h"
#include "cli/work_budget.h"
#include "scenario/loader.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <new>

namespace {

namespace cli = overlapsim::cli;
using overlapsim::testing::four_blocks_on_two_nodes;
using overlapsim::testing::run;
using overlapsim::testing::ScratchDir;
using ::testing::HasSubstr;

// four_blocks_on_two_nodes: 100M parameters in bf16 (200 MB), 4 layers of 1 ms forward and 2 ms
// backward a sample (a micro-batch of 1: 12 ms), 2 nodes x 1 GPU at 10 GB/s and 10 us, 1 + 2 steps.
// Two nodes of one GPU: too few to fold (sim/rank_classes.h), both GPUs run.
constexpr double kBuckets = 200e6 / (25.0 * 1024 * 1024); // 7.63 at torch's 25 MiB

const cli::SimulationWork& work_of(const cli::WorkEstimate& e, const std::string& label) {
  for (const auto& w : e.simulations)
    if (w.label == label)
      return w;
  throw std::runtime_error("no simulation " + label);
}

TEST(WorkEstimate, ABucketOfOneKilobyteIsACollectiveEach) {
  const auto s = four_blocks_on_two_nodes(1, 2, "[{name: ddp, bucket_cap: 1KB}]");
  const auto e = cli::estimate_work(s);
  const auto& w = work_of(e, "ddp");
  EXPECT_DOUBLE_EQ(w.collectives_per_step, 200e6 / 1e3); // 200,000 buckets a step
  EXPECT_DOUBLE_EQ(w.compute_ops, 2 * 3 * (4 * 2 * 1 + 4));
  EXPECT_DOUBLE_EQ(w.collective_ops, 2 * 3 * 200e3);
  EXPECT_DOUBLE_EQ(e.ops, 72 + 1200e3);
  // 80 ms + 10 ms + 72 x 2.5 us + 1200k x 25 us (one GPU a node) + 2 cluster GPUs x 3 us.
  EXPECT_NEAR(e.seconds, 0.08 + 0.01 + 72 * 2.5e-6 + 1200e3 * 25e-6 + 2 * 3e-6, 1e-9);
  // Past 10 minutes only with many more steps: 30 s here.
  EXPECT_LT(e.seconds, cli::kDefaultMaxTimeS);
}

TEST(WorkEstimate, AccoAccumulatesForAsLongAsItsRoundCommunicates) {
  auto s = four_blocks_on_two_nodes(1, 2, "[ddp, acco]");
  // A round's all-reduce takes at least 2 x 1/2 x 200 MB / 10 GB/s + 10 us = 20.01 ms: two 12 ms
  // micro-batches a round, two rounds a step.
  auto acco = work_of(cli::estimate_work(s), "acco");
  EXPECT_DOUBLE_EQ(acco.micro_batches, 2 * 2);
  EXPECT_DOUBLE_EQ(acco.compute_ops, 2 * 3 * (4 * 2 * 4 + 4));
  EXPECT_DOUBLE_EQ(work_of(cli::estimate_work(s), "ddp").micro_batches, 1);
  // At 1 kB/s: 200,000 s a round, ceil(200,000.00001 / 0.012) = 16,666,667 micro-batches.
  s = overlapsim::testing::scenario_from(
      "name: four\n" + overlapsim::testing::round_cluster(2) + overlapsim::testing::kFourBlocks +
          "training: {micro_batch: 1, seq_len: 1, warmup_steps: 1, steps: 2}\n"
          "algorithms: [acco, {name: acco, label: capped, max_micro_batches: 100}]\n",
      {"cluster.inter_node.bandwidth=1kB/s"});
  const auto e = cli::estimate_work(s);
  EXPECT_DOUBLE_EQ(work_of(e, "acco").micro_batches, 2 * 16666667.0);
  EXPECT_DOUBLE_EQ(work_of(e, "capped").micro_batches, 2 * 100);
  EXPECT_DOUBLE_EQ(e.ops, 2 * (3 * (4 * 2 * 2 * 16666667.0 + 4) + 3 * kBuckets));
  EXPECT_THROW(cli::check_work_budget(s, false), std::invalid_argument);
}

TEST(WorkEstimate, RingStepsCountEveryMessage) {
  // 4 nodes x 1 GPU, collectives: steps (every GPU runs): a flat ring's 2 x 3 messages per
  // all-reduce; 4 x 2 GPUs: the two-level rings' 2 x (1 + 3).
  auto s = overlapsim::testing::scenario_from(
      "name: steps\n" + overlapsim::testing::round_cluster(4) + overlapsim::testing::kFourBlocks +
          "training: {micro_batch: 1, seq_len: 1, warmup_steps: 1, steps: 2}\nalgorithms: [ddp]\n",
      {"cluster.collectives=steps"});
  auto w = work_of(cli::estimate_work(s), "ddp");
  EXPECT_DOUBLE_EQ(w.gpus, 4);
  EXPECT_DOUBLE_EQ(w.messages, 4 * 3 * kBuckets * 6);
  EXPECT_NEAR(w.message_seconds, 2e-6 * std::pow(4, 0.4), 1e-15);
  EXPECT_NEAR(cli::predicted_seconds(w),
              0.01 + 4 * 3 * 12 * 2.5e-6 + 4 * 3 * kBuckets * 25e-6 + 4 * 3e-6 +
                  4 * 3 * kBuckets * 6 * 2e-6 * std::pow(4, 0.4),
              1e-12);
  // Memory: 110 B per GPU pair with ring steps.
  EXPECT_DOUBLE_EQ(cli::estimate_work(s).gpu_pair_bytes, 110);
  s.cluster.gpus_per_node = 2;
  w = work_of(cli::estimate_work(s), "ddp");
  EXPECT_DOUBLE_EQ(w.messages, 8 * 3 * kBuckets * 8);
  EXPECT_DOUBLE_EQ(w.message_seconds, 2e-6);
  // 8 GPUs on 4 nodes x 2: 25 us x (1 + log2(2) / 8) a collective.
  EXPECT_NEAR(w.collective_seconds, 25e-6 * (1 + 1.0 / 8), 1e-15);
}

TEST(WorkEstimate, AscWfbpMayReduceEveryLayerOnItsOwn) {
  const auto s = overlapsim::testing::scenario_from(
      "name: layers\n" + overlapsim::testing::round_cluster(2) +
      "model:\n  layers:\n    - {name: l, params: 1k, fwd_flops_per_sample: 1G, repeat: 100000}\n"
      "training: {micro_batch: 1, seq_len: 1, warmup_steps: 1, steps: 2}\n"
      "algorithms: [asc-wfbp]\n");
  const auto e = cli::estimate_work(s);
  // 200 MB of parameters: 7.63 buckets for ddp (the reference), 100,000 collectives for ASC-WFBP.
  EXPECT_DOUBLE_EQ(work_of(e, "asc-wfbp").collectives_per_step, 100000);
  EXPECT_DOUBLE_EQ(work_of(e, "ddp (reference)").collectives_per_step, kBuckets);
  EXPECT_DOUBLE_EQ(e.ops, 2 * (3 * (100000 * 2 + 4) + 3 * 100000));
}

TEST(WorkEstimate, ACollectiveOnAFoldedClusterCountsOneNode) {
  auto s = overlapsim::testing::scenario_from(
      "name: c\n" + overlapsim::testing::round_cluster(16384, 8) +
      overlapsim::testing::kFourBlocks +
      "training: {micro_batch: 1, seq_len: 1}\nalgorithms: [ddp]\n");
  auto e = cli::estimate_collective_work(s, overlapsim::CollectiveOp::all_reduce, 21);
  EXPECT_DOUBLE_EQ(e.gpus, 8);
  EXPECT_EQ(e.simulations.size(), 21u);
  EXPECT_NEAR(e.seconds, 0.08 + 21 * (0.01 + 8 * 25e-6 * (1 + 3.0 / 8) + 131072 * 3e-6), 1e-9);
  // A broadcast has a root: every GPU runs.
  e = cli::estimate_collective_work(s, overlapsim::CollectiveOp::broadcast, 1);
  EXPECT_DOUBLE_EQ(e.gpus, 131072);
}

// Issue 65.6: a 3D-parallel job folds to one pipeline's nodes (Llama-2 70B TP8 x PP4 on 2,048
// nodes: 4 nodes of 8 GPUs), and a straggler's pipeline adds its own 4.
TEST(WorkEstimate, AThreeDJobCountsTheFoldedPipelines) {
  const std::string path =
      std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/large/llama2-70b-tp8-pp4-2048x8-h100.yaml";
  auto e = cli::estimate_work(overlapsim::scenario::load_scenario(path));
  EXPECT_DOUBLE_EQ(work_of(e, "ddp").gpus, 32);
  EXPECT_DOUBLE_EQ(work_of(e, "ddp").world, 16384);
  e = cli::estimate_work(overlapsim::scenario::load_scenario(
      path, {"cluster.stragglers=[{gpu: 100, slowdown: 1.5}]"}));
  EXPECT_DOUBLE_EQ(work_of(e, "zero1").gpus, 64);
}

TEST(WorkEstimate, MaxTimeParsesDurationsAndNamesItself) {
  EXPECT_DOUBLE_EQ(cli::parse_max_time(""), 600);
  EXPECT_DOUBLE_EQ(cli::parse_max_time("2h"), 7200);
  EXPECT_DOUBLE_EQ(cli::parse_max_time("90s"), 90);
  try {
    cli::parse_max_time("lots");
    ADD_FAILURE() << "expected an error";
  } catch (const std::invalid_argument& e) {
    EXPECT_THAT(e.what(), HasSubstr("--max-time 'lots'"));
  }
  EXPECT_THROW(cli::parse_max_time("-5s"), std::invalid_argument);
}

TEST(WorkEstimate, OutOfMemoryErrorsCarryTheEstimate) {
  const auto s = four_blocks_on_two_nodes(1, 2);
  const std::string child =
      cli::out_of_memory_error(s, std::runtime_error("simulation of 'ddp' failed: GPU 3 "
                                                     "(communication stream) at t = 1 s: out of "
                                                     "memory (std::bad_alloc)"));
  EXPECT_THAT(child, HasSubstr("out of memory (std::bad_alloc) (estimated before the run: about"));
  EXPECT_THAT(child, HasSubstr("of address space"));
  EXPECT_THAT(cli::out_of_memory_error(s, std::bad_alloc()),
              HasSubstr("out of memory while reading the simulation's results back"));
  EXPECT_EQ(cli::out_of_memory_error(s, std::runtime_error("deadlock")), "deadlock");
}

// The refusals, from the command line: each names the estimate and --max-time, exits 1, and
// writes nothing.
TEST(WorkEstimate, CommandsPastMaxTimeAreRefusedWithTheEstimate) {
  const ScratchDir dir;
  std::ofstream(dir / "s.yaml") << "name: s\n"
                                << overlapsim::testing::round_cluster(1024)
                                << "  rank_classes: off\n"
                                << overlapsim::testing::kFourBlocks
                                << "training: {micro_batch: 1, seq_len: 1, steps: 50}\n"
                                   "algorithms: [ddp]\n";
  const std::string scenario = (dir / "s.yaml").string();
  auto r = run("run " + scenario + " --no-plots --out " + (dir / "o").string() + " --max-time 1s");
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("s.yaml: the command would take about"));
  EXPECT_THAT(r.second, HasSubstr("ddp: 1.024k GPUs x 51 steps"));
  EXPECT_THAT(r.second, HasSubstr("past --max-time 1 s"));
  EXPECT_FALSE(std::filesystem::exists(dir / "o"));
  r = run("run " + scenario + " --max-time soon");
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("--max-time 'soon'"));
  // A million-point sweep, before any point is loaded.
  std::string values = "1";
  for (int i = 2; i <= 1000; ++i)
    values += fmt::format(",{}", i); // "," + string: GCC 12 warns falsely (-Wrestrict)
  r = run("sweep " + scenario + " --out " + (dir / "w").string() + " --vary seed=" + values +
          " --vary training.steps=" + values);
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("1M points x (2 ms to load"));
  EXPECT_THAT(r.second, HasSubstr("past --max-time 10 min"));
  r = run("collective " + scenario + " --op broadcast --size 1K:1G --max-time 1ms");
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("21 size(s) x 1.024k GPUs x 1 collective"));
  EXPECT_THAT(r.second, HasSubstr("past --max-time 1 ms"));
}

} // namespace
