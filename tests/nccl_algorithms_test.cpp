// NCCL's CollNet (SHARP), NVLS all-gather/reduce-scatter (one node, and over CollNet across nodes)
// and PAT (comm/nccl_collnet.h, comm/nccl_nvls.h, comm/nccl_pat.h) against hand-computed prices
// from NCCL's tuning.cc constants, the tuner's picks, the scenario keys that enable them, and the
// simulator's flows for them (sim/collective/collnet.h, pat.h).
#include "comm/nccl_collnet.h"
#include "comm/nccl_nvls.h"
#include "comm/nccl_pat.h"
#include "scenario/collective_shape.h"
#include "scenario/loader.h"
#include "sim/collective/pat.h"
#include "sim/collective_timing.h"

#include <cmath>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <stdexcept>

namespace overlapsim {
namespace {

using comm::NcclAlgorithm;
using comm::NcclProtocol;

constexpr double GiB = 1073741824.0;
constexpr double MiB = 1048576.0;
constexpr double us = 1e-6;

// 8 x H100 SXM (NVLink 4 with NVLink SHARP) a node, as nccl_generation reads their facts.
comm::NcclGeneration hopper(bool collnet) {
  auto gen =
      comm::nccl_generation(*hw::find_gpu_preset("h100-sxm"), *hw::find_link_preset("nvlink4"), 8);
  gen.collnet = collnet;
  return gen;
}

// `nodes` x `per_node` GPUs: 360 GB/s a GPU's NVLink, 1 us; `heads` NICs of 50 GB/s a node, 3 us.
comm::NcclShape shape(int nodes, int per_node, int heads) {
  comm::NcclShape s;
  s.nodes = nodes;
  s.per_node = per_node;
  s.ranks = nodes * per_node;
  s.intra_Bps = 360e9;
  s.intra_latency_s = 1 * us;
  s.net_Bps = heads * 50e9;
  s.net_latency_s = 3 * us;
  s.net_heads = s.net_nics = heads;
  return s;
}

TEST(NcclCollNet, AllReduceByHand) {
  const auto gen = hopper(true);
  const auto s = shape(4, 8, 8);
  // Direct: 12 us launch + 31 us across + 2 x (3.7 us + 7 x 0.4 us) = 56 us; min(360 / 2, 400)
  // GB/s x 0.85 (sm_90) over NCCL's GPU-per-NIC factor 1: 153 GB/s.
  const auto direct = comm::nccl_collective_cost(
      gen, s, CollectiveOp::all_reduce, NcclAlgorithm::collnet_direct, NcclProtocol::simple, GiB);
  EXPECT_NEAR(direct.latency_s, 56 * us, 1e-12);
  EXPECT_NEAR(direct.algbw_Bps, 153e9, 1);
  EXPECT_NEAR(direct.time_s, 56 * us + GiB / 153e9, 1e-12);
  // Chain: 12 + 30 + 2 x 7 x 2.8 us = 81.2 us; min(180, 400) GB/s.
  const auto chain = comm::nccl_collective_cost(
      gen, s, CollectiveOp::all_reduce, NcclAlgorithm::collnet_chain, NcclProtocol::simple, GiB);
  EXPECT_NEAR(chain.latency_s, 81.2 * us, 1e-12);
  EXPECT_NEAR(chain.algbw_Bps, 180e9, 1);
  // 4 NICs for 8 GPUs: factor 2 - (2 - 1) / 2 = 1.5: 180 x 0.85 / 1.5 = 102 GB/s.
  const auto half_nics =
      comm::nccl_collective_cost(gen, shape(4, 8, 4), CollectiveOp::all_reduce,
                                 NcclAlgorithm::collnet_direct, NcclProtocol::simple, GiB);
  EXPECT_NEAR(half_nics.algbw_Bps, 102e9, 1);
  // Off: CollNet not enabled, LL/LL128, one node, broadcast.
  const auto none = [&](const comm::NcclGeneration& g, const comm::NcclShape& sh, CollectiveOp op,
                        NcclProtocol p) {
    return !std::isfinite(
        comm::nccl_collective_cost(g, sh, op, NcclAlgorithm::collnet_direct, p, GiB).time_s);
  };
  EXPECT_TRUE(none(hopper(false), s, CollectiveOp::all_reduce, NcclProtocol::simple));
  EXPECT_TRUE(none(gen, s, CollectiveOp::all_reduce, NcclProtocol::ll128));
  EXPECT_TRUE(none(gen, shape(1, 8, 8), CollectiveOp::all_reduce, NcclProtocol::simple));
  EXPECT_TRUE(none(gen, s, CollectiveOp::broadcast, NcclProtocol::simple));
}

TEST(NcclCollNet, AllGatherNeedsANicPerGpu) {
  const auto gen = hopper(true);
  // min(360, 0.9 x 400 x 8 / 8) GB/s = 360 GB/s, latency as the all-reduce's (56 us).
  const auto ag =
      comm::nccl_collective_cost(gen, shape(4, 8, 8), CollectiveOp::all_gather,
                                 NcclAlgorithm::collnet_direct, NcclProtocol::simple, GiB);
  EXPECT_NEAR(ag.latency_s, 56 * us, 1e-12);
  EXPECT_NEAR(ag.algbw_Bps, 360e9, 1);
  EXPECT_FALSE(std::isfinite(
      comm::nccl_collective_cost(gen, shape(4, 8, 4), CollectiveOp::reduce_scatter,
                                 NcclAlgorithm::collnet_direct, NcclProtocol::simple, GiB)
          .time_s));
  EXPECT_FALSE(std::isfinite(
      comm::nccl_collective_cost(gen, shape(4, 8, 8), CollectiveOp::all_gather,
                                 NcclAlgorithm::collnet_chain, NcclProtocol::simple, GiB)
          .time_s));
  // collnet asked for where NCCL disables it: the tuner's pick instead (a ring here).
  const auto fallback = comm::nccl_best_collective(gen, shape(4, 8, 4), CollectiveOp::all_gather,
                                                   GiB, NcclAlgorithm::collnet_direct);
  EXPECT_EQ(fallback.algorithm, NcclAlgorithm::ring);
}

TEST(NcclNvls, AllGatherAndReduceScatterByHand) {
  const auto gen = hopper(false);
  const auto s = shape(1, 8, 1);
  // X = 480 / 2 GB/s; one node: X x 7 / 8 = 210 GB/s after 12 + 25 us.
  const auto ag = comm::nccl_collective_cost(gen, s, CollectiveOp::all_gather, NcclAlgorithm::nvls,
                                             NcclProtocol::simple, GiB);
  EXPECT_NEAR(ag.latency_s, 37 * us, 1e-12);
  EXPECT_NEAR(ag.algbw_Bps, 210e9, 1);
  // NCCL's tuner ranks it below the ring at every size on one node (the ring: 12 + 8.4 + 7 x 6.4
  // us and 360 x 8 / 7 GB/s with Simple; LL's 12 + 6.6 + 7 x 0.6 us below 37 us): rings run.
  for (const double bytes : {1024.0, MiB, GiB})
    EXPECT_EQ(comm::nccl_best_collective(gen, s, CollectiveOp::reduce_scatter, bytes).algorithm,
              NcclAlgorithm::ring)
        << bytes;
  // Across nodes NVLS needs CollNet (nvls_collnet): 12 + 25 + max(18, 3) us = 55 us,
  // min(210, 400) GB/s; its all-reduce min(480, 400) x 32 / 62 = 206.5 GB/s.
  EXPECT_FALSE(std::isfinite(
      comm::nccl_collective_cost(gen, shape(4, 8, 8), CollectiveOp::all_gather,
                                 NcclAlgorithm::nvls_collnet, NcclProtocol::simple, GiB)
          .time_s));
  const auto on = hopper(true);
  const auto across =
      comm::nccl_collective_cost(on, shape(4, 8, 8), CollectiveOp::all_gather,
                                 NcclAlgorithm::nvls_collnet, NcclProtocol::simple, GiB);
  EXPECT_NEAR(across.latency_s, 55 * us, 1e-12);
  EXPECT_NEAR(across.algbw_Bps, 210e9, 1);
  const auto ar =
      comm::nccl_collective_cost(on, shape(4, 8, 8), CollectiveOp::all_reduce,
                                 NcclAlgorithm::nvls_collnet, NcclProtocol::simple, GiB);
  EXPECT_NEAR(ar.algbw_Bps, 400e9 * 32 / 62, 1);
  EXPECT_STREQ(comm::nccl_label(NcclAlgorithm::nvls_collnet, NcclProtocol::simple, true),
               "nvls/Simple");
}

TEST(NcclPat, LatencyGrowsWithLog2NotN) {
  const auto gen = hopper(false);
  const auto s = shape(64, 1, 1);
  // 12 + 8 + floor(log2 64) x 14 / 3.5 + 64 x 2.8 us = 223.2 us; 0.75 x 50 GB/s.
  const auto pat = comm::nccl_collective_cost(gen, s, CollectiveOp::all_gather, NcclAlgorithm::pat,
                                              NcclProtocol::simple, MiB);
  EXPECT_NEAR(pat.latency_s, 223.2 * us, 1e-12);
  EXPECT_NEAR(pat.algbw_Bps, 37.5e9, 1);
  // The ring's Simple: 12 + 8.4 + 63 network steps x 14 us = 902.4 us.
  const auto ring = comm::nccl_collective_cost(gen, s, CollectiveOp::all_gather,
                                               NcclAlgorithm::ring, NcclProtocol::simple, MiB);
  EXPECT_NEAR(ring.latency_s, 902.4 * us, 1e-12);
  // The tuner: PAT at 1 MiB (251 us against the ring's best, LL's 432 us), the ring at 1 GiB
  // (PAT's 28.6 ms against 21.1 ms).
  EXPECT_EQ(comm::nccl_best_collective(gen, s, CollectiveOp::all_gather, MiB).algorithm,
            NcclAlgorithm::pat);
  EXPECT_EQ(comm::nccl_best_collective(gen, s, CollectiveOp::reduce_scatter, GiB).algorithm,
            NcclAlgorithm::ring);
  // Only one GPU a node, all-gather and reduce-scatter, Simple.
  EXPECT_FALSE(
      std::isfinite(comm::nccl_collective_cost(gen, shape(32, 2, 2), CollectiveOp::all_gather,
                                               NcclAlgorithm::pat, NcclProtocol::simple, MiB)
                        .time_s));
  EXPECT_FALSE(
      std::isfinite(comm::nccl_collective_cost(gen, s, CollectiveOp::all_reduce, NcclAlgorithm::pat,
                                               NcclProtocol::simple, MiB)
                        .time_s));
  EXPECT_FALSE(std::isfinite(comm::nccl_collective_cost(gen, s, CollectiveOp::all_gather,
                                                        NcclAlgorithm::pat, NcclProtocol::ll, MiB)
                                 .time_s));
}

TEST(NcclPat, FlowsSendNMinusOneShards) {
  // Step k sends min(2^k, n - 2^k) shards 2^k ranks on: 5 ranks: 1 + 2 + 1 = 4 shards of S / 5.
  const Group g(0, {0, 1, 2, 3, 4});
  const auto flows = sim::collective::pat_flows(g, 5.0);
  ASSERT_EQ(flows.size(), 15u);
  double from_zero = 0;
  for (const auto& f : flows)
    if (f.src == 0)
      from_zero += f.bytes;
  EXPECT_DOUBLE_EQ(from_zero, 4.0);
  EXPECT_EQ(flows[5].dst, 2); // step 2: rank 0 to rank 2
}

scenario::Scenario load(const std::string& cluster) {
  return scenario::load_scenario_text(
      fmt::format("name: algos\ncluster: {}\nmodel: {{preset: gpt-neo-125m}}\n"
                  "training: {{micro_batch: 1, seq_len: 128}}\nalgorithms: [ddp]\n",
                  cluster),
      "algos.yaml");
}

TEST(NcclCollNet, FabricSharpEnablesItAndCollnetAsksForIt) {
  const std::string base =
      "{nodes: 4, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4, inter_node: ib-ndr, "
      "nics_per_node: 8";
  const auto on = load(base + ", fabric: {sharp: true}, collective_algorithm: collnet}");
  EXPECT_TRUE(on.cluster.fabric.sharp);
  EXPECT_TRUE(scenario::price_rule(on.cluster).generation.collnet);
  const auto priced = scenario::price_world_collective(on.cluster, CollectiveOp::all_reduce, GiB);
  EXPECT_TRUE(priced.algorithm.starts_with("nccl collnet")) << priced.algorithm;
  const auto ran = sim::time_collective(on, CollectiveOp::all_reduce, GiB);
  EXPECT_EQ("nccl " + ran.algorithm, priced.algorithm);
  EXPECT_NEAR(ran.time_s, priced.seconds, 0.01 * priced.seconds);
  EXPECT_FALSE(scenario::price_rule(load(base + "}").cluster).generation.collnet);
  try {
    load(base + ", collective_algorithm: collnet}");
    FAIL() << "collnet without sharp";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("sharp: true"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace overlapsim
