// GCP's GPUDirect-TCPX (A3 High) and -TCPXO (A3 Mega) systems as their documented NCCL
// configurations run them (issue 66; docs/MODEL.md, "GPUDirect-TCPX and -TCPXO from their
// sources"): A3 High's nccl-tests run of GoogleCloudPlatform/ai-infra-cluster-provisioning
// (NCCL_ALGO=Ring, NCCL_PROTO=Simple over 4 x 200 Gb/s NICs) and the choices GCP's A3 Mega tuner
// plugin config (a3plus_tuner_config.textproto) pins, each against a hand calculation.
#include "scenario/collective_shape.h"
#include "scenario/loader.h"

#include <gtest/gtest.h>
#include <string>

namespace overlapsim {
namespace {

scenario::Scenario load(const std::string& cluster) {
  return scenario::load_scenario_text(
      "name: gcp\ncluster: " + cluster +
          "\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
          "algorithms: [ddp]\n",
      "gcp.yaml");
}

TEST(GcpTcpxPresets, A3HighRingIsFourTcpxNicsAtTheirNinetyGigabytes) {
  const auto s = load("{preset: gcp-a3-high, nodes: 2, collective_algorithm: ring}");
  EXPECT_EQ(s.cluster.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(s.cluster.inter_node.bandwidth_Bps, 22.5e9); // 200 Gb/s x 0.90
  EXPECT_EQ(s.cluster.nccl_protocol, comm::NcclProtocolChoice::simple);
  // TCPX's plugin reports no latency to NCCL's tuner (net_tcpx.cc: props->latency = 0).
  EXPECT_EQ(s.cluster.inter_node.plugin_latency_s, 0);
  // 16 ranks on 2 nodes, ring/Simple: 30 steps, 2 of them across nodes. NCCL's multi-node ring
  // latencies: 12 (launch) + 8.4 (base) + 28 x 3.4 (NVLink steps) + 2 x max(14, 20) (network
  // steps at the preset's 20 us) = 155.6 us, x 1.4 (NCCL 2.18+'s ring plateau on sm_80 and
  // newer) = 217.84 us; the bus
  // bandwidth is the node's 4 x 22.5 = 90 GB/s, algbw 90 / (2 x 15/16) = 48 GB/s.
  const double bytes = 8589934592.0;
  const auto p = scenario::price_world_collective(s.cluster, CollectiveOp::all_reduce, bytes);
  EXPECT_EQ(p.algorithm, "nccl ring/Simple");
  EXPECT_NEAR(p.seconds, 217.84e-6 + bytes / 48e9, 1e-9);
  // nccl-tests' busbw: 89.89 GB/s, the published run's 90.05 (tests/data/nccl-tests/
  // gcp-a3-high-h100-2x8-tcpx.log, a table no constant was taken from).
  EXPECT_NEAR(bytes / p.seconds * 1.875 / 1e9, 89.89, 0.01);
}

TEST(GcpTcpxPresets, A3MegaPicksWhatGcpsTunerConfigPins) {
  // GCP's a3plus_tuner_config.textproto (apple/axlearn's copy, axlearn/cloud/gcp/nccl/a3_mega/
  // tuner_config.txtpb): 2 nodes of 8 ranks, all-reduce ALGO_TREE / PROTO_SIMPLE at every size,
  // the other collectives ALGO_RING / PROTO_SIMPLE; 3-6 nodes, all-reduce the tree below 2 MiB a
  // rank and NCCL's own pick (Ring,Tree under Simple) above. NCCL's model on the preset (no
  // tuner plugin modelled) picks the same at each of these sizes.
  const auto two = load("{preset: gcp-a3-mega, nodes: 2}");
  for (double bytes = 1024; bytes <= 8589934592.0; bytes *= 8) {
    SCOPED_TRACE(bytes);
    EXPECT_EQ(
        scenario::price_world_collective(two.cluster, CollectiveOp::all_reduce, bytes).algorithm,
        "nccl tree/Simple");
    for (auto op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter})
      EXPECT_EQ(scenario::price_world_collective(two.cluster, op, bytes).algorithm,
                "nccl ring/Simple");
  }
  const auto four = load("{preset: gcp-a3-mega, nodes: 4}");
  for (double bytes = 1024; bytes < 2097152.0; bytes *= 8)
    EXPECT_EQ(
        scenario::price_world_collective(four.cluster, CollectiveOp::all_reduce, bytes).algorithm,
        "nccl tree/Simple");
  // The tree on 2 nodes, 8 GiB: 12 + 8.4 + 2 x (7 x 6.4 + 1 x max(14, 20)) = 150 us; algbw the
  // node's 8 NICs' 180 GB/s x NCCL's tree factor 0.92 = 165.6 GB/s (8 channels, one a NIC at
  // 22.5 GB/s, not doubled below 25: 8 x 41.4 / 2 = 165.6 GB/s too); the run pays the Simple
  // tree's fill (comm/nccl_tree_pipeline.h): GCP's 8 MiB NCCL_BUFFSIZE gives 1 MiB chunks on 16
  // channels, whose first crosses 14 NVLink stages of 1 MiB / 20.6 GB/s and 2 NIC stages of 1 MiB
  // x 16 x 0.5 / 165.6 GB/s (814.0 us), the other 8 GiB - 16 MiB going at 165.6 GB/s.
  const double bytes = 8589934592.0, first = 16 * 1048576.0;
  const double fill = 14 * 1048576.0 / 20.6e9 + 2 * first * 0.5 / 165.6e9;
  EXPECT_NEAR(fill, 814.0e-6, 0.1e-6);
  EXPECT_NEAR(
      scenario::price_world_collective(two.cluster, CollectiveOp::all_reduce, bytes).seconds,
      150e-6 + fill + (bytes - first) / 165.6e9, 1e-9);
}

} // namespace
} // namespace overlapsim
