// Pipeline schedules (parallel/pipeline_schedule.h): each schedule's op order as its reference
// implementation has it, and the evaluator's times against numbers worked out by hand and the
// papers' bubble fractions.
#include "parallel/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

namespace overlapsim::parallel {
namespace {

using Kind = PipelineOp::Kind;

constexpr PipelineSchedule all_schedules[] = {
    PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b, PipelineSchedule::interleaved,
    PipelineSchedule::zero_bubble_h1};

bool valid(PipelineSchedule schedule, int p, int m, int v) {
  if (schedule == PipelineSchedule::interleaved)
    return m % p == 0;
  return v == 1;
}

// "F0 F1 B1 B0": a stage's ops as text.
std::string text(const std::vector<PipelineOp>& ops) {
  std::string out;
  for (const auto& op : ops) {
    if (!out.empty())
      out += ' '; // not " " + string: GCC 12 warns falsely (-Wrestrict)
    out += to_string(op);
  }
  return out;
}

// F, B (full or input) and W per stage: m * v each, ZB-H1's W included.
ChunkDurations ones(PipelineSchedule schedule, int v) {
  // F = 1, B = 2 per micro-batch and stage; ZB-H1's B = W = 1.
  if (schedule == PipelineSchedule::zero_bubble_h1)
    return {1.0 / v, 1.0 / v, 1.0 / v};
  return {1.0 / v, 2.0 / v, 0};
}

TEST(PipelineSchedule, NamesRoundTrip) {
  const std::map<PipelineSchedule, std::string> names{
      {PipelineSchedule::gpipe, "gpipe"},
      {PipelineSchedule::one_f_one_b, "1f1b"},
      {PipelineSchedule::interleaved, "interleaved"},
      {PipelineSchedule::zero_bubble_h1, "zero-bubble"}};
  for (const auto& [schedule, name] : names) {
    EXPECT_EQ(to_string(schedule), name);
    EXPECT_EQ(parse_pipeline_schedule(name), schedule);
  }
  EXPECT_THROW(parse_pipeline_schedule("pipedream"), std::invalid_argument);
  EXPECT_THROW(parse_pipeline_schedule("1F1B"), std::invalid_argument);
}

TEST(PipelineSchedule, InvalidArgumentsThrow) {
  for (const auto schedule : all_schedules) {
    EXPECT_THROW(pipeline_schedule(schedule, 0, 4, 1), std::invalid_argument);
    EXPECT_THROW(pipeline_schedule(schedule, 4, 0, 1), std::invalid_argument);
    EXPECT_THROW(pipeline_schedule(schedule, 4, 4, 0), std::invalid_argument);
    EXPECT_THROW(ideal_bubble_fraction(schedule, -1, 4, 1), std::invalid_argument);
  }
  EXPECT_THROW(pipeline_schedule(PipelineSchedule::one_f_one_b, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(PipelineSchedule::gpipe, 4, 8, 2), std::invalid_argument);
  EXPECT_THROW(pipeline_schedule(PipelineSchedule::zero_bubble_h1, 4, 8, 2), std::invalid_argument);
  // Megatron-LM: micro-batches a multiple of the stages with interleaving.
  try {
    pipeline_schedule(PipelineSchedule::interleaved, 4, 6, 2);
    FAIL() << "m % p != 0 accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("multiple"), std::string::npos) << e.what();
  }
}

// Every stage runs F and B of every (micro-batch, chunk) exactly once (and ZB-H1 W once, after
// its B); no schedule deadlocks.
TEST(PipelineSchedule, EveryPassOnceAndNoDeadlock) {
  for (const auto schedule : all_schedules)
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m)
        for (int v = 1; v <= 3; ++v) {
          if (!valid(schedule, p, m, v))
            continue;
          SCOPED_TRACE(testing::Message()
                       << to_string(schedule) << " p=" << p << " m=" << m << " v=" << v);
          const PipelineOps ops = pipeline_schedule(schedule, p, m, v);
          ASSERT_EQ(ops.size(), static_cast<std::size_t>(p));
          for (const auto& stage : ops) {
            std::map<std::tuple<Kind, int, int>, int> count;
            for (const auto& op : stage) {
              ASSERT_GE(op.micro_batch, 0);
              ASSERT_LT(op.micro_batch, m);
              ASSERT_GE(op.chunk, 0);
              ASSERT_LT(op.chunk, v);
              if (op.kind == Kind::backward_weight) {
                ASSERT_EQ((count[{Kind::backward_input, op.micro_batch, op.chunk}]), 1)
                    << "W before its B";
              }
              ++count[{op.kind, op.micro_batch, op.chunk}];
            }
            const bool split = schedule == PipelineSchedule::zero_bubble_h1;
            for (int mb = 0; mb < m; ++mb)
              for (int c = 0; c < v; ++c) {
                EXPECT_EQ((count[{Kind::forward, mb, c}]), 1);
                EXPECT_EQ((count[{Kind::backward, mb, c}]), split ? 0 : 1);
                EXPECT_EQ((count[{Kind::backward_input, mb, c}]), split ? 1 : 0);
                EXPECT_EQ((count[{Kind::backward_weight, mb, c}]), split ? 1 : 0);
              }
            EXPECT_EQ(stage.size(), static_cast<std::size_t>(m * v * (split ? 3 : 2)));
          }
          EXPECT_NO_THROW(evaluate_schedule(ops, uniform_durations(p, v, ones(schedule, v))));
        }
}

TEST(PipelineSchedule, GpipeRunsBackwardsInReverse) {
  const PipelineOps ops = pipeline_schedule(PipelineSchedule::gpipe, 3, 4);
  for (const auto& stage : ops)
    EXPECT_EQ(text(stage), "F0 F1 F2 F3 B3 B2 B1 B0");
}

// Megatron-LM's forward_backward_pipelining_without_interleaving, p = 4, m = 8: warmup
// p - s - 1 forwards, then F(warmup + i) B(i), then the cooldown backwards.
TEST(PipelineSchedule, OneFOneBIsMegatrons) {
  const PipelineOps ops = pipeline_schedule(PipelineSchedule::one_f_one_b, 4, 8);
  EXPECT_EQ(text(ops[0]), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(text(ops[1]), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(text(ops[3]), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
  // Fewer micro-batches than the warmup: all forwards, then all backwards.
  EXPECT_EQ(text(pipeline_schedule(PipelineSchedule::one_f_one_b, 4, 2)[0]), "F0 F1 B0 B1");
}

// Megatron-LM's forward_backward_pipelining_with_interleaving, p = 2, m = 4, v = 2 (8 passes a
// stage): warmup (p - s - 1) * 2 + (v - 1) * p = 4 on stage 0, 2 on stage 1; the k-th forward
// runs chunk (k / 2) % 2 on micro-batch (k / 4) * 2 + k % 2, backwards the chunks reversed.
TEST(PipelineSchedule, InterleavedIsMegatrons) {
  const PipelineOps ops = pipeline_schedule(PipelineSchedule::interleaved, 2, 4, 2);
  EXPECT_EQ(text(ops[0]), "F0 F1 F0.1 F1.1 F2 B0.1 F3 B1.1 F2.1 B0 F3.1 B1 B2.1 B3.1 B2 B3");
  EXPECT_EQ(text(ops[1]), "F0 F1 F0.1 B0.1 F1.1 B1.1 F2 B0 F3 B1 F2.1 B2.1 F3.1 B3.1 B2 B3");
  // m == p: Megatron's all_warmup_microbatches, every forward before any backward.
  EXPECT_EQ(text(pipeline_schedule(PipelineSchedule::interleaved, 2, 2, 2)[1]),
            "F0 F1 F0.1 F1.1 B0.1 B1.1 B0 B1");
}

// ZB-H1 (sail-sg's WeightGradStore schedule), p = 4, m = 8: 1F1B's F and B; stage 0 runs each W
// after its B, stage s > 0 queues the Ws of its first s steady backwards and of the last steady
// one, and runs them (oldest first) in the cooldown after each B and at the end.
TEST(PipelineSchedule, ZeroBubbleH1DefersWeightGradients) {
  const PipelineOps ops = pipeline_schedule(PipelineSchedule::zero_bubble_h1, 4, 8);
  EXPECT_EQ(text(ops[0]), "F0 F1 F2 F3 Bi0 W0 F4 Bi1 W1 F5 Bi2 W2 F6 Bi3 W3 F7 Bi4 W4 Bi5 W5 "
                          "Bi6 W6 Bi7 W7");
  EXPECT_EQ(text(ops[1]), "F0 F1 F2 Bi0 F3 Bi1 W1 F4 Bi2 W2 F5 Bi3 W3 F6 Bi4 W4 F7 Bi5 W0 Bi6 "
                          "W5 Bi7 W6 W7");
  EXPECT_EQ(text(ops[2]), "F0 F1 Bi0 F2 Bi1 F3 Bi2 W2 F4 Bi3 W3 F5 Bi4 W4 F6 Bi5 W5 F7 Bi6 W0 "
                          "Bi7 W1 W6 W7");
  EXPECT_EQ(text(ops[3]), "F0 Bi0 F1 Bi1 F2 Bi2 F3 Bi3 W3 F4 Bi4 W4 F5 Bi5 W5 F6 Bi6 W6 F7 Bi7 "
                          "W0 W1 W2 W7");
}

// F = 1, B = 2, no p2p: makespan (m + p - 1)(F + B), bubble fraction (p-1) / (m+p-1).
TEST(PipelineSchedule, GpipeAndOneFOneBMakespan) {
  for (const auto schedule : {PipelineSchedule::gpipe, PipelineSchedule::one_f_one_b})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m) {
        SCOPED_TRACE(testing::Message() << to_string(schedule) << " p=" << p << " m=" << m);
        const PipelineTiming t = evaluate_schedule(pipeline_schedule(schedule, p, m),
                                                   uniform_durations(p, 1, {1, 2, 0}));
        EXPECT_DOUBLE_EQ(t.makespan, (m + p - 1) * 3.0);
        EXPECT_DOUBLE_EQ(t.bubble_fraction, (p - 1.0) / (m + p - 1));
        for (int s = 0; s < p; ++s) {
          EXPECT_DOUBLE_EQ(t.busy[s], 3.0 * m);
          EXPECT_DOUBLE_EQ(t.first_start[s], s);
          // Idle after its first op: (p-1)(F+B) less the s forwards it waited for.
          EXPECT_DOUBLE_EQ(t.bubble[s], (p - 1) * 3.0 - s);
        }
      }
}

TEST(PipelineSchedule, PeakMicroBatchesInFlight) {
  for (int p = 1; p <= 8; ++p)
    for (int m = 1; m <= 16; ++m) {
      const auto d = uniform_durations(p, 1, {1, 2, 0});
      const PipelineTiming gpipe =
          evaluate_schedule(pipeline_schedule(PipelineSchedule::gpipe, p, m), d);
      const PipelineTiming f1b1 =
          evaluate_schedule(pipeline_schedule(PipelineSchedule::one_f_one_b, p, m), d);
      const PipelineTiming zb =
          evaluate_schedule(pipeline_schedule(PipelineSchedule::zero_bubble_h1, p, m),
                            uniform_durations(p, 1, {1, 1, 1}));
      for (int s = 0; s < p; ++s) {
        EXPECT_DOUBLE_EQ(gpipe.peak_in_flight[s], m);
        EXPECT_DOUBLE_EQ(f1b1.peak_in_flight[s], std::min(m, p - s));
        EXPECT_DOUBLE_EQ(zb.peak_in_flight[s], std::min(m, p - s)); // ZB-H1: as 1F1B
      }
    }
  // Interleaved p = 4, m = 8, v = 2: stage 0 holds its 10 warmup chunks and one more before the
  // first backward, 11 halves of its activation; the last stage 2 (p - s - 1 = 0) + 4 + 1 = 5.
  const PipelineTiming t =
      evaluate_schedule(pipeline_schedule(PipelineSchedule::interleaved, 4, 8, 2),
                        uniform_durations(4, 2, {0.5, 1, 0}));
  EXPECT_DOUBLE_EQ(t.peak_in_flight[0], 5.5);
  EXPECT_DOUBLE_EQ(t.peak_in_flight[1], 4.5);
  EXPECT_DOUBLE_EQ(t.peak_in_flight[2], 3.5);
  EXPECT_DOUBLE_EQ(t.peak_in_flight[3], 2.5);
}

// p = 2, m = 4, v = 2, per chunk F = 0.5, B = 1 (a stage's whole F = 1, B = 2), no p2p. Virtual
// stages 0, 1, 2, 3 = stage 0 chunk 0, stage 1 chunk 0, stage 0 chunk 1, stage 1 chunk 1. By hand,
// [start, end] of each op in the orders of InterleavedIsMegatrons:
//   stage 0: F0 [0,.5] F1 [.5,1] F0.1 [1,1.5] F1.1 [1.5,2] F2 [2,2.5] B0.1 [3,4] F3 [4,4.5]
//            B1.1 [4.5,5.5] F2.1 [5.5,6] B0 [6,7] F3.1 [7,7.5] B1 [7.5,8.5] B2.1 [9,10]
//            B3.1 [10.5,11.5] B2 [11.5,12.5] B3 [12.5,13.5]
//   stage 1: F0 [.5,1] F1 [1,1.5] F0.1 [1.5,2] B0.1 [2,3] F1.1 [3,3.5] B1.1 [3.5,4.5] F2 [4.5,5]
//            B0 [5,6] F3 [6,6.5] B1 [6.5,7.5] F2.1 [7.5,8] B2.1 [8,9] F3.1 [9,9.5]
//            B3.1 [9.5,10.5] B2 [10.5,11.5] B3 [11.5,12.5]
// Makespan 13.5 = m (F + B) + (p-1)(F + B) / v = 12 + 1.5: each stage idles 1.5, bubble over
// compute 1.5 / 12 = (1/v)(p-1)/m = 1/8 (Narayanan et al. 2021), over makespan 1/9.
TEST(PipelineSchedule, InterleavedBubbleByHand) {
  const PipelineTiming t =
      evaluate_schedule(pipeline_schedule(PipelineSchedule::interleaved, 2, 4, 2),
                        uniform_durations(2, 2, {0.5, 1, 0}));
  EXPECT_DOUBLE_EQ(t.makespan, 13.5);
  EXPECT_DOUBLE_EQ(t.busy[0], 12);
  EXPECT_DOUBLE_EQ(t.first_start[1], 0.5);
  EXPECT_DOUBLE_EQ(t.bubble[0], 1.5);
  EXPECT_DOUBLE_EQ(t.bubble[1], 1.0);
  EXPECT_DOUBLE_EQ(t.bubble_fraction, 1.0 / 9);
  EXPECT_DOUBLE_EQ((t.makespan - t.busy[0]) / t.busy[0], 1.0 / 8);
}

// Megatron's result for every valid (p, m, v): the bubble over compute time is (1/v)(p-1)/m,
// 1F1B's divided by v.
TEST(PipelineSchedule, InterleavedBubbleIsOneVthOfOneFOneB) {
  for (int p = 1; p <= 8; ++p)
    for (int m = p; m <= 16; m += p)
      for (int v = 1; v <= 3; ++v) {
        SCOPED_TRACE(testing::Message() << "p=" << p << " m=" << m << " v=" << v);
        const PipelineTiming t =
            evaluate_schedule(pipeline_schedule(PipelineSchedule::interleaved, p, m, v),
                              uniform_durations(p, v, {1.0 / v, 2.0 / v, 0}));
        EXPECT_NEAR((t.makespan - 3.0 * m) / (3.0 * m), (p - 1.0) / (v * m), 1e-12);
      }
}

// ZB-H1, F = B = W = 1, p = 4, m = 8: makespan 3m + (p-1)(F + B - W) = 27, against 1F1B's
// (m + p - 1)(F + B + W) = 33: each stage idles (makespan - busy) 3 instead of 9, a third.
TEST(PipelineSchedule, ZeroBubbleH1ThirdOfOneFOneBBubble) {
  const auto d = uniform_durations(4, 1, {1, 1, 1});
  const PipelineTiming zb =
      evaluate_schedule(pipeline_schedule(PipelineSchedule::zero_bubble_h1, 4, 8), d);
  const PipelineTiming f1b1 =
      evaluate_schedule(pipeline_schedule(PipelineSchedule::one_f_one_b, 4, 8), d);
  EXPECT_DOUBLE_EQ(zb.makespan, 27);
  EXPECT_DOUBLE_EQ(f1b1.makespan, 33);
  for (int s = 0; s < 4; ++s) {
    EXPECT_DOUBLE_EQ(zb.busy[s], 24);
    EXPECT_DOUBLE_EQ(zb.makespan - zb.busy[s], 3);
    EXPECT_DOUBLE_EQ(f1b1.makespan - f1b1.busy[s], 9);
    EXPECT_DOUBLE_EQ(zb.bubble[s], 3.0 - s); // the warmup wait of s forwards excluded
  }
  EXPECT_DOUBLE_EQ(zb.bubble_fraction, 3.0 / 27);
  EXPECT_DOUBLE_EQ(f1b1.bubble_fraction, 9.0 / 33);
}

// m = 1: the micro-batch crosses p - 1 stage boundaries forwards and p - 1 backwards.
TEST(PipelineSchedule, PointToPointAddsTwoHopsPerBoundary) {
  for (int p = 1; p <= 8; ++p) {
    const PipelineTiming t =
        evaluate_schedule(pipeline_schedule(PipelineSchedule::one_f_one_b, p, 1),
                          uniform_durations(p, 1, {1, 2, 0}), 0.25);
    EXPECT_DOUBLE_EQ(t.makespan, 3.0 * p + 2 * (p - 1) * 0.25) << "p=" << p;
  }
  // Chunks of one stage (p = 1, v = 3) pass activations without a hop.
  const PipelineTiming t =
      evaluate_schedule(pipeline_schedule(PipelineSchedule::interleaved, 1, 1, 3),
                        uniform_durations(1, 3, {1, 2, 0}), 5);
  EXPECT_DOUBLE_EQ(t.makespan, 9);
}

// Stages of different speeds, 1F1B, p = 2, m = 2; stage 0 F = 1, B = 2, stage 1 F = 2, B = 4:
//   stage 0: F0 [0,1] F1 [1,2] B0 [7,9] B1 [13,15];  stage 1: F0 [1,3] B0 [3,7] F1 [7,9] B1 [9,13].
TEST(PipelineSchedule, UnevenStagesByHand) {
  StageDurations d{{{1, 2, 0}}, {{2, 4, 0}}};
  const PipelineTiming t =
      evaluate_schedule(pipeline_schedule(PipelineSchedule::one_f_one_b, 2, 2), d);
  EXPECT_DOUBLE_EQ(t.makespan, 15);
  EXPECT_DOUBLE_EQ(t.busy[0], 6);
  EXPECT_DOUBLE_EQ(t.busy[1], 12);
  EXPECT_DOUBLE_EQ(t.bubble[0], 9);
  EXPECT_DOUBLE_EQ(t.bubble[1], 2);
  EXPECT_DOUBLE_EQ(t.bubble_fraction, 1 - 18.0 / 30);
}

// The closed forms against the evaluator, uniform stages, F = B = W for ZB-H1 (also m < p, where
// the F-B chain and one W bound it), F = 1/v, B = 2/v per chunk otherwise.
TEST(PipelineSchedule, IdealBubbleFractionMatchesEvaluator) {
  for (const auto schedule : all_schedules)
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m)
        for (int v = 1; v <= 3; ++v) {
          if (!valid(schedule, p, m, v))
            continue;
          SCOPED_TRACE(testing::Message()
                       << to_string(schedule) << " p=" << p << " m=" << m << " v=" << v);
          const PipelineTiming t = evaluate_schedule(pipeline_schedule(schedule, p, m, v),
                                                     uniform_durations(p, v, ones(schedule, v)));
          EXPECT_NEAR(t.bubble_fraction, ideal_bubble_fraction(schedule, p, m, v), 1e-12);
        }
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(PipelineSchedule::one_f_one_b, 4, 8), 3.0 / 11);
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(PipelineSchedule::interleaved, 4, 8, 2), 3.0 / 19);
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(PipelineSchedule::zero_bubble_h1, 4, 8), 3.0 / 27);
}

// With other F : B : W ratios (every stage alike): GPipe, 1F1B and interleaved keep their
// fractions; ZB-H1 (m >= p) idles (p-1)(F + B - min(W, F, B)) a stage.
TEST(PipelineSchedule, IdealBubbleFractionWithDurations) {
  const double times[] = {0.5, 1, 2};
  for (const auto schedule : all_schedules)
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m)
        for (int v = 1; v <= 2; ++v) {
          if (!valid(schedule, p, m, v) || (schedule == PipelineSchedule::zero_bubble_h1 && m < p))
            continue;
          const PipelineOps ops = pipeline_schedule(schedule, p, m, v);
          for (const double f : times)
            for (const double b : times)
              for (const double w : times) {
                SCOPED_TRACE(testing::Message()
                             << to_string(schedule) << " p=" << p << " m=" << m << " v=" << v
                             << " F=" << f << " B=" << b << " W=" << w);
                const ChunkDurations d{f, b, w};
                const PipelineTiming t = evaluate_schedule(ops, uniform_durations(p, v, d));
                EXPECT_NEAR(t.bubble_fraction, ideal_bubble_fraction(schedule, p, m, v, d), 1e-12);
              }
        }
  // p = 4, m = 8, F = B = 1, W = 0.5: idle 3 * 1.5 = 4.5 beside 20 of compute.
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(PipelineSchedule::zero_bubble_h1, 4, 8, 1, {1, 1, 0.5}),
                   4.5 / 24.5);
  // W longer than F: 3 * (1 + 2 - 1) = 6 idle, not Qi et al.'s 3 * (1 + 2 - 2) = 3.
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(PipelineSchedule::zero_bubble_h1, 4, 8, 1, {1, 2, 2}),
                   6.0 / 46);
  EXPECT_DOUBLE_EQ(ideal_bubble_fraction(PipelineSchedule::zero_bubble_h1, 4, 2, 1, {1, 1, 1}),
                   ideal_bubble_fraction(PipelineSchedule::zero_bubble_h1, 4, 2));
  EXPECT_THROW(ideal_bubble_fraction(PipelineSchedule::zero_bubble_h1, 4, 2, 1, {1, 2, 1}),
               std::invalid_argument);
  EXPECT_THROW(ideal_bubble_fraction(PipelineSchedule::one_f_one_b, 4, 8, 1, {-1, 2, 0}),
               std::invalid_argument);
}

TEST(PipelineSchedule, EvaluatorDetectsDeadlock) {
  const auto d = uniform_durations(2, 1, {1, 2, 0});
  // Stage 1 wants F1 before B0; stage 0 runs F1 only after B0, which needs stage 1's B0.
  const PipelineOps crossed{{{Kind::forward, 0, 0},
                             {Kind::backward, 0, 0},
                             {Kind::forward, 1, 0},
                             {Kind::backward, 1, 0}},
                            {{Kind::forward, 0, 0},
                             {Kind::forward, 1, 0},
                             {Kind::backward, 1, 0},
                             {Kind::backward, 0, 0}}};
  try {
    evaluate_schedule(crossed, d);
    FAIL() << "deadlock not detected";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("deadlock"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("stage 1 at F1"), std::string::npos) << e.what();
  }
  // A backward before its own forward.
  const PipelineOps backwards_first{{{Kind::backward, 0, 0}, {Kind::forward, 0, 0}}};
  EXPECT_THROW(evaluate_schedule(backwards_first, uniform_durations(1, 1, {1, 2, 0})),
               std::runtime_error);
  // An op waiting for one no stage runs: stage 1 never runs F0.
  const PipelineOps missing{{{Kind::forward, 0, 0}, {Kind::backward, 0, 0}}, {}};
  EXPECT_THROW(evaluate_schedule(missing, d), std::runtime_error);
}

TEST(PipelineSchedule, EvaluatorRejectsBadInput) {
  const auto d = uniform_durations(1, 1, {1, 2, 0});
  const PipelineOps twice{{{Kind::forward, 0, 0}, {Kind::forward, 0, 0}}};
  EXPECT_THROW(evaluate_schedule(twice, d), std::invalid_argument);
  const PipelineOps bad_chunk{{{Kind::forward, 0, 1}}};
  EXPECT_THROW(evaluate_schedule(bad_chunk, d), std::invalid_argument);
  const PipelineOps ok{{{Kind::forward, 0, 0}, {Kind::backward, 0, 0}}};
  EXPECT_THROW(evaluate_schedule(ok, d, -1), std::invalid_argument);
  EXPECT_THROW(evaluate_schedule(ok, uniform_durations(2, 1, {1, 2, 0})), std::invalid_argument);
  EXPECT_THROW(evaluate_schedule(ok, uniform_durations(1, 1, {-1, 2, 0})), std::invalid_argument);
  EXPECT_THROW(evaluate_schedule(PipelineOps{}, StageDurations{}), std::invalid_argument);
  EXPECT_DOUBLE_EQ(evaluate_schedule(ok, d).makespan, 3);
}

} // namespace
} // namespace overlapsim::parallel
