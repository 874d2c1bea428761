// Per-op costs of a run's window (issue 30.4): kinds, counts, medians and time per step, and the
// join of a prediction with a measurement, against hand numbers.
#include "trace/op_costs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace overlapsim {
namespace {

TraceEvent event(Trace& t, int worker, StreamKind stream, OpCategory category,
                 const std::string& name, double start, double end) {
  TraceEvent e;
  e.worker = worker;
  e.stream = stream;
  e.category = category;
  e.name = t.intern(name);
  e.start = start;
  e.end = end;
  t.events.push_back(e);
  return e;
}

TEST(OpCosts, KindsDropLayerRangesAndStageDetails) {
  EXPECT_EQ(op_kind(OpCategory::forward, "fwd block0..block3"), "forward");
  EXPECT_EQ(op_kind(OpCategory::backward, "bwd head"), "backward");
  EXPECT_EQ(op_kind(OpCategory::comm, "all-gather params (stage 2)"), "all-gather params");
  EXPECT_EQ(op_kind(OpCategory::optimizer, "optimizer step"), "optimizer step");
  EXPECT_EQ(op_kind(OpCategory::comm, "send (x) y"), "send (x) y"); // only a trailing detail
  EXPECT_EQ(op_kind(OpCategory::comm, "all-reduce bucket 12"), "all-reduce bucket");
  EXPECT_EQ(op_kind(OpCategory::comm, "reduce-scatter bucket 0 (stage 1)"),
            "reduce-scatter bucket");
  EXPECT_EQ(op_kind(OpCategory::comm, "stage2"), "stage2");
}

TEST(OpCosts, CountsMediansAndTimePerStepPerWorkerInTheWindow) {
  Trace t;
  t.workers = 2;
  // Window [1, 3): 2 steps. Worker 0: forwards of 0.1, 0.3; worker 1: 0.2, 0.6 (layer ranges
  // differ: one kind). An all-reduce per worker of 0.5 and 0.7, both named by stage.
  event(t, 0, StreamKind::compute, OpCategory::forward, "fwd a..b", 0.5, 0.9); // before the window
  event(t, 0, StreamKind::compute, OpCategory::forward, "fwd a..b", 1.0, 1.1);
  event(t, 0, StreamKind::compute, OpCategory::forward, "fwd c", 2.0, 2.3);
  event(t, 1, StreamKind::compute, OpCategory::forward, "fwd a..b", 1.0, 1.2);
  event(t, 1, StreamKind::compute, OpCategory::forward, "fwd c", 2.0, 2.6);
  event(t, 0, StreamKind::comm, OpCategory::comm, "all-reduce grads (stage 1)", 1.5, 2.0);
  event(t, 1, StreamKind::comm, OpCategory::comm, "all-reduce grads (stage 2)", 1.5, 2.2);
  event(t, 1, StreamKind::compute, OpCategory::idle, "idle", 1.2, 2.0);        // not an op
  event(t, 1, StreamKind::compute, OpCategory::forward, "fwd a..b", 3.0, 3.1); // after it
  const auto costs = op_costs(t, 1.0, 3.0, 2);
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].op, "forward");
  EXPECT_DOUBLE_EQ(costs[0].count_per_step, 1.0); // 4 ops / (2 steps x 2 workers)
  EXPECT_DOUBLE_EQ(costs[0].median_s, 0.25);      // of 0.1, 0.2, 0.3, 0.6
  EXPECT_DOUBLE_EQ(costs[0].per_step_s, 1.2 / 4); // 1.2 s in all
  EXPECT_EQ(costs[1].op, "all-reduce grads");
  EXPECT_EQ(costs[1].stream, StreamKind::comm);
  EXPECT_DOUBLE_EQ(costs[1].count_per_step, 0.5);
  EXPECT_DOUBLE_EQ(costs[1].median_s, 0.6);
  EXPECT_DOUBLE_EQ(costs[1].per_step_s, 1.2 / 4);
}

TEST(OpCosts, ACollectiveCountsFromItsLastMembersStart) {
  Trace t;
  t.workers = 2;
  // One step, window [0, 10). All-reduces on group 3 (2 members): the first instance starts at 1.0
  // on worker 0 and 1.6 on worker 1, both end at 2.0: 0.4 s each moving data, 0.6 s of waiting.
  // The second: 3.0 and 3.0, ends 3.5 and 3.6.
  auto on_group = [&](int worker, double start, double end) {
    event(t, worker, StreamKind::comm, OpCategory::comm, "all-reduce", start, end);
    t.events.back().group = 3;
    t.events.back().group_size = 2;
  };
  on_group(0, 1.0, 2.0);
  on_group(0, 3.0, 3.5);
  on_group(1, 1.6, 2.0);
  on_group(1, 3.0, 3.6);
  // A message on a pair group (a peer): not a collective, its waiting counts as its time.
  event(t, 0, StreamKind::comm, OpCategory::comm, "recv", 4.0, 5.0);
  t.events.back().group = 4, t.events.back().group_size = 2, t.events.back().peer = 1;
  event(t, 1, StreamKind::comm, OpCategory::comm, "send", 4.8, 5.0);
  t.events.back().group = 4, t.events.back().group_size = 2, t.events.back().peer = 0;
  const auto costs = op_costs(t, 0, 10, 1);
  ASSERT_EQ(costs.size(), 3u);
  EXPECT_EQ(costs[0].op, "all-reduce");
  EXPECT_DOUBLE_EQ(costs[0].median_s, (0.4 + 0.5) / 2); // of 0.4, 0.4, 0.5, 0.6
  EXPECT_DOUBLE_EQ(costs[0].per_step_s, (0.4 + 0.4 + 0.5 + 0.6) / 2);
  EXPECT_DOUBLE_EQ(costs[0].waiting_per_step_s, 0.6 / 2);
  EXPECT_EQ(costs[1].op, "recv");
  EXPECT_DOUBLE_EQ(costs[1].median_s, 1.0);
  EXPECT_DOUBLE_EQ(costs[1].waiting_per_step_s, 0);
}

// CDP's relays on a measured CPU run: a receive posted early waits for its send, and Gloo's send
// ends when the program waits for it, long after its receive ended. Both halves count from the
// later post to the receive's end, paired in order per name, step and direction.
TEST(OpCosts, AMessageCountsFromItsLaterPostToItsReceivesEnd) {
  Trace t;
  t.workers = 2;
  auto half = [&](int worker, const std::string& name, double start, double end, int step) {
    event(t, worker, StreamKind::comm, OpCategory::comm, name, start, end);
    t.events.back().group = 5, t.events.back().group_size = 2;
    t.events.back().peer = 1 - worker, t.events.back().step = step;
  };
  // Step 0: worker 0 sends at 1.0 (waited at 1.9), worker 1 posted at 0.8, had it at 1.3: 0.3 s
  // each, the receive waiting 0.2. Then at 2.0 / 2.1 -> 2.5 (waited at 4.0): 0.4 s each, the
  // send waiting 0.1 for its receive's post.
  half(0, "send partial x", 1.0, 1.9, 0);
  half(0, "send partial x", 2.0, 4.0, 0);
  half(1, "recv partial x", 0.8, 1.3, 0);
  half(1, "recv partial x", 2.1, 2.5, 0);
  // The other direction and another step are other messages: 0.1 s each.
  half(1, "send partial x", 3.0, 3.1, 0);
  half(0, "recv partial x", 3.0, 3.1, 0);
  half(0, "send partial x", 5.0, 6.0, 1);
  half(1, "recv partial x", 5.0, 5.1, 1);
  const auto costs = op_costs(t, 0, 10, 1);
  ASSERT_EQ(costs.size(), 2u);
  EXPECT_EQ(costs[0].op, "send partial x");
  EXPECT_NEAR(costs[0].per_step_s, (0.3 + 0.4 + 0.1 + 0.1) / 2, 1e-12);
  // Instances (worker 0's first and second of step 0, worker 1's first): 0.3 and 0.1 (step 1),
  // 0.4, 0.1: their medians weighted by their counts.
  EXPECT_NEAR(costs[0].median_s, (2 * 0.2 + 0.4 + 0.1) / 4, 1e-12);
  EXPECT_NEAR(costs[0].waiting_per_step_s, 0.1 / 2, 1e-12);
  EXPECT_EQ(costs[1].op, "recv partial x");
  EXPECT_NEAR(costs[1].per_step_s, (0.3 + 0.4 + 0.1 + 0.1) / 2, 1e-12);
  EXPECT_NEAR(costs[1].waiting_per_step_s, 0.2 / 2, 1e-12);
}

// A kind whose instances differ in size (CDP's stages, FSDP's units, DDP's last bucket): each
// instance's median over the steps, weighted by its count, not the median of the mixture, which
// lands on one size or the other as a few ops move across it.
TEST(OpCosts, TheTypicalOpOfAKindWeighsEachInstancesMedian) {
  Trace t;
  t.workers = 1;
  // Three steps of two small optimizer steps and a large one.
  const double small_a[] = {0.10, 0.11, 0.09}, small_b[] = {0.12, 0.13, 0.11};
  const double large[] = {1.0, 1.2, 0.9};
  for (int s = 0; s < 3; ++s) {
    const double at = 10.0 * s;
    for (const auto& [offset, took] :
         {std::pair{0.0, small_a[s]}, std::pair{1.0, small_b[s]}, std::pair{2.0, large[s]}}) {
      event(t, 0, StreamKind::comm, OpCategory::optimizer, "optimizer step", at + offset,
            at + offset + took);
      t.events.back().step = s;
    }
  }
  const auto costs = op_costs(t, 0, 30, 3);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_NEAR(costs[0].median_s, (0.10 + 0.12 + 1.0) / 3, 1e-12); // the mixture's: 0.12
  EXPECT_NEAR(costs[0].per_step_s, (0.30 + 0.36 + 3.1) / 3, 1e-12);
}

TEST(OpCosts, AnOpWithoutAStepCountsInTheStepItsWorkerMarksDoneNext) {
  Trace t;
  t.workers = 1;
  // Four steps marked done at 10, 20, 30, 40 s, each with a small copy (a stage of 0.05 s) and a
  // large one (1.5 s), steps 2 and 3 with a second large one (2 s), all recorded without a step.
  // Pooled, their median is 1.5 (four small, six large); by instance (position in the step): the
  // small ones' 0.05 weighs 4, the large ones' 1.5 weighs 4, the second large ones' 2 weighs 2.
  for (int s = 0; s < 4; ++s) {
    const double at = 10.0 * s;
    event(t, 0, StreamKind::compute, OpCategory::copy, "copy", at + 1, at + 1.05);
    event(t, 0, StreamKind::compute, OpCategory::copy, "copy", at + 2, at + 3.5);
    if (s > 1)
      event(t, 0, StreamKind::compute, OpCategory::copy, "copy", at + 4, at + 6);
    t.steps.push_back(StepMark{at + 10, 0, s, 1});
  }
  const auto costs = op_costs(t, 0, 40, 4);
  ASSERT_EQ(costs.size(), 1u);
  EXPECT_NEAR(costs[0].median_s, (0.05 * 4 + 1.5 * 4 + 2.0 * 2) / 10, 1e-12);
  // Halves: steps 0-1 (0.05 x 2 + 1.5 x 2) / 4, steps 2-3 (0.05 x 2 + 1.5 x 2 + 2 x 2) / 6.
  EXPECT_NEAR(costs[0].halves_spread, (7.1 / 6 - 3.1 / 4) / 1.02, 1e-12);
  // An op after the worker's last mark stays outside any step: one instance of its own.
  event(t, 0, StreamKind::compute, OpCategory::copy, "copy", 41, 41.2);
  EXPECT_NEAR(op_costs(t, 0, 42, 4)[0].median_s, (0.05 * 4 + 1.5 * 4 + 2.0 * 2 + 0.2) / 11, 1e-12);
}

TEST(OpCosts, TheHalvesSpreadIsTheRunsOwnNoiseOnTheTypicalOp) {
  Trace t;
  t.workers = 1;
  // Four steps (0-3): a copy of 10, 12 ms in the first half, 14, 16 ms in the second; a fill of
  // 1 ms every step; an all-reduce only in the last step; an op outside any step.
  const double copy[] = {0.010, 0.012, 0.014, 0.016};
  for (int s = 0; s < 4; ++s) {
    event(t, 0, StreamKind::compute, OpCategory::copy, "copy", s, s + copy[s]);
    t.events.back().step = s;
    event(t, 0, StreamKind::compute, OpCategory::copy, "fill", s + 0.5, s + 0.501);
    t.events.back().step = s;
  }
  event(t, 0, StreamKind::comm, OpCategory::comm, "all-reduce counts", 3.2, 3.3);
  t.events.back().step = 3;
  event(t, 0, StreamKind::comm, OpCategory::comm, "barrier", 3.6, 3.7); // step -1
  const auto costs = op_costs(t, 0, 4, 4);
  ASSERT_EQ(costs.size(), 4u);
  // Medians: 11 ms (steps 0-1), 15 ms (2-3), 13 ms over all four: |15 - 11| / 13.
  EXPECT_NEAR(costs[0].median_s, 0.013, 1e-12);
  EXPECT_NEAR(costs[0].halves_spread, 0.004 / 0.013, 1e-9);
  EXPECT_NEAR(costs[1].halves_spread, 0.0, 1e-9);  // alike in both halves
  EXPECT_TRUE(std::isnan(costs[2].halves_spread)); // in one half only
  EXPECT_TRUE(std::isnan(costs[3].halves_spread)); // in no step
  // One step: no halves.
  EXPECT_TRUE(std::isnan(op_costs(t, 0, 1, 1)[0].halves_spread));
}

TEST(OpCosts, AJoinKeepsOpsOfEitherSide) {
  const std::vector<OpCost> predicted = {
      {"forward", OpCategory::forward, StreamKind::compute, 1, 0.3, 0.3},
      {"outer step", OpCategory::optimizer, StreamKind::compute, 0.1, 0.01, 0.001}};
  const std::vector<OpCost> measured = {
      {"backward", OpCategory::backward, StreamKind::compute, 1, 0.5, 0.5},
      {"forward", OpCategory::forward, StreamKind::compute, 1, 0.25, 0.25}};
  const auto joined = compare_op_costs(predicted, measured);
  ASSERT_EQ(joined.size(), 3u);
  EXPECT_EQ(joined[0].op, "backward");
  EXPECT_FALSE(joined[0].predicted.has_value());
  EXPECT_EQ(joined[1].op, "forward");
  EXPECT_DOUBLE_EQ(joined[1].predicted->median_s, 0.3);
  EXPECT_DOUBLE_EQ(joined[1].measured->median_s, 0.25);
  EXPECT_EQ(joined[2].op, "outer step");
  EXPECT_FALSE(joined[2].measured.has_value());
}

} // namespace
} // namespace overlapsim
