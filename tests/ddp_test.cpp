// DDP and S-SGD against hand calculations (issue: walking skeleton, "Must hold").
#include "test_util.h"

#include "algorithms/algorithm.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::round_cluster;
using testing::scenario_from;
using testing::simulate;

TEST(Ddp, OneLayerTwoNodesMatchesHandCalculation) {
  const auto s = scenario_from("name: one-layer\n" + round_cluster(2) + R"(
model:
  layers:
    - {name: l0, params: 100M, fwd_flops_per_sample: 1T, activation_bytes_per_sample: 1MB}
training: {micro_batch: 1, seq_len: 1, steps: 4, optimizer: adamw}
algorithms: [ddp]
)");
  // forward 1e12 / 1e14 = 10 ms; backward 2x = 20 ms;
  // ring all-reduce, N = 2, S = 100M x 2 B = 200 MB: 2(N-1)(alpha + S/(N B)) = 2 x (10 us + 10 ms)
  //   = 20.02 ms;
  // AdamW step: 100M params x (2 grad + 2 x 12 state + 2 param) B / 1 TB/s = 2.8 ms.
  const double expected = 0.010 + 0.020 + 0.02002 + 0.0028;
  for (const char* algorithm : {"ddp", "s-sgd"}) {
    const auto r =
        simulate(s, algorithm, {{"bucket_cap", "1GB"}, {"gradient_as_bucket_view", "true"}});
    EXPECT_NEAR(r.metrics.iteration_time_s, expected, 0.01 * expected) << algorithm;
    // Bytes each GPU sends per step: 2(N-1)/N x S = S.
    EXPECT_NEAR(r.metrics.comm_bytes_per_step, 200e6, 1) << algorithm;
    // Both GPUs wait for the all-reduce and the optimizer stays busy: idle = 20.02 / 52.82.
    EXPECT_NEAR(r.metrics.idle_fraction_mean, 0.02002 / expected, 0.005) << algorithm;
  }
}

TEST(Ddp, BucketCopyUnlessGradientAsBucketView) {
  const auto s = scenario_from("name: bucket-view\n" + round_cluster(2) + R"(
model:
  layers:
    - {name: l0, params: 100M, fwd_flops_per_sample: 1T, activation_bytes_per_sample: 1MB}
training: {micro_batch: 1, seq_len: 1, steps: 4, optimizer: adamw}
algorithms: [ddp]
)");
  // PyTorch's default (gradient_as_bucket_view false) keeps a bucket buffer beside .grad: exactly
  // the gradient bytes, 100M x 2 B = 200 MB, counted as `buffers`. Each step copies .grad into
  // it before the all-reduce and back after: 2 x 100M x (2 + 2) B / 1 TB/s = 0.8 ms on top of
  // the view's 10 + 20 + 20.02 + 2.8 = 52.82 ms.
  const auto copy = simulate(s, "ddp", {{"bucket_cap", "1GB"}});
  const auto view =
      simulate(s, "ddp", {{"bucket_cap", "1GB"}, {"gradient_as_bucket_view", "true"}});
  EXPECT_DOUBLE_EQ(copy.metrics.peak_memory_bytes - view.metrics.peak_memory_bytes, 200e6);
  EXPECT_DOUBLE_EQ(copy.metrics.memory_breakdown[3] - view.metrics.memory_breakdown[3], 200e6);
  EXPECT_NEAR(view.metrics.iteration_time_s, 0.05282, 1e-6);
  EXPECT_NEAR(copy.metrics.iteration_time_s, 0.05362, 1e-6);
}

TEST(Ddp, OverlapHidesBackwardWhenCommunicationDominates) {
  const auto s = scenario_from("name: comm-bound\n" + round_cluster(2) + R"(
model:
  layers:
    - {name: block, params: 25M, fwd_flops_per_sample: 100G, repeat: 8}
training: {micro_batch: 1, seq_len: 1, steps: 4}
algorithms: [ddp, s-sgd]
)");
  // Each layer: 25M params = 50 MB of bf16 gradients = one bucket (cap 50 MB); forward 1 ms,
  // backward 2 ms. Each bucket's all-reduce: 2 x (10 us + 25 MB / 10 GB/s) = 5.02 ms > 2 ms.
  // DDP: the first bucket starts after forward (8 ms) + one backward (2 ms); the eight all-reduces
  //   then run back to back (40.16 ms); AdamW on 200M params: 5.6 ms. Total 55.76 ms.
  // S-SGD: 8 + 16 + 40.16 + 5.6 = 69.76 ms: DDP is faster by the 7 overlapped backwards (14 ms).
  const auto ddp =
      simulate(s, "ddp", {{"bucket_cap", "50MB"}, {"gradient_as_bucket_view", "true"}});
  const auto ssgd = simulate(s, "s-sgd", {{"bucket_cap", "50MB"}});
  EXPECT_NEAR(ddp.metrics.iteration_time_s, 0.05576, 0.01 * 0.05576);
  EXPECT_NEAR(ssgd.metrics.iteration_time_s, 0.06976, 0.01 * 0.06976);
  EXPECT_NEAR(ssgd.metrics.iteration_time_s - ddp.metrics.iteration_time_s, 0.014, 0.0005);
  // Never faster than max(compute, communication) = max(29.6 ms, 40.16 ms).
  EXPECT_GE(ddp.metrics.iteration_time_s, 0.04016);
}

TEST(Ddp, StragglerSetsThePaceAndTheOthersIdle) {
  const auto s = scenario_from("name: straggler\n" +
                               round_cluster(1, 4, "  stragglers: [{gpu: 2, slowdown: 4}]\n") + R"(
model:
  layers:
    - {name: block, params: 1M, fwd_flops_per_sample: 1T, repeat: 2}
training: {micro_batch: 1, seq_len: 1, steps: 4}
algorithms: [ddp]
)");
  // Fast GPU per step: forward 20 ms + backward 40 ms + AdamW (2M x 28 B / 1 TB/s = 56 us).
  // The straggler takes 4x as long for all of it: 4 x 60.056 ms = 240.224 ms. The all-reduce of
  // 4 MB over 100 GB/s NVLink (6 steps of 1 MB: ~60 us + 6 us latency) is waited for by everyone.
  const auto r = simulate(s, "ddp");
  const double comm = 6 * (1e-6 + 1e6 / 100e9);
  const double step = 4 * 0.060 + comm + 4 * 56e-6;
  EXPECT_NEAR(r.metrics.iteration_time_s, step, 0.01 * step);
  // A fast GPU computes 60.056 ms of each step and idles the rest.
  const double fast_idle = 1 - 0.060056 / step;
  for (int w : {0, 1, 3})
    EXPECT_NEAR(r.metrics.idle_fraction[static_cast<std::size_t>(w)], fast_idle, 0.005) << w;
  EXPECT_NEAR(r.metrics.idle_fraction[2], 1 - 4 * 0.060056 / step, 0.005);
  EXPECT_NEAR(fast_idle, 0.75, 0.01);
}

TEST(Ddp, GradAccumulationRunsNoSyncMicroBatches) {
  const auto s = scenario_from("name: accum\n" + round_cluster(2) + R"(
model:
  layers:
    - {name: l0, params: 100M, fwd_flops_per_sample: 1T}
training: {micro_batch: 2, seq_len: 1, grad_accum: 3, steps: 2}
algorithms: [ddp]
)");
  // Three micro-batches of 2 samples: 3 x (20 + 40) ms of compute, one all-reduce (20.02 ms) and
  // one AdamW step (2.8 ms) per optimizer step; 2 GPUs x 3 x 2 = 12 samples per step.
  const auto r = simulate(s, "ddp", {{"bucket_cap", "1GB"}});
  const double step = 3 * 0.060 + 0.02002 + 0.0028;
  EXPECT_NEAR(r.metrics.iteration_time_s, step, 0.01 * step);
  EXPECT_NEAR(r.metrics.throughput_samples_s, 12 / step, 0.01 * 12 / step);
}

TEST(Ddp, PyTorchBaselineWithoutNoSyncInFp32WithZeroRedundancyMatchesHandCalculation) {
  // The ACCO authors' DDP baseline: fp32 model, all-reduce after every micro-batch (no no_sync()),
  // torch's ZeroRedundancyOptimizer (sharded step, updated shards broadcast to every rank).
  const auto s = scenario_from("name: paper-ddp\n" + round_cluster(2) + R"(
model:
  layers:
    - {name: l0, params: 100M, fwd_flops_per_sample: 1T, activation_bytes_per_sample: 1MB}
training: {micro_batch: 1, seq_len: 1, grad_accum: 2, steps: 4, optimizer: adamw}
algorithms: [ddp]
)");
  // Per micro-batch: forward 10 ms, backward 20 ms, then the all-reduce of S = 100M x 4 B =
  //   400 MB, which DDP waits for: 2 x (10 us + 400 MB / (2 x 10 GB/s)) = 40.02 ms.
  // AdamW on this rank's 50M: 50M x 28 B / 1 TB/s = 1.4 ms.
  // All-gather of the updated 200 MB shards: 10 us + 200 MB / 10 GB/s = 20.01 ms.
  // PyTorch's default gradient_as_bucket_view=False: each micro-batch copies the fp32 gradients
  //   into the bucket and back, 2 x 100M x 8 B / 1 TB/s = 1.6 ms.
  const double expected = 2 * (0.030 + 0.0016 + 0.04002) + 0.0014 + 0.02001;
  const auto r = simulate(s, "ddp",
                          {{"bucket_cap", "1GB"},
                           {"sync_every_micro_batch", "true"},
                           {"dtype", "fp32"},
                           {"zero_redundancy", "true"}});
  EXPECT_NEAR(r.metrics.iteration_time_s, expected, 0.005 * expected);
  // Sent per GPU and step: two all-reduces of S (2(N-1)/N x S each) and half of S gathered.
  EXPECT_NEAR(r.metrics.comm_bytes_per_step, 2 * 400e6 + 200e6, 1);
  // fp32 parameters and gradients, AdamW moments (8 B, no master copy) for half the parameters.
  EXPECT_NEAR(r.metrics.memory_breakdown[0], 400e6, 1);
  EXPECT_NEAR(r.metrics.memory_breakdown[1], 400e6, 1);
  EXPECT_NEAR(r.metrics.memory_breakdown[2], 50e6 * 8, 1);
  EXPECT_NEAR(r.metrics.memory_breakdown[3], 400e6, 1); // DDP's bucket buffers

  // Without the options: one bf16 all-reduce of 200 MB (20.02 ms) after the second micro-batch,
  // its bucket copies (2 x 100M x 4 B / 1 TB/s = 0.8 ms), a full AdamW step (2.8 ms).
  const auto plain = simulate(s, "ddp", {{"bucket_cap", "1GB"}});
  EXPECT_NEAR(plain.metrics.iteration_time_s, 2 * 0.030 + 0.0008 + 0.02002 + 0.0028,
              0.005 * 0.0828);
}

TEST(Ddp, BaselineOptionsAreChecked) {
  scenario::AlgorithmSpec a;
  a.name = "ddp";
  a.where = "s.yaml:7";
  // A flag takes the loader's words (yes/no/on/off too), nothing else.
  a.options["sync_every_micro_batch"] = scenario::AlgorithmOption{"sometimes", "s.yaml:7"};
  try {
    make_algorithm(a);
    FAIL() << "accepted sync_every_micro_batch: sometimes";
  } catch (const scenario::ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("sync_every_micro_batch"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("true or false"), std::string::npos) << e.what();
  }
  a.options = {{"dtype", scenario::AlgorithmOption{"int8", "s.yaml:7"}}};
  EXPECT_THROW(make_algorithm(a), scenario::ScenarioError);
}

} // namespace
} // namespace overlapsim
