// The critical path and idle attribution on a hand-built trace, and the lower bound on simulations.
#include "test_util.h"
#include "trace/analysis.h"
#include "trace/chrome_trace.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace overlapsim {
namespace {

TEST(Analysis, HandBuiltStraggledCollective) {
  // Worker 0 computes [0, 1] s, worker 1 (slow) [0, 3] s; both then all-reduce: worker 0 enters at
  // 1 s and waits for worker 1, who enters at 3 s; the data moves from 3 s to 4 s.
  Trace t;
  t.workers = 2;
  const auto fwd = t.intern("fwd"), ar = t.intern("all-reduce bucket 0"),
             ring = t.intern("ring/fused");
  t.events = {{0, 1, 0, StreamKind::compute, OpCategory::forward, fwd, -1, 0, 0, 0, 1e12},
              {0, 3, 1, StreamKind::compute, OpCategory::forward, fwd, -1, 0, 0, 0, 1e12},
              {1, 4, 0, StreamKind::comm, OpCategory::comm, ar, ring, 0, -1, 100, 0},
              {3, 4, 1, StreamKind::comm, OpCategory::comm, ar, ring, 0, -1, 100, 0}};
  t.steps = {{4, 0, 0, 1}, {4, 1, 0, 1}};
  t.peak_memory = {{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}};
  const auto m = compute_metrics(t, /*warmup_steps=*/0, /*steps=*/1);
  const auto a = analyze(t, m);
  // Path: the slow forward (3 s), then the transfer of the all-reduce (1 s).
  EXPECT_DOUBLE_EQ(a.critical_path.length_s, 4);
  EXPECT_DOUBLE_EQ(a.critical_path.busy_s, 4);
  EXPECT_DOUBLE_EQ(a.critical_path.by_category[static_cast<std::size_t>(OpCategory::forward)], 3);
  EXPECT_DOUBLE_EQ(a.critical_path.by_category[static_cast<std::size_t>(OpCategory::comm)], 1);
  ASSERT_FALSE(a.critical_path.top.empty());
  EXPECT_EQ(a.critical_path.top[0].worker, 1);
  EXPECT_EQ(a.critical_path.top[0].name, "fwd");
  // Worker 0: computes 1/4, waits for worker 1 for 2/4, its data is on the wire 1/4.
  EXPECT_DOUBLE_EQ(a.idle[0].compute, 0.25);
  EXPECT_DOUBLE_EQ(a.idle[0].waiting, 0.5);
  EXPECT_DOUBLE_EQ(a.idle[0].exposed_comm, 0.25);
  EXPECT_DOUBLE_EQ(a.idle[0].idle_other, 0);
  // Worker 1: computes 3/4, then its own transfer.
  EXPECT_DOUBLE_EQ(a.idle[1].compute, 0.75);
  EXPECT_DOUBLE_EQ(a.idle[1].exposed_comm, 0.25);
  EXPECT_DOUBLE_EQ(a.idle[1].waiting, 0);
  // Lower bound per step: max(compute 3 s, communication 3 s on worker 0).
  EXPECT_DOUBLE_EQ(a.lower_bound_s, 3);
}

TEST(Analysis, SimulatedStepsNeverBeatTheLowerBound) {
  const auto s = testing::scenario_from(R"(name: lb
cluster:
  nodes: 4
  gpus_per_node: 2
  gpu: a100-80gb
  intra_node: nvlink3
  inter_node: {bandwidth: 5Gb/s, latency: 5us}
  stragglers: [{gpu: 3, slowdown: 1.5}]
  jitter: {distribution: lognormal, sigma: 0.2}
model:
  layers:
    - {name: b, params: 20M, fwd_flops_per_sample: 300G, activation_bytes_per_sample: 10MB, repeat: 8}
training: {micro_batch: 2, seq_len: 1, grad_accum: 2, steps: 3}
algorithms: [ddp]
)");
  for (const char* algorithm : {"ddp", "s-sgd", "zero1", "dpu", "acco", "cdp-v1", "cdp-v2"}) {
    const auto r = testing::simulate(s, algorithm);
    const auto a = analyze(r.trace, r.metrics);
    EXPECT_GT(a.lower_bound_s, 0) << algorithm;
    EXPECT_GE(r.metrics.iteration_time_s, a.lower_bound_s * (1 - 1e-9)) << algorithm;
    double sum = a.idle_mean.compute + a.idle_mean.exposed_comm + a.idle_mean.waiting +
                 a.idle_mean.idle_other;
    EXPECT_NEAR(sum, 1.0, 1e-9) << algorithm;
    EXPECT_NEAR(a.idle_mean.compute, 1 - r.metrics.idle_fraction_mean, 1e-9) << algorithm;
    EXPECT_LE(a.critical_path.length_s, r.metrics.iteration_time_s * 1.5) << algorithm;
  }
}

TEST(Analysis, StragglerWaitIsAttributedToPeers) {
  // DDP with one 4x slower GPU and fast links: the fast GPUs' idle time is waiting for it.
  const auto s = testing::scenario_from(R"(name: st
cluster:
  nodes: 1
  gpus_per_node: 4
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s}
  intra_node: {bandwidth: 100GB/s, latency: 1us}
  stragglers: [{gpu: 2, slowdown: 4}]
model:
  layers:
    - {name: b, params: 1M, fwd_flops_per_sample: 1T, repeat: 2}
training: {micro_batch: 1, seq_len: 1, steps: 4}
algorithms: [ddp]
)");
  const auto r = testing::simulate(s, "ddp");
  const auto a = analyze(r.trace, r.metrics);
  EXPECT_NEAR(a.idle[0].waiting, 0.75, 0.01);
  EXPECT_LT(a.idle[2].waiting, 0.01);
  EXPECT_EQ(a.critical_path.top[0].worker, 2); // the straggler's backward paces the step
}

// Issue 15.18: waiting inside a collective was drawn as communication, so a straggler looked like a
// slow network. The trace says how long each comm event waited for its last peer.
TEST(ChromeTrace, StragglerWaitIsWrittenAsWaitingUs) {
  const auto s = testing::scenario_from("name: wait\n" +
                                        testing::round_cluster(1, 2,
                                                               "  stragglers: [{gpu: 1, slowdown: "
                                                               "2}]\n") +
                                        R"(model:
  layers:
    - {name: b, params: 1M, fwd_flops_per_sample: 1T}
training: {micro_batch: 1, seq_len: 1, steps: 3}
algorithms: [ddp]
)");
  // GPU 0: forward 1 TFLOP / 100 TFLOP/s = 10 ms, backward 20 ms, then the one bucket's all-reduce
  // (2 MB), its gradients first copied into DDP's bucket (1M x 4 B / 1 TB/s = 4 us; 8 us on the
  // slowed GPU 1), so GPU 1 gets there at 60.008 ms. In step 0 both started at 0: GPU 0 waits
  // 60.008 - 30.004 = 30.004 ms. After it, both leave the all-reduce together, copy the bucket
  // back and run AdamW (1M x 28 B / 1 TB/s = 28 us): 32 us on GPU 0, 64 us on GPU 1, so GPU 0
  // starts each later step 32 us ahead and waits 30.036 ms. GPU 1 never waits.
  const auto r = testing::simulate(s, "ddp");
  for (const std::vector<int>& shown : {std::vector<int>{}, std::vector<int>{0}}) {
    const auto doc = nlohmann::json::parse(chrome_trace_json(r.trace, "t", shown));
    std::vector<double> waits[2];
    for (const auto& e : doc["traceEvents"])
      if (e["ph"] == "X" && e["cat"] == "comm")
        waits[e["pid"].get<int>()].push_back(e["args"].value("waiting_us", 0.0));
    // Warm-up step and three measured steps; a left-out GPU 1 still sets GPU 0's wait.
    ASSERT_EQ(waits[0].size(), 4u) << shown.size();
    EXPECT_DOUBLE_EQ(waits[0][0], 30004);
    for (std::size_t k = 1; k < waits[0].size(); ++k)
      EXPECT_DOUBLE_EQ(waits[0][k], 30036) << k;
    EXPECT_EQ(waits[1], std::vector<double>(shown.empty() ? 4 : 0, 0.0));
  }
}

// Issue 27.1: the time a GPU waits inside a collective for a slower peer is `waiting_s`, not
// exposed communication. The case above: GPU 0 waits 30.036 ms in each measured step, GPU 1 never;
// both then move the same 2 MB, which is all either exposes.
TEST(Metrics, WaitingForAStragglerIsNotExposedCommunication) {
  const auto s = testing::scenario_from("name: wait\n" +
                                        testing::round_cluster(1, 2,
                                                               "  stragglers: [{gpu: 1, slowdown: "
                                                               "2}]\n") +
                                        R"(model:
  layers:
    - {name: b, params: 1M, fwd_flops_per_sample: 1T}
training: {micro_batch: 1, seq_len: 1, steps: 3}
algorithms: [ddp]
)");
  const auto m = testing::simulate(s, "ddp").metrics;
  ASSERT_EQ(m.waiting_per_worker_s.size(), 2u);
  EXPECT_NEAR(m.waiting_per_worker_s[0], 30.036e-3, 1e-9);
  EXPECT_DOUBLE_EQ(m.waiting_per_worker_s[1], 0.0);
  EXPECT_NEAR(m.waiting_s, 15.018e-3, 1e-9);
  EXPECT_GT(m.exposed_comm_per_worker_s[0], 0.0);
  EXPECT_LT(m.exposed_comm_per_worker_s[0], 1e-3); // 2 MB at 100 GB/s: tens of microseconds
  EXPECT_NEAR(m.exposed_comm_per_worker_s[0], m.exposed_comm_per_worker_s[1], 1e-9);
  EXPECT_NEAR(m.exposed_comm_s, m.exposed_comm_per_worker_s[0], 1e-9);
}

TEST(ChromeTrace, ReceiveWaitsForTheSendToStart) {
  // Worker 1 posts its receive at 1 ms; worker 0 starts the matching send at 3 ms; both end at
  // 4 ms. The receive waits 2 ms, then the data moves; the send waits for nothing.
  Trace t;
  t.workers = 2;
  const auto send = t.intern("send act 0"), recv = t.intern("recv act 0"), p2p = t.intern("p2p");
  t.events = {{3e-3, 4e-3, 0, StreamKind::comm, OpCategory::comm, send, p2p, 0, -1, 100, 0},
              {1e-3, 4e-3, 1, StreamKind::comm, OpCategory::comm, recv, p2p, 0, -1, 0, 0}};
  // The send finds its receive posted already (1 ms): it does not wait.
  EXPECT_EQ(peer_arrivals(t), (std::vector<double>{1e-3, 3e-3}));
  const auto doc = nlohmann::json::parse(chrome_trace_json(t, "t"));
  std::map<int, double> waited;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X")
      waited[e["pid"].get<int>()] = e["args"].value("waiting_us", 0.0);
  EXPECT_EQ(waited, (std::map<int, double>{{0, 0.0}, {1, 2000.0}}));
}

} // namespace
} // namespace overlapsim
