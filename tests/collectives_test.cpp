// Collectives on the simulated cluster against closed forms, nccl-tests' bandwidth accounting,
// link sharing between concurrent collectives, and fused vs steps fidelity.
#include "algorithms/algorithm.h"
#include "scenario/loader.h"
#include "sim/collective_timing.h"
#include "sim/sim_runtime.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

scenario::Scenario cluster(int nodes, int gpus, const std::vector<std::string>& overrides = {}) {
  const std::string yaml = "name: coll\ncluster:\n  nodes: " + std::to_string(nodes) +
                           "\n  gpus_per_node: " + std::to_string(gpus) +
                           "\n  gpu: a100-80gb\n"
                           "  intra_node: {bandwidth: 300GB/s, latency: 1us}\n"
                           "  inter_node: {bandwidth: 100Gb/s, latency: 5us}\n"
                           // The alpha-beta views' closed forms; comm/nccl_model's in its own test.
                           "  collectives: fused\n"
                           "model: {preset: gpt-neo-125m}\n"
                           "training: {micro_batch: 1, seq_len: 128}\nalgorithms: [ddp]\n";
  return scenario::load_scenario_text(yaml, "coll.yaml", overrides);
}

constexpr double kNet = 12.5e9; // 100 Gb/s
constexpr double kNetAlpha = 5e-6;

TEST(Collectives, RingAllReduceClosedForm) {
  // 16 nodes x 1 GPU: 2(N-1)(alpha + S/(N B)).
  for (auto fidelity : {"fused", "steps"}) {
    const auto s = cluster(16, 1, {std::string("cluster.collectives=") + fidelity});
    const double n = 16;
    for (double size : {100e6, 1e3}) {
      const double expected = 2 * (n - 1) * (kNetAlpha + size / (n * kNet));
      const auto t = sim::time_collective(s, CollectiveOp::all_reduce, size);
      // 100 MB: bandwidth-bound, within 0.5%; 1 KB: the latency term dominates, within 5%.
      EXPECT_NEAR(t.time_s, expected, (size > 1e6 ? 0.005 : 0.05) * expected) << fidelity << size;
    }
  }
}

TEST(Collectives, ReduceScatterPlusAllGatherIsAllReduce) {
  const auto s = cluster(8, 1);
  const double n = 8, size = 64e6;
  const double half = (n - 1) * (kNetAlpha + size / (n * kNet));
  const auto rs = sim::time_collective(s, CollectiveOp::reduce_scatter, size);
  const auto ag = sim::time_collective(s, CollectiveOp::all_gather, size);
  const auto ar = sim::time_collective(s, CollectiveOp::all_reduce, size);
  EXPECT_NEAR(rs.time_s, half, 0.005 * half);
  EXPECT_NEAR(ag.time_s, half, 0.005 * half);
  EXPECT_NEAR(rs.time_s + ag.time_s, ar.time_s, 0.001 * ar.time_s);
}

TEST(Collectives, HierarchicalAllReduceClosedFormAndFasterThanRing) {
  // 4 nodes x 8 GPUs: 2(G-1)(a_nv + S/(G B_nv)) + 2(M-1)(a_net + S/(M B_net)).
  const double G = 8, M = 4, size = 1e9;
  const double expected =
      2 * (G - 1) * (1e-6 + size / (G * 300e9)) + 2 * (M - 1) * (kNetAlpha + size / (M * kNet));
  const auto hier = sim::time_collective(
      cluster(4, 8, {"cluster.collective_algorithm=hierarchical"}), CollectiveOp::all_reduce, size);
  EXPECT_NEAR(hier.time_s, expected, 0.01 * expected);
  EXPECT_EQ(hier.algorithm, "hierarchical/fused");
  const auto ring = sim::time_collective(cluster(4, 8, {"cluster.collective_algorithm=ring"}),
                                         CollectiveOp::all_reduce, size);
  EXPECT_LT(hier.time_s, ring.time_s);
  // The flat ring crosses each NIC once: 2(N-1)/N S / B_net, paced by the 5 us hops.
  EXPECT_NEAR(ring.time_s, 2 * 31 * (kNetAlpha + size / (32 * kNet)), 0.005 * ring.time_s);
}

TEST(Collectives, BusBandwidthOfALargeRingIsTheBottleneck) {
  const auto t = sim::time_collective(cluster(8, 1), CollectiveOp::all_reduce, 4e9);
  EXPECT_NEAR(t.busbw_Bps, kNet, 0.01 * kNet);
  EXPECT_DOUBLE_EQ(t.busbw_Bps, t.algbw_Bps * 2 * 7 / 8);
  const auto ag = sim::time_collective(cluster(8, 1), CollectiveOp::all_gather, 4e9);
  EXPECT_NEAR(ag.busbw_Bps, kNet, 0.01 * kNet);
}

TEST(Collectives, AutoPicksTreeOrHierarchicalForSmallAndTheFastestForLarge) {
  const auto s = cluster(4, 8, {"cluster.collective_algorithm=auto"});
  const auto small = sim::time_collective(s, CollectiveOp::all_reduce, 1e3);
  EXPECT_NE(small.algorithm, "ring/fused"); // 62 ring steps of latency lose to log-depth schemes
  const auto flat = cluster(4, 8, {"cluster.collective_algorithm=ring"});
  const auto ring_small = sim::time_collective(flat, CollectiveOp::all_reduce, 1e3);
  EXPECT_LT(small.time_s, ring_small.time_s);
  const auto large = sim::time_collective(s, CollectiveOp::all_reduce, 1e9);
  const auto ring_large = sim::time_collective(flat, CollectiveOp::all_reduce, 1e9);
  EXPECT_LT(large.time_s, ring_large.time_s);
}

TEST(Collectives, FusedMatchesSteps) {
  // Flat (one GPU per node), two-level (NVLink + NIC), and a slow WAN hop between two sites.
  const std::vector<std::vector<std::string>> topologies = {
      {},
      {},
      {"cluster.sites=[{name: a, nodes: [0, 1]}, {name: b, nodes: [2, 3]}]",
       "cluster.wan={bandwidth: 1Gb/s, latency: 10ms}"}};
  const int gpus[] = {1, 4, 2};
  for (std::size_t i = 0; i < topologies.size(); ++i) {
    for (auto op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter,
                    CollectiveOp::all_gather, CollectiveOp::broadcast}) {
      auto fused_s = cluster(4, gpus[i], topologies[i]);
      auto steps_overrides = topologies[i];
      steps_overrides.push_back("cluster.collectives=steps");
      const auto steps_s = cluster(4, gpus[i], steps_overrides);
      const double fused = sim::time_collective(fused_s, op, 256e6).time_s;
      const double steps = sim::time_collective(steps_s, op, 256e6).time_s;
      if (op == CollectiveOp::broadcast) {
        // Broadcast's chain in steps mode is store-and-forward with one chunk in flight per hop:
        // it pays (n-2+C) latencies and the pipeline fill that the fused form, its limit with
        // latencies pipelined, does not (docs/MODEL.md). Fused is the lower bound, within 15%.
        EXPECT_LE(fused, steps * (1 + 1e-9)) << "topology " << i;
        EXPECT_NEAR(fused, steps, 0.15 * steps) << "topology " << i;
      } else {
        EXPECT_NEAR(fused, steps, 0.01 * steps) << "topology " << i << " " << to_string(op);
      }
    }
  }
}

// Issue 25.5's case: 3 sites of one 8-GPU node, 10 Gb/s and 30 ms between them, 32 MiB. A flat
// ring waits out the WAN on all 2(N-1) = 46 steps; auto reduces inside each site (7 + 7 NVLink
// steps of S/8) and crosses the WAN 2(S-1) = 4 times with S/3 over each site's link per step.
TEST(Collectives, AcrossSitesAutoCrossesTheWanOnlyBetweenSites) {
  const std::vector<std::string> sites = {
      "cluster.sites=[{name: a, nodes: [0]}, {name: b, nodes: [1]}, {name: c, nodes: [2]}]",
      "cluster.wan={bandwidth: 10Gb/s, latency: 30ms}"};
  const double size = 32.0 * 1024 * 1024, wan_bw = 1.25e9, alpha_w = 30e-3 + kNetAlpha, N = 24;
  auto with = [&](const std::string& algorithm) {
    auto o = sites;
    o.push_back("cluster.collective_algorithm=" + algorithm);
    return sim::time_collective(cluster(3, 8, o), CollectiveOp::all_reduce, size);
  };
  const auto ring = with("ring");
  EXPECT_NEAR(ring.time_s, 2 * (N - 1) * (alpha_w + size / (N * wan_bw)), 0.01 * ring.time_s);
  const auto automatic = with("auto");
  EXPECT_EQ(automatic.algorithm, "sites/fused");
  const double expected = 2 * 7 * (1e-6 + size / (8 * 300e9)) + 4 * (alpha_w + size / 3 / wan_bw);
  EXPECT_NEAR(automatic.time_s, expected, 0.01 * expected);
  EXPECT_GT(ring.time_s, 8 * automatic.time_s); // 1.43 s against 0.156 s
}

// Reduce-scatter and all-gather over the same 3 sites (FSDP and ZeRO shard over the whole group):
// auto and hierarchical reduce-scatter inside each site (7 NVLink steps of S/8), then across the
// sites among the ranks at the same position (2 steps of S/24; the site's 8 rings share its WAN
// link: S/3 a step); all-gather is the mirror. The flat ring pays the WAN on all N-1 = 23 steps.
// In the network view (fused) and in NCCL's (the default fidelity) alike.
TEST(Collectives, AcrossSitesReduceScatterAndAllGatherCrossTheWanOnlyBetweenSites) {
  const double size = 32.0 * 1024 * 1024, wan_bw = 1.25e9, alpha_w = 30e-3 + kNetAlpha, N = 24;
  const double expected = 7 * (1e-6 + size / (8 * 300e9)) + 2 * (alpha_w + size / 3 / wan_bw);
  const double flat = (N - 1) * (alpha_w + size / (N * wan_bw));
  EXPECT_NEAR(expected, 0.0780, 0.0001);
  EXPECT_NEAR(flat, 0.7158, 0.0001);
  for (const std::string fidelity : {"fused", "nccl"}) {
    for (auto op : {CollectiveOp::reduce_scatter, CollectiveOp::all_gather}) {
      auto with = [&](const std::string& algorithm) {
        return sim::time_collective(
            cluster(3, 8,
                    {"cluster.sites=[{name: a, nodes: [0]}, {name: b, nodes: [1]}, {name: c, "
                     "nodes: [2]}]",
                     "cluster.wan={bandwidth: 10Gb/s, latency: 30ms}",
                     "cluster.collective_algorithm=" + algorithm,
                     "cluster.collectives=" + fidelity}),
            op, size);
      };
      for (const std::string algorithm : {"auto", "hierarchical"}) {
        const auto t = with(algorithm);
        EXPECT_EQ(t.algorithm, "sites/fused") << fidelity << " " << algorithm;
        EXPECT_NEAR(t.time_s, expected, 0.01 * expected) << fidelity << " " << to_string(op);
      }
      if (fidelity == "fused") {
        EXPECT_NEAR(with("ring").time_s, flat, 0.01 * flat) << to_string(op);
      }
    }
  }
}

TEST(Collectives, WanSitesRunWithAnyGpusPerNode) {
  // Issue 15.1: two sites of two nodes each, joined by 1 Gb/s with 10 ms. A WAN hop costs
  // alpha_w = wan latency + inter-node latency and one WAN direction paces every ring.
  // Ring over N = 4 G ranks (it crosses the WAN twice, once each way):
  //   2(N-1)(alpha_w + S/(N B_w)).
  // Hierarchical and auto over sites (issue 25.5): a ring reduce-scatter inside each site of
  // P = 2G ranks (its slowest hop a node's NIC), then P rings of the 2 sites over S/P each,
  // sharing the WAN (2 steps, S/2 across it each), then the all-gather inside the sites:
  //   2(P-1)(a_net + S/(P B_net)) + 2(alpha_w + S/(2 B_w)).
  const std::vector<std::string> sites = {
      "cluster.sites=[{name: a, nodes: [0, 1]}, {name: b, nodes: [2, 3]}]",
      "cluster.wan={bandwidth: 1Gb/s, latency: 10ms}"};
  const double size = 64e6, wan_bw = 125e6, alpha_w = 10e-3 + kNetAlpha;
  for (int gpus : {1, 2, 4, 8}) {
    for (const std::string algorithm : {"ring", "hierarchical", "auto"}) {
      auto overrides = sites;
      overrides.push_back("cluster.collective_algorithm=" + algorithm);
      const auto s = cluster(4, gpus, overrides);
      const double G = gpus, N = 4 * G, P = 2 * G;
      const double expected = algorithm == "ring" ? 2 * (N - 1) * (alpha_w + size / (N * wan_bw))
                                                  : 2 * (P - 1) * (kNetAlpha + size / (P * kNet)) +
                                                        2 * (alpha_w + size / (2 * wan_bw));
      const auto t = sim::time_collective(s, CollectiveOp::all_reduce, size);
      EXPECT_NEAR(t.time_s, expected, 0.01 * expected) << gpus << " GPUs/node, " << algorithm;
      EXPECT_EQ(t.algorithm, algorithm == "ring" ? "ring/fused" : "sites/fused") << algorithm;
    }
  }
}

TEST(Collectives, TcpModelCapsAWanFlowAtItsWindow) {
  // docs/MODEL.md's worked example: 100 MB between two nodes over 1 Gb/s with 50 ms latency.
  // exact: 50 ms + 100 MB / 125 MB/s = 0.85 s. tcp (SimGrid LV08): latency x 13.01 and a window of
  // 4 MiB / (2 x 50 ms) = 41.94 MB/s per flow, times the 0.97 bandwidth factor.
  const std::string wan = "cluster.inter_node={bandwidth: 1Gb/s, latency: 50ms}";
  const auto exact = sim::time_collective(cluster(2, 1, {wan}), CollectiveOp::broadcast, 100e6);
  EXPECT_NEAR(exact.time_s, 0.85, 1e-6);
  const auto tcp = sim::time_collective(cluster(2, 1, {wan, "cluster.network_model=tcp"}),
                                        CollectiveOp::broadcast, 100e6);
  const double window = 4194304 / (2 * 0.05);
  const double expected = 13.01 * 0.05 + 100e6 / (0.97 * window);
  EXPECT_NEAR(tcp.time_s, expected, 0.005 * expected);
}

// Every rank all-reduces `size` bytes on its replication group (the GPUs with its local index);
// with `only_first`, the ranks of local index 1 stay silent.
class ReplicationAllReduce final : public Algorithm {
public:
  ReplicationAllReduce(double size, bool only_first) : size_(size), only_first_(only_first) {}
  std::string name() const override { return "replication-all-reduce"; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class P final : public WorkerProgram {
    public:
      P(Worker& worker, double size, bool only_first) : w_(worker), only_first_(only_first) {
        buffer_ = w_.declare({"b", MemoryCategory::buffers, static_cast<std::int64_t>(size), 1});
      }
      void run_compute() override {}
      void run_comm() override {
        const int local = w_.topology().local_of(w_.rank());
        if (!only_first_ || local == 0) {
          CollectiveCall c;
          c.group = &w_.topology().replication(local);
          c.data = Slice{buffer_, 0, w_.buffer(buffer_).elements};
          c.name = "ar";
          w_.run(c);
        }
        w_.step_done(0, 0);
      }

    private:
      Worker& w_;
      bool only_first_;
      BufferId buffer_ = -1;
    };
    return std::make_unique<P>(w, size_, only_first_);
  }

private:
  double size_;
  bool only_first_;
};

double collective_time(const sim::SimulationResult& r) {
  double end = 0;
  for (const auto& e : r.trace.events)
    end = std::max(end, e.end);
  return end;
}

TEST(Collectives, DisjointGroupsSharingANicSlowEachOtherDown) {
  // 2 nodes x 2 GPUs, one NIC per node. Groups {0, 2} and {1, 3} each all-reduce 100 MB across the
  // nodes: 2(N-1)(alpha + S/(N B)) = 2 x (5 us + 50 MB / 12.5 GB/s) = 8.01 ms alone; together both
  // flows share each NIC direction, so the bandwidth term doubles: 2 x (5 us + 8 ms) = 16.01 ms.
  const auto s = cluster(2, 2);
  const double alone = collective_time(sim::simulate(s, ReplicationAllReduce(100e6, true)));
  const double shared = collective_time(sim::simulate(s, ReplicationAllReduce(100e6, false)));
  EXPECT_NEAR(alone, 2 * (kNetAlpha + 50e6 / kNet), 0.005 * alone);
  EXPECT_NEAR(shared, 2 * (kNetAlpha + 2 * 50e6 / kNet), 0.005 * shared);
  // With two (pooled) NICs per node both flows get one NIC's worth again.
  const auto two_nics = cluster(2, 2, {"cluster.nics_per_node=2"});
  EXPECT_NEAR(collective_time(sim::simulate(two_nics, ReplicationAllReduce(100e6, false))), alone,
              0.005 * alone);
}

} // namespace
} // namespace overlapsim
