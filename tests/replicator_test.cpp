// DeMo and FlexDeMo (algorithms/replicator.h) against hand calculations: bytes on the wire, memory
// per GPU, the seeded indices, and the shapes of the DeToNATION paper's timing results on its
// scenarios (scenarios/detonation-*.yaml; docs/MODEL.md says why the OLMo2 ratio is not 2.6x).
#include "algorithms/replicator_indices.h"
#include "scenario/loader.h"
#include "test_util.h"

#include <gtest/gtest.h>

#include <fmt/format.h>
#include <set>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// One layer of 2^20 parameters (bf16), nodes of `gpus` GPUs joined by 10 GB/s.
std::string scenario(int nodes, int gpus,
                     const std::string& layers = "    - {name: b, params: 1048576, "
                                                 "fwd_flops_per_sample: 1G}\n") {
  return "name: demo\n" + testing::round_cluster(nodes, gpus) + "model:\n  layers:\n" + layers +
         "training: {micro_batch: 1, seq_len: 1, steps: 4, optimizer: sgd}\n" +
         "algorithms: [demo]\n";
}

TEST(Replicator, DemoAndRandomBytesByHand) {
  // 2^20 elements in blocks of 64 x 64 = 4096: 256 blocks x top_k 32 = 8192 selected, and
  // random at 8192 / 2^20 = 1/128 selects as many.
  const std::map<std::string, std::string> demo = {{"chunk", "64"}, {"top_k", "32"}};
  // DeMo over 4 workers: all-gathers of 8192 fp32 values and 8192 int32 indices, each worker
  // sending its block to 3 peers: 3 x 8192 x (4 + 4) = 196,608 bytes per step.
  EXPECT_NEAR(simulate(scenario_from(scenario(4, 1)), "demo", demo).metrics.comm_bytes_per_step,
              196608, 1);
  // Over 2 workers: 65,536.
  EXPECT_NEAR(simulate(scenario_from(scenario(2, 1)), "demo", demo).metrics.comm_bytes_per_step,
              65536, 1);
  // FlexDeMo random on 2 nodes of 1 GPU (no sharding): an all-reduce of 8192 fp32 values,
  // 2 (N - 1) / N x 32,768 = 32,768 bytes: half of demo's at the same compression.
  const auto random = simulate(scenario_from(scenario(2, 1)), "flexdemo",
                               {{"replicator", "random"}, {"compression", "0.0078125"}});
  EXPECT_NEAR(random.metrics.comm_bytes_per_step, 32768, 1);
  const auto flex = simulate(scenario_from(scenario(2, 1)), "flexdemo", demo);
  EXPECT_NEAR(flex.metrics.comm_bytes_per_step, 65536, 1);
  // 2 nodes x 2 GPUs: the intra-node all-gathers (forward, backward) and reduce-scatter of the
  // 2 MiB bf16 layer send 1/2 x 2,097,152 each (3,145,728), and across nodes each GPU
  // all-gathers its shard's 2^19 / 4096 = 128 blocks x 32 = 4096 pairs with its replica:
  // 4096 x 8 = 32,768. Total 3,178,496.
  const auto hybrid = simulate(scenario_from(scenario(2, 2)), "flexdemo", demo);
  EXPECT_NEAR(hybrid.metrics.comm_bytes_per_step, 3178496, 1);
}

TEST(Replicator, MemoryPerGpuByHand) {
  // fsdp_test's model: 8 blocks of 100M and a 200M head (bf16), 2 nodes x 4 GPUs.
  const std::string layers = "    - {name: b, params: 100M, fwd_flops_per_sample: 1G, repeat: 8}\n"
                             "    - {name: head, params: 200M, fwd_flops_per_sample: 1G}\n";
  const auto s = scenario_from(scenario(2, 4, layers));
  // FlexDeMo shards inside the node: params and grads (2 + 2) x 1e9 / 4 = 1 GB plus FSDP's
  // working set of the head, (2 x 2 + 2) x 200M = 1.2 GB; state: fp32 master + fp32 decoupled
  // momentum, 8 x 1e9 / 4 = 2 GB.
  const auto flex = simulate(s, "flexdemo", {{"replicator", "demo"}});
  EXPECT_NEAR(flex.metrics.memory_breakdown[0] + flex.metrics.memory_breakdown[1], 2.2e9, 1e6);
  EXPECT_NEAR(flex.metrics.memory_breakdown[2], 2e9, 1e6);
  // Exchange buffers, 2 replicas x (values + int32 indices): each block's 25M-element shard is
  // ceil(25e6 / 4096) = 6104 DCT blocks x 32, the head's 50M is 12208 x 32: 1,953,280 pairs,
  // 2 x 1,953,280 x 8 = 31,252,480 bytes.
  EXPECT_NEAR(flex.metrics.memory_breakdown[3], 31252480, 1);
  // Random at 1/16: one fp32 buffer of (8 x 25e6 + 50e6) / 16 = 15,625,000 values.
  const auto random =
      simulate(s, "flexdemo", {{"replicator", "random"}, {"compression", "0.0625"}});
  EXPECT_NEAR(random.metrics.memory_breakdown[3], 62.5e6, 1);
  // diloco keeps no momentum: the master copy only, 4 x 1e9 / 4.
  const auto diloco = simulate(s, "flexdemo", {{"replicator", "diloco"}});
  EXPECT_NEAR(diloco.metrics.memory_breakdown[2], 1e9, 1e6);
  // DeMo (DDP-style) holds everything: (2 + 2 + 8) x 1e9 = 12 GB, plus 8 workers' selections
  // of its one piece: ceil(1e9 / 4096) = 244,141 blocks x 32 pairs x 8 workers x 8 bytes.
  const auto demo = simulate(s, "demo");
  EXPECT_NEAR(demo.metrics.memory_breakdown[0] + demo.metrics.memory_breakdown[1] +
                  demo.metrics.memory_breakdown[2],
              12e9, 1e6);
  EXPECT_NEAR(demo.metrics.memory_breakdown[3], 244141.0 * 32 * 8 * 8, 1);
}

TEST(Replicator, SeededIndicesAreTheSameEverywhereAndDistinct) {
  ReplicatorConfig c;
  c.kind = ReplicatorKind::random;
  c.compression = 0.1;
  c.seed = 7;
  // Two workers are two calls: the same (seed, step, piece) gives the same list.
  const auto a = replicator_indices(c, 3, 1, 1000);
  EXPECT_EQ(a, replicator_indices(c, 3, 1, 1000));
  ASSERT_EQ(a.size(), 100u);
  EXPECT_EQ(std::set<std::int64_t>(a.begin(), a.end()).size(), 100u);
  EXPECT_GE(a.front(), 0);
  EXPECT_LT(a.back(), 1000);
  EXPECT_NE(a, replicator_indices(c, 4, 1, 1000)); // a fresh draw each step
  c.seed = 8;
  EXPECT_NE(a, replicator_indices(c, 3, 1, 1000));
  // Striding: stride ceil(1000 / 100) = 10, offset step mod 10.
  c.kind = ReplicatorKind::striding;
  const auto s = replicator_indices(c, 13, 0, 1000);
  ASSERT_EQ(s.size(), 100u);
  EXPECT_EQ(s[0], 3);
  EXPECT_EQ(s[1], 13);
  EXPECT_EQ(s.back(), 993);
}

// FNV-1a 64 over the little-endian bytes of each index: the empty list is the offset basis; {1}
// by hand (Python: h = (h ^ b) * 0x100000001b3 mod 2^64 over bytes 01 00 .. 00).
TEST(Replicator, IndicesDigestIsFnv1aOfTheIndices) {
  EXPECT_EQ(indices_digest({}), 0xCBF29CE484222325ULL);
  EXPECT_EQ(indices_digest({1}), 0x89CD31291D2AEFA4ULL);
  EXPECT_NE(indices_digest({1, 2}), indices_digest({2, 1}));
  EXPECT_NE(indices_digest({0}), indices_digest({}));
}

TEST(Replicator, BadOptionsNameTheKey) {
  const auto s = scenario_from(scenario(2, 1));
  for (auto [key, value] : {std::pair{"replicator", "gossip"}, std::pair{"compression", "2"},
                            std::pair{"top_k", "0"}, std::pair{"sign", "maybe"}}) {
    try {
      simulate(s, "flexdemo", {{key, value}});
      ADD_FAILURE() << key;
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("algorithms.flexdemo.") + key),
                std::string::npos)
          << e.what();
    }
  }
}

Metrics run_metrics(const std::string& file, const std::string& label,
                    const std::vector<std::string>& overrides = {}) {
  const auto s =
      scenario::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/" + file, overrides);
  for (const auto& a : s.algorithms)
    if (a.label == label) {
      auto r = sim::simulate(s, a);
      return compute_metrics(r.trace, s.training.warmup_steps, s.training.steps);
    }
  ADD_FAILURE() << label;
  return {};
}

double step_time(const std::string& file, const std::string& label,
                 const std::vector<std::string>& overrides = {}) {
  return run_metrics(file, label, overrides).iteration_time_s;
}

// Appendix B, Fig. 10: Random about 2x faster than DeMo when communication dominates. Measured
// here: 1.97x at 100 Mbit/s, 1.86x at 500, 1.76x at 1000 (compute takes a larger share).
TEST(Replicator, BandwidthSweepRandomAboutTwiceAsFastAsDemo) {
  const char* f = "detonation-bandwidth-sweep.yaml";
  double last = 3;
  for (const char* bw : {"100Mb/s", "500Mb/s", "1000Mb/s"}) {
    const std::vector<std::string> o = {std::string("cluster.inter_node.bandwidth=") + bw};
    const double ratio = step_time(f, "flexdemo-demo", o) / step_time(f, "flexdemo-random", o);
    EXPECT_GT(ratio, 1.7) << bw;
    EXPECT_LT(ratio, 2.0) << bw;
    EXPECT_LT(ratio, last) << bw; // the closer to comm-bound, the closer to 2
    last = ratio;
  }
}

// Sec. 4 "Scaling Up", Fig. 6: DeMo's step rises with the nodes, Random's stays near flat and
// beats the conventional setup at the largest scale. Measured under the alpha-beta collectives:
// DeMo 0.285 -> 0.744 s from 2 to 16 nodes, Random 0.255 -> 0.270 s, HSDP 0.276 -> 0.351 s
// (Random 1.30x, the paper 1.64x); under NCCL's cost model (the default) 1.33x.
TEST(Replicator, NodeSweepDemoRisesRandomStaysFlat) {
  const char* f = "detonation-node-sweep.yaml";
  auto at = [&](const char* label, int nodes) {
    return step_time(f, label, {"cluster.nodes=" + std::to_string(nodes)});
  };
  const double demo2 = at("flexdemo-demo", 2), demo16 = at("flexdemo-demo", 16);
  const double random2 = at("flexdemo-random", 2), random16 = at("flexdemo-random", 16);
  const double hsdp16 = at("hsdp-adamw", 16);
  EXPECT_GT(demo16, 2.4 * demo2);
  EXPECT_LT(random16, 1.1 * random2);
  EXPECT_NEAR(hsdp16 / random16, 1.33, 0.03);
}

// Sec. 4 "OLMo2", Fig. 4: the paper measures ~2.6x for every replicator over HSDP with AdamW. At
// the stated 200 Gb/s this model gives 0.97x (demo) to 1.14x (diloco): HSDP's shard all-reduce
// hides behind the backward (docs/MODEL.md). The paper's ratio appears once the effective
// inter-node bandwidth is ~25 Gb/s: demo 2.23x, random 3.10x.
TEST(Replicator, Olmo2RatiosAtThePaperBandwidthAndBelow) {
  const char* f = "detonation-olmo2-1b-2x4-a100.yaml";
  const double hsdp = step_time(f, "hsdp-adamw");
  EXPECT_NEAR(hsdp / step_time(f, "flexdemo-demo"), 0.97, 0.03);
  EXPECT_NEAR(hsdp / step_time(f, "flexdemo-random"), 1.08, 0.03);
  const std::vector<std::string> slow = {"cluster.inter_node.bandwidth=25Gb/s"};
  const double hsdp_slow = step_time(f, "hsdp-adamw", slow);
  EXPECT_NEAR(hsdp_slow / step_time(f, "flexdemo-demo", slow), 2.23, 0.1);
  EXPECT_NEAR(hsdp_slow / step_time(f, "flexdemo-random", slow), 3.10, 0.1);
}

// The same run with OLMo's standard parameters (OLMo2-1B-stage1.yaml): 16 micro-batches of 4 x
// 4096 tokens, one FSDP unit, HSDP reducing in fp32 after every micro-batch; FlexDeMo once a step.
// By hand, per micro-batch HSDP exposes its unit's reductions: the fp32 shard all-reduce with the
// other node, 4 GPUs x 1.48 GB / 23 GB/s = 257 ms, and the intra-node reduce-scatter of 5.9 GB,
// ~20 ms: 16 x 0.28 s = 4.5 s on top of FlexDeMo's 13.7 s, 1.33x.
TEST(Replicator, Olmo2WithOlmosStandardParameters) {
  const char* f = "detonation-olmo2-1b-2x4-a100-olmo-config.yaml";
  // Every step is the same here (no diloco period is measured): 2 steps give the 16 steps' time
  // and keep the sanitizer build's run short.
  const std::vector<std::string> two = {"training.steps=2"};
  const double hsdp = step_time(f, "hsdp-adamw", two);
  const double random = step_time(f, "flexdemo-random", two);
  EXPECT_NEAR(hsdp - random, 16 * 0.28, 0.2);
  EXPECT_NEAR(hsdp / random, 1.32, 0.03);
  EXPECT_NEAR(hsdp / step_time(f, "flexdemo-demo", two), 1.32, 0.03);
  // Sec. 4 "Scaling Up": at 16 nodes each micro-batch's shard all-reduce moves 2 x 15/16 of the
  // shard instead of 1 x (0.48 s instead of 0.26 s by hand): Random 1.58x faster than HSDP, the
  // paper's "around 64%"; DeMo's all-gather grows, but against 16 micro-batches of compute.
  const std::vector<std::string> sixteen = {"training.steps=2", "cluster.nodes=16"};
  const double random16 = step_time(f, "flexdemo-random", sixteen);
  EXPECT_NEAR(step_time(f, "hsdp-adamw", sixteen) / random16, 1.58, 0.03);
  EXPECT_NEAR(random16, random, 0.01 * random);
  EXPECT_LT(step_time(f, "flexdemo-demo", sixteen), 1.05 * random16);
}

// OLMo's micro-batch of 4 sequences does not fit a 64 GB A100 without activation checkpointing
// (73 GB for HSDP here; the paper's runs fit), so the paper ran a smaller one, which its text does
// not give; OLMo keeps the global batch of 512 by accumulating more micro-batches (64 / m per GPU),
// and HSDP pays its reductions once per micro-batch. Micro-batch 2 (45.8 GB) gives 1.63x, micro-
// batch 1 gives 2.21x. By hand, micro-batch 1: 64 x (257 ms shard all-reduce + 20 ms intra-node
// reduce-scatter) = 17.7 s on top of FlexDeMo's 14.6 s. The paper's 2.6x then needs the nodes' link
// to deliver 150 Gb/s of the stated 200 (all-reduce 4 x 1.48 GB / 17.3 GB/s = 343 ms: 64 x 0.363 =
// 23.2 s, 2.59x), where at micro-batch 4 it needed 38 Gb/s.
TEST(Replicator, Olmo2MicroBatchThatFitsA64GbA100) {
  const char* f = "detonation-olmo2-1b-2x4-a100-olmo-config.yaml";
  auto micro = [](int m) {
    return std::vector<std::string>{"training.steps=2", fmt::format("training.micro_batch={}", m),
                                    fmt::format("training.grad_accum={}", 64 / m)};
  };
  EXPECT_GT(run_metrics(f, "hsdp-adamw", micro(4)).peak_memory_bytes, 64e9);
  EXPECT_LT(run_metrics(f, "hsdp-adamw", micro(2)).peak_memory_bytes, 64e9);
  EXPECT_NEAR(step_time(f, "hsdp-adamw", micro(2)) / step_time(f, "flexdemo-random", micro(2)),
              1.63, 0.03);
  const double hsdp = step_time(f, "hsdp-adamw", micro(1));
  const double random = step_time(f, "flexdemo-random", micro(1));
  EXPECT_NEAR(hsdp - random, 64 * 0.277, 0.6);
  EXPECT_NEAR(hsdp / random, 2.21, 0.04);
  auto slower = micro(1);
  slower.push_back("cluster.inter_node.bandwidth=150Gb/s");
  const double hsdp150 = step_time(f, "hsdp-adamw", slower);
  const double random150 = step_time(f, "flexdemo-random", slower);
  EXPECT_NEAR(hsdp150 - random150, 64 * 0.363, 0.8);
  EXPECT_NEAR(hsdp150 / random150, 2.59, 0.05);
  EXPECT_NEAR(hsdp150 / step_time(f, "flexdemo-demo", slower), 2.59, 0.05);
}

} // namespace
} // namespace overlapsim
