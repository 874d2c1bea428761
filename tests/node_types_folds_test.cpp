// Mixed GPU types (cluster.node_types) with 3D parallelism, WAN sites and statistical rank
// classes (issue 64.2 and 64.5; sim/node_type_compute.h's node_type_stages, sim/type_classes.h):
// each GPU runs its stage's layers at its own GPU's cost, the pipeline waits for its slowest
// stage; rank classes run one node group (pipeline) per pattern of GPU types, fold sites typed
// alike, and draw each type's slowest GPUs with an extreme of that type (of each type pattern,
// a replica, with a pipeline).
#include "parallel/pipeline_schedule.h"
#include "scenario/collective_shape.h"
#include "sim/rank_classes.h"
#include "sim/statistical_fold.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

// 2 nodes x 1 GPU of exactly 100 TFLOP/s, a pipeline of 2 stages (node 0 stage 0, node 1 stage
// 1), four layers of 1 TFLOP forward per sample (10 ms at 100 TFLOP/s, backward 20 ms), GPipe
// over 4 micro-batches of 1 sample; `types` the node_types list ("" for none).
std::string pipeline_yaml(const std::string& types) {
  return R"(name: typed-pipeline
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s}
  intra_node: {bandwidth: 100GB/s, latency: 1us}
  inter_node: {bandwidth: 10GB/s, latency: 10us}
  rank_classes: off
)" + (types.empty() ? std::string() : "  node_types: " + types + "\n") +
         R"(model:
  layers:
    - {name: l, params: 1M, fwd_flops_per_sample: 1T, activation_bytes_per_sample: 1MB,
       output_bytes_per_sample: 1MB, repeat: 4}
training: {micro_batch: 1, seq_len: 1, grad_accum: 4, steps: 3, warmup_steps: 1}
parallelism: {pipeline: 2, schedule: gpipe}
algorithms: [ddp]
)";
}

// A GPU of half the rate: 50 TFLOP/s.
constexpr const char* kHalf =
    "{peak_tflops: 50, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s}";

// Each rank's forward ops of step 2, in seconds.
std::vector<double> forwards(const Trace& trace, int worker) {
  std::vector<double> out;
  for (const auto& e : trace.events)
    if (e.worker == worker && e.step == 2 && e.category == OpCategory::forward)
      out.push_back(e.end - e.start);
  return out;
}

// By hand: a stage's forward of one micro-batch is its 2 layers' 2 TFLOP, 20 ms at 100 TFLOP/s
// and 40 ms at 50 (backward 40 and 80 ms). GPipe over 2 stages and 4 micro-batches with stage
// times (f0, b0, f1, b1) and a hop h (1 MB at 10 GB/s plus 10 us, 0.11 ms): with the slow GPU
// on stage 1, stage 1's forwards run 20 + h .. 180 + h ms, its backwards to 500 + h, stage 0's
// last backward ends at 540 + 2h; with it on stage 0 the forwards end at 160, stage 1's at
// 180 + h, its backwards at 220, 260, 300, 340 (+ h), stage 0's last at 540 + 2h: the same
// makespan. Both GPUs fast: 300 + 2h. The step adds the optimizer (AdamW over 2M parameters,
// 2e6 x 16 B / 1 TB/s = 32 us).
TEST(NodeTypesParallel, EachStageRunsAtItsOwnGpusRateAndThePipelineWaitsForTheSlowest) {
  const double h = 1e6 / 10e9 + 10e-6;
  const auto fast = testing::simulate(testing::scenario_from(pipeline_yaml("")), "ddp");
  const auto slow1 = testing::simulate(
      testing::scenario_from(pipeline_yaml(fmt::format("[{{nodes: [1], gpu: {}}}]", kHalf))),
      "ddp");
  const auto slow0 = testing::simulate(
      testing::scenario_from(pipeline_yaml(fmt::format("[{{nodes: [0], gpu: {}}}]", kHalf))),
      "ddp");
  for (const double f : forwards(slow1.trace, 0))
    EXPECT_NEAR(f, 0.020, 1e-9);
  for (const double f : forwards(slow1.trace, 1))
    EXPECT_NEAR(f, 0.040, 1e-9);
  for (const double f : forwards(slow0.trace, 0))
    EXPECT_NEAR(f, 0.040, 1e-9);
  EXPECT_EQ(forwards(slow1.trace, 1).size(), 4u);
  // The makespans by hand, within the optimizer step and the hops' SimGrid overheads (1 ms).
  EXPECT_NEAR(fast.metrics.iteration_time_s, 0.300 + 2 * h, 1e-3);
  EXPECT_NEAR(slow1.metrics.iteration_time_s, 0.540 + 2 * h, 1e-3);
  EXPECT_NEAR(slow0.metrics.iteration_time_s, 0.540 + 2 * h, 1e-3);
  // And against the schedule evaluator with the same stage times.
  const auto ops = parallel::pipeline_schedule(parallel::parse_pipeline_schedule("gpipe"), 2, 4, 1);
  const parallel::StageDurations d{{parallel::ChunkDurations{0.020, 0.040, 0}},
                                   {parallel::ChunkDurations{0.040, 0.080, 0}}};
  const double makespan = parallel::evaluate_schedule(ops, d, h).makespan;
  EXPECT_NEAR(makespan, 0.540 + 2 * h, 1e-12);
  EXPECT_GT(slow1.metrics.iteration_time_s, makespan);
  EXPECT_LT(slow1.metrics.iteration_time_s, makespan + 1e-3);
}

// Every summary field of `folded` the full simulation's to 1e-9 (relative), idle GPU by GPU.
void expect_same_summary(const testing::Simulated& folded, const testing::Simulated& full) {
  const auto close = [](double x, double y) { return std::abs(x - y) <= 1e-9 * std::abs(y); };
  EXPECT_PRED2(close, folded.metrics.iteration_time_s, full.metrics.iteration_time_s);
  EXPECT_PRED2(close, folded.metrics.compute_s_per_step, full.metrics.compute_s_per_step);
  EXPECT_PRED2(close, folded.metrics.comm_s_per_step, full.metrics.comm_s_per_step);
  EXPECT_PRED2(close, folded.metrics.waiting_s, full.metrics.waiting_s);
  EXPECT_PRED2(close, folded.metrics.exposed_comm_s, full.metrics.exposed_comm_s);
  EXPECT_PRED2(close, folded.metrics.peak_memory_bytes, full.metrics.peak_memory_bytes);
  ASSERT_EQ(folded.metrics.idle_fraction.size(), full.metrics.idle_fraction.size());
  for (std::size_t g = 0; g < full.metrics.idle_fraction.size(); ++g)
    EXPECT_NEAR(folded.metrics.idle_fraction[g], full.metrics.idle_fraction[g], 1e-9) << g;
}

sim::RankClasses classes_of(const scenario::Scenario& s) {
  scenario::AlgorithmSpec a;
  a.name = a.label = "ddp";
  return sim::choose_rank_classes(s, *make_algorithm(a));
}

// 6 nodes x 2 GPUs (`gpu`), TP2 x PP2 x DP3 (tp-dp-pp: node n holds stage 0 of replica n,
// node n + 3 its stage 1; node groups {n, n + 3}), GPT-Neo 125M, 1F1B of 4 micro-batches,
// selective recomputation; `types` the node_types list ("" for none). kNode3: node 3 (replica
// 0's stage 1) the 40 GB A100 (1.555 against 2.039 TB/s of HBM).
constexpr const char* kNode3 = "[{nodes: [3], gpu: a100-40gb}]";
std::string typed_3d_yaml(const std::string& types, const std::string& extra = "",
                          const std::string& gpu = "a100-80gb") {
  return "name: typed-3d\n"
         "cluster: {nodes: 6, gpus_per_node: 2, gpu: " +
         gpu + ", intra_node: nvlink3, inter_node: omnipath-100" +
         (types.empty() ? "" : ", node_types: " + types) + extra +
         "}\n"
         "model: {preset: gpt-neo-125m, dtype: bf16}\n"
         "training: {micro_batch: 1, seq_len: 256, grad_accum: 4, warmup_steps: 1, steps: 2, "
         "optimizer: adamw}\n"
         "parallelism: {tensor: 2, pipeline: 2, recompute: selective}\n"
         "algorithms: [ddp]\n";
}

// Every node typed alike: the same run as that GPU as the cluster's, to the last digit (the
// type's stage views: its roofline at the TP shard, its recomputation).
TEST(NodeTypesParallel, EveryNodeTypedIsThatGpusRun) {
  const auto typed = testing::simulate(
      testing::scenario_from(
          typed_3d_yaml("[{nodes: [0, 1, 2, 3, 4, 5], gpu: a100-40gb}]", ", rank_classes: off")),
      "ddp");
  const auto plain = testing::simulate(
      testing::scenario_from(typed_3d_yaml("", ", rank_classes: off", "a100-40gb")), "ddp");
  const auto faster =
      testing::simulate(testing::scenario_from(typed_3d_yaml("", ", rank_classes: off")), "ddp");
  EXPECT_EQ(typed.metrics.iteration_time_s, plain.metrics.iteration_time_s);
  EXPECT_EQ(typed.metrics.compute_s_per_step, plain.metrics.compute_s_per_step);
  EXPECT_EQ(typed.metrics.peak_memory_bytes, plain.metrics.peak_memory_bytes);
  EXPECT_GT(plain.metrics.compute_s_per_step, faster.metrics.compute_s_per_step);
}

// One pipeline per pattern of GPU types runs: replica 0 (an A100 40 GB at stage 1) for itself,
// one other for replicas 1 and 2; the folded summary is the full one's.
TEST(NodeTypesParallel, OnePipelinePerTypePatternFoldsToTheFullSummary) {
  const auto s = testing::scenario_from(typed_3d_yaml(kNode3));
  const auto rc = classes_of(s);
  ASSERT_TRUE(rc.folded) << rc.why_full;
  // NCCL's trees over 3 groups make group 2 the representative (nodes 2 and 5); group 0 runs for
  // its own pattern.
  EXPECT_EQ(rc.simulated_nodes(), (std::vector<int>{0, 2, 3, 5}));
  EXPECT_EQ(rc.representative(2 * 4 + 1), 2 * 5 + 1); // node 4 -> node 5
  EXPECT_EQ(rc.representative(2 * 3), 2 * 3);         // node 3 runs as itself
  const auto folded = testing::simulate(s, "ddp");
  const auto full = testing::simulate(
      testing::scenario_from(typed_3d_yaml(kNode3, ", rank_classes: off")), "ddp");
  EXPECT_EQ(folded.trace.workers, 8);
  expect_same_summary(folded, full);
  // The 40 GB A100s (node 3, GPUs 6 and 7) compute longer, so idle less than other stage-1 GPUs.
  EXPECT_LT(full.metrics.idle_fraction[6], full.metrics.idle_fraction[8]);
}

// `sites` WAN sites of 4 nodes x 4 A100s (a 10 Gbit/s WAN), the last site's nodes the 40 GB
// A100. Under a flat ring the sites are node groups: one site per type pattern runs (3 sites:
// the first two stand for each other, 32 of 48 GPUs run), to the full summary. Site by site one
// node per type runs (sim/site_classes.cpp).
std::string typed_sites_yaml(int sites, const std::string& extra) {
  std::string list;
  for (int s = 0; s < sites; ++s)
    list += fmt::format("{}{{name: s{}, nodes: [{}, {}, {}, {}]}}", s ? ", " : "", s, 4 * s,
                        4 * s + 1, 4 * s + 2, 4 * s + 3);
  const int last = 4 * (sites - 1);
  return fmt::format("name: typed-sites\n"
                     "cluster: {{nodes: {}, gpus_per_node: 4, gpu: a100-80gb, intra_node: "
                     "nvlink3, inter_node: omnipath-100, wan: wan-10gbit, sites: [{}], "
                     "node_types: [{{nodes: [{}, {}, {}, {}], gpu: a100-40gb}}]{}}}\n"
                     "model: {{preset: gpt-neo-125m, dtype: bf16}}\n"
                     "training: {{micro_batch: 2, seq_len: 128, grad_accum: 2, warmup_steps: 1, "
                     "steps: 2, optimizer: adamw}}\n"
                     "algorithms: [ddp]\n",
                     4 * sites, list, last, last + 1, last + 2, last + 3, extra);
}

TEST(NodeTypesSites, SitesTypedAlikeFoldUnderAFlatRing) {
  const auto s = testing::scenario_from(typed_sites_yaml(3, ", collective_algorithm: ring"));
  const auto rc = classes_of(s);
  ASSERT_TRUE(rc.folded) << rc.why_full;
  EXPECT_EQ(rc.simulated_ranks(), 32);
  EXPECT_TRUE(rc.simulated(8 * 4)); // the typed site runs as itself
  const auto folded = testing::simulate(s, "ddp");
  const auto full = testing::simulate(testing::scenario_from(typed_sites_yaml(
                                          3, ", collective_algorithm: ring, rank_classes: off")),
                                      "ddp");
  expect_same_summary(folded, full);
}

// Site by site the typed site's runner sits at the representative's index in its site, so the
// ring across sites that the representative joins waits for it (sim/site_classes.cpp). Before,
// the A100 40 GB site's runner was its node NCCL's trees load most, whose cross-site ring ran
// without the representative's: waiting came out 0.203 s folded against 0.0012 s in full.
TEST(NodeTypesSites, SitesTypedAlikeFoldSiteBySite) {
  for (const int sites : {2, 3}) {
    const auto s = testing::scenario_from(typed_sites_yaml(sites, ""));
    const auto rc = classes_of(s);
    ASSERT_TRUE(rc.folded) << rc.why_full;
    EXPECT_EQ(rc.simulated_ranks(), 8) << sites; // one node per type
    const int last = 4 * (sites - 1);            // the typed site's first node
    EXPECT_TRUE(rc.simulated((last + rc.node % 4) * 4)) << sites;
    const auto folded = testing::simulate(s, "ddp");
    const auto full = testing::simulate(
        testing::scenario_from(typed_sites_yaml(sites, ", rank_classes: off")), "ddp");
    if (sites == 2) {
      EXPECT_NEAR(full.metrics.waiting_s, 0.00124, 1e-5);
    }
    expect_same_summary(folded, full);
  }
}

// 8 nodes x 4 A100s, nodes 4-7 the 40 GB A100, lognormal jitter 0.05 on every GPU: one extreme
// per type draws the slowest of its type's GPUs left out; iteration time within 1% of the full
// simulation's.
TEST(NodeTypesStatistical, EachTypesExtremeDrawsItsOwnTypesGpus) {
  const auto yaml = [](const std::string& classes) {
    return "name: typed-jitter\n"
           "cluster: {nodes: 8, gpus_per_node: 4, gpu: a100-80gb, intra_node: nvlink3, "
           "inter_node: omnipath-100, node_types: [{nodes: [4, 5, 6, 7], gpu: a100-40gb}], "
           "jitter: {distribution: lognormal, sigma: 0.05}, rank_classes: " +
           classes +
           "}\n"
           "model: {preset: gpt-neo-125m, dtype: bf16}\n"
           "training: {micro_batch: 2, seq_len: 256, grad_accum: 2, warmup_steps: 1, steps: 3, "
           "optimizer: adamw}\n"
           "algorithms: [ddp]\n";
  };
  const auto s = testing::scenario_from(yaml("statistical"));
  const auto rc = classes_of(s);
  ASSERT_TRUE(rc.folded) << rc.why_full;
  ASSERT_TRUE(rc.statistical());
  // Node 1 the representative, node 3 its type's extreme; node 4 (NCCL's trees' busiest of 4-7)
  // the 40 GB A100s' representative, node 7 their extreme.
  EXPECT_EQ(rc.simulated_nodes(), (std::vector<int>{1, 3, 4, 7}));
  EXPECT_EQ(rc.extremes, (std::vector<int>{12, 28}));
  EXPECT_EQ(rc.slowest_of(12).size(), 1u + 8u);
  EXPECT_EQ(rc.slowest_of(28).size(), 1u + 8u);
  EXPECT_EQ(rc.slowest_of(28).front(), 20); // nodes 5 and 6 left out
  EXPECT_EQ(rc.describe(),
            "classes (16 of 32 GPUs simulated; statistical approximation: per GPU type, one GPU "
            "runs as the slowest of its type's GPUs left out and itself (GPU 12 for 9 GPUs of "
            "a100-80gb, GPU 28 for 9 GPUs of a100-40gb; jitter); rank_classes: auto simulates "
            "every GPU)");
  const auto folded = testing::simulate(s, "ddp");
  const auto full = testing::simulate(testing::scenario_from(yaml("off")), "ddp");
  EXPECT_NEAR(folded.metrics.iteration_time_s / full.metrics.iteration_time_s, 1.0, 0.01);
}

// Statistically with a pipeline (issue 64, item 5; sim/type_classes.h's add_pattern_extremes,
// sim/statistical_fold.h): one extreme replica per type pattern (the types of a replica's nodes,
// in order), each running op by op as the slowest of its own pattern's replicas left out and
// itself.
// 16 nodes x 2 A100 80 GB, TP2 x PP2 x DP8 (Megatron's tp-dp-pp: node n < 8 holds stage 0 of
// replica n, node n + 8 its stage 1; node groups {n, n + 8}), GPT-Neo 125M, 1F1B of 4
// micro-batches, 3 steps. Replicas 5, 6 and 7 have their stage 1 on the 40 GB A100 (nodes 13-15):
// two type patterns, 80/80 (replicas 0-4) and 80/40 (replicas 5-7).
std::string typed_replicas_yaml(const std::string& cluster, const std::string& training = "") {
  return "name: typed-statistical-pipeline\n"
         "cluster: {nodes: 16, gpus_per_node: 2, gpu: a100-80gb, intra_node: nvlink3, "
         "inter_node: omnipath-100, node_types: [{nodes: [13, 14, 15], gpu: a100-40gb}]" +
         cluster +
         "}\n"
         "model: {preset: gpt-neo-125m, dtype: bf16}\n"
         "training: {micro_batch: 1, seq_len: 256, grad_accum: 4, warmup_steps: 1, steps: 3, "
         "optimizer: adamw" +
         training +
         "}\n"
         "parallelism: {tensor: 2, pipeline: 2}\n"
         "algorithms: [ddp]\n";
}

const std::string kTypedJitter = ", jitter: {distribution: lognormal, sigma: 0.05}";

// Node groups {n, n + 8}: NCCL's trees over the 8 groups make group 1 the representative (its
// pattern 80/80); the last other 80/80 group (4) runs too, its replica as the slowest of the
// 80/80 replicas left out (0, 2, 3) and itself; group 5 (NCCL's busiest of 5-7) runs for the
// 80/40 pattern, its last other group (7) as the slowest of replica 6 and itself. 16 of 32 GPUs.
TEST(TypedStatisticalPipelineFold, OneExtremeReplicaPerTypePattern) {
  const auto s =
      testing::scenario_from(typed_replicas_yaml(kTypedJitter + ", rank_classes: statistical"));
  const auto rc = classes_of(s);
  ASSERT_TRUE(rc.folded) << rc.why_full;
  ASSERT_TRUE(rc.statistical());
  EXPECT_EQ(rc.node, 1);
  EXPECT_EQ(rc.simulated_nodes(), (std::vector<int>{1, 4, 5, 7, 9, 12, 13, 15}));
  EXPECT_EQ(rc.replicas, (std::vector<std::vector<int>>{{0, 2, 3, 4}, {6, 7}}));
  EXPECT_EQ(rc.extreme, 8);                     // replica 4's first GPU
  EXPECT_EQ(rc.representative(2 * 14), 2 * 13); // replica 6's stage 1: the 80/40 representative's
  EXPECT_EQ(rc.representative(2 * 10), 2 * 9);  // replica 2's stage 1: the 80/80 one's
  EXPECT_EQ(rc.describe(),
            "classes (16 of 32 GPUs simulated; statistical approximation: per pattern of GPU "
            "types along a replica, one replica runs op by op as the slowest of its pattern's "
            "replicas left out and itself (replica 4 (GPU 8 on) for 4 replicas of "
            "2 x a100-80gb, replica 7 (GPU 14 on) for 2 replicas of a100-80gb/a100-40gb; "
            "jitter); rank_classes: auto simulates every GPU)");
  sim::StatisticalFold fold(s, rc, 1e12);
  EXPECT_TRUE(fold.per_replica());
  // Replica 4's GPUs (TP ranks 0, 1 of stages 0, 1) stand for 4 replicas, replica 7's for 2.
  for (const int extreme : {8, 9, 24, 25}) {
    ASSERT_NE(fold.of(extreme), nullptr) << extreme;
    EXPECT_EQ(fold.of(extreme)->size(), 4) << extreme;
  }
  for (const int extreme : {14, 15, 30, 31}) {
    ASSERT_NE(fold.of(extreme), nullptr) << extreme;
    EXPECT_EQ(fold.of(extreme)->size(), 2) << extreme;
  }
  for (const int itself : {2, 3, 10, 18, 26})
    EXPECT_EQ(fold.of(itself), nullptr) << itself;
}

// Against the full simulation (0.3 s each way): the iteration time within 1% (measured: equal to
// 1e-15, 47.79 ms; 47.25 ms without jitter, so the draws move it by 1.1%), bit-identical on a
// rerun.
TEST(TypedStatisticalPipelineFold, NearTheFullSimulation) {
  const auto s =
      testing::scenario_from(typed_replicas_yaml(kTypedJitter + ", rank_classes: statistical"));
  const auto folded = testing::simulate(s, "ddp");
  const auto again = testing::simulate(s, "ddp");
  const auto full = testing::simulate(
      testing::scenario_from(typed_replicas_yaml(kTypedJitter + ", rank_classes: off")), "ddp");
  EXPECT_EQ(folded.trace.workers, 16);
  EXPECT_EQ(folded.metrics.iteration_time_s, again.metrics.iteration_time_s);
  EXPECT_NEAR(folded.metrics.iteration_time_s / full.metrics.iteration_time_s, 1.0, 0.01);
  EXPECT_NEAR(full.metrics.iteration_time_s, 0.04779, 1e-5);
}

// Without jitter, each GPU drawing the one length of `lengths: [256]`: the statistical fold
// still runs its two extreme replicas (the draws are sequence lengths), but every replica's
// clocks are the extreme's own, so the fold is exact: every summary field the full
// simulation's. With nothing drawn at all, `statistical` is the exact fold (one group per
// pattern, 8 of 32 GPUs), unlabelled and exact too.
TEST(TypedStatisticalPipelineFold, ExactWhereNothingVaries) {
  const std::string lengths = ", seq_len_distribution: {lengths: [256]}";
  const auto s =
      testing::scenario_from(typed_replicas_yaml(", rank_classes: statistical", lengths));
  const auto rc = classes_of(s);
  ASSERT_TRUE(rc.statistical()) << rc.describe();
  EXPECT_EQ(rc.replicas.size(), 2u);
  const auto folded = testing::simulate(s, "ddp");
  const auto full = testing::simulate(
      testing::scenario_from(typed_replicas_yaml(", rank_classes: off", lengths)), "ddp");
  EXPECT_EQ(folded.trace.workers, 16);
  expect_same_summary(folded, full);

  const auto plain = testing::scenario_from(typed_replicas_yaml(", rank_classes: statistical"));
  EXPECT_EQ(classes_of(plain).describe(), "classes (8 of 32 GPUs simulated)");
  const auto exact = testing::simulate(plain, "ddp");
  const auto exact_full =
      testing::simulate(testing::scenario_from(typed_replicas_yaml(", rank_classes: off")), "ddp");
  EXPECT_EQ(exact.trace.workers, 8);
  expect_same_summary(exact, exact_full);
}

// NCCL tunes a communicator by its ranks' lowest compute capability (init.cc's minCompCap): an
// H100 cluster (sm_90, NVLink SHARP) with A100 nodes (sm_80) tunes as Ampere, without NVLS; a
// GPU map without compute_capability (0) leaves the scenario's GPU's.
TEST(NodeTypesCosts, NcclTunesByTheLowestComputeCapability) {
  const auto cluster = [](const std::string& types) {
    return testing::scenario_from(
               "name: cc\ncluster: {preset: dgx-h100, nodes: 4, node_types: " + types +
               "}\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: "
               "1, seq_len: 256}\nalgorithms: [ddp]\n")
        .cluster;
  };
  const auto hopper = scenario::nccl_generation_of(cluster("[]"));
  const auto mixed = scenario::nccl_generation_of(cluster("[{nodes: [3], gpu: a100-80gb}]"));
  const auto custom = scenario::nccl_generation_of(
      cluster("[{nodes: [3], gpu: {peak_tflops: 100, memory: 80GB, hbm_bandwidth: 1TB/s}}]"));
  EXPECT_EQ(hopper.compute_capability, 90);
  EXPECT_EQ(mixed.compute_capability, 80);
  EXPECT_EQ(custom.compute_capability, 90);
  EXPECT_DOUBLE_EQ(mixed.tree_channel_Bps[0], 23.6e9); // Ampere's perChMaxTreeBw
  EXPECT_DOUBLE_EQ(hopper.tree_channel_Bps[0], 41.4e9);
}

// The interference shares are each GPU's own: every node typed with a GPU whose communication
// takes 30% of its compute is that GPU's run as the cluster's, to the last digit, and slower than
// the same GPU without interference.
TEST(NodeTypesCosts, InterferenceSharesAreEachGpusOwn) {
  const auto gpu = [](double share) {
    return fmt::format("{{peak_tflops: 100, efficiency: 0.5, memory: 80GB, hbm_bandwidth: 1TB/s, "
                       "comm_interference: {}}}",
                       share);
  };
  const auto run = [](const std::string& cluster_gpu, const std::string& types) {
    return testing::simulate(
        testing::scenario_from(
            "name: shares\ncluster: {nodes: 4, gpus_per_node: 2, gpu: " + cluster_gpu +
            ", intra_node: nvlink3, inter_node: omnipath-100, rank_classes: off" +
            (types.empty() ? "" : ", node_types: [{nodes: [0, 1, 2, 3], gpu: " + types + "}]") +
            "}\nmodel: {preset: gpt-neo-125m, dtype: bf16, compute: flops}\n"
            "training: {micro_batch: 2, seq_len: 256, grad_accum: 1, warmup_steps: 1, steps: 2, "
            "optimizer: adamw}\nalgorithms: [ddp]\n"),
        "ddp");
  };
  const auto typed = run(gpu(0), gpu(0.3));
  const auto plain = run(gpu(0.3), "");
  const auto none = run(gpu(0), "");
  EXPECT_EQ(typed.metrics.iteration_time_s, plain.metrics.iteration_time_s);
  EXPECT_EQ(typed.metrics.compute_s_per_step, plain.metrics.compute_s_per_step);
  EXPECT_GT(plain.metrics.compute_s_per_step, none.metrics.compute_s_per_step);
}

} // namespace
} // namespace overlapsim
