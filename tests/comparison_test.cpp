// validate's comparison (trace/comparison.h) on hand-made rows and traces, without a real run.
#include "trace/comparison.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

SummaryRow row(const std::string& algorithm, double iteration, double samples) {
  SummaryRow r;
  r.algorithm = algorithm;
  r.metrics.window_start_s = 0;
  r.metrics.window_end_s = 2 * iteration;
  r.metrics.steps = 2;
  r.metrics.iteration_time_s = iteration;
  r.metrics.samples = samples;
  r.metrics.throughput_samples_s = samples / (2 * iteration);
  return r;
}

TEST(Comparison, MetricsOpsAndAWarningPastFifteenPercent) {
  // ddp predicted 0.10 s a step against 0.12 s measured: -16.7%, past the 15% validate aims under.
  const std::vector<SummaryRow> predicted = {row("ddp", 0.10, 32)};
  auto measured = std::vector<SummaryRow>{row("ddp", 0.12, 32)};
  measured[0].metrics.step_times_s = {0.11, 0.13};
  measured[0].speedup_vs_ddp = 1; // DDP ran: its own reference
  // One worker, one forward a step: 40 ms predicted, 50 ms measured.
  Trace p, m;
  p.workers = m.workers = 1;
  for (auto* t : {&p, &m})
    for (int step = 0; step < 2; ++step) {
      TraceEvent e;
      e.category = OpCategory::forward;
      e.name = t->intern("fwd a..b");
      e.start = step * 0.1;
      e.end = e.start + (t == &p ? 0.04 : 0.05);
      e.step = step;
      t->events.push_back(e);
    }
  const auto c = compare_predicted_measured(predicted, measured, {&p}, {&m});
  ASSERT_EQ(c.rows.size(), 7u); // six metrics and forward + backward per step
  EXPECT_EQ(c.rows[0]["metric"], "iteration_time_s");
  EXPECT_NEAR(c.rows[0]["relative_error"].get<double>(), -1.0 / 6, 1e-12);
  EXPECT_NEAR(c.rows[0]["absolute_error"].get<double>(), -0.02, 1e-12);
  EXPECT_DOUBLE_EQ(c.rows[0]["measured_step_s"]["median"].get<double>(), 0.12);
  EXPECT_THAT(c.rows[0]["warning"].get<std::string>(), HasSubstr("-16.7% off"));
  ASSERT_EQ(c.warnings.size(), 1u);
  EXPECT_THAT(c.csv, HasSubstr("ddp,iteration_time_s,0.1,0.12,-0.166667,-0.02\n"));
  EXPECT_THAT(c.step_lines, HasSubstr("measured steps 110 / 120 / 130 ms"));
  ASSERT_EQ(c.ops.size(), 1u);
  EXPECT_EQ(c.ops[0]["op"], "forward");
  EXPECT_NEAR(c.ops[0]["median_error"].get<double>(), -0.2, 1e-12); // 40 vs 50 ms
  // Both steps' forwards took 50 ms: no noise between the halves of the run.
  EXPECT_NEAR(c.ops[0]["measured"]["halves_spread"].get<double>(), 0.0, 1e-12);
  EXPECT_THAT(c.op_table, HasSubstr("noise"));
  EXPECT_THAT(c.op_table, HasSubstr("-20.0%    0.0%"));
  EXPECT_THAT(c.csv, HasSubstr("ddp,op:forward:median_s,0.04,0.05,-0.200000,"));
  EXPECT_THAT(c.op_table, HasSubstr("forward"));
  // Forward and backward per step: 40 ms predicted, 50 ms measured, -20%; one algorithm alone is
  // no sign of the machine changing.
  EXPECT_EQ(c.rows[6]["metric"], "forward_backward_s");
  EXPECT_NEAR(c.rows[6]["predicted"].get<double>(), 0.04, 1e-12);
  EXPECT_NEAR(c.rows[6]["measured"].get<double>(), 0.05, 1e-12);
  EXPECT_NEAR(c.rows[6]["relative_error"].get<double>(), -0.2, 1e-12);
  // Both zero: no error; only the measurement zero: no relative error (null).
  EXPECT_EQ(relative_error(0, 0), 0);
  EXPECT_TRUE(std::isnan(relative_error(1, 0)));
}

TEST(Comparison, NoSpeedupRowWithoutAMeasuredDdp) {
  // CDP-v2 validated alone: the simulator's speedup against its own DDP (1.04) has no measured
  // counterpart (the run's reads 0); a row of 1.04 against 0 once made the plot fail and nothing
  // was published.
  auto predicted = std::vector<SummaryRow>{row("cdp-v2", 0.10, 32)};
  predicted[0].speedup_vs_ddp = 1.04;
  const std::vector<SummaryRow> measured = {row("cdp-v2", 0.11, 32)};
  Trace p, m;
  p.workers = m.workers = 1;
  const auto c = compare_predicted_measured(predicted, measured, {&p}, {&m});
  ASSERT_EQ(c.rows.size(), 5u);
  for (const auto& r : c.rows)
    EXPECT_NE(r["metric"], "speedup_vs_ddp");
  EXPECT_THAT(c.csv, Not(HasSubstr("speedup_vs_ddp")));
  EXPECT_THAT(c.table, Not(HasSubstr("speedup_vs_ddp")));
}

TEST(Comparison, AnOpKindBothStreamsRunIsTwoOpsNamedByTheirStream) {
  // CDP steps a stage's optimizer on the compute stream and its neighbour's on the communication
  // stream: 30 ms and 0.2 ms predicted, 31 ms and 0.1 ms measured. One row each, named apart in
  // the table and the csv; a kind only one stream runs (forward) keeps its name.
  const std::vector<SummaryRow> predicted = {row("cdp-v2", 0.10, 32)};
  const std::vector<SummaryRow> measured = {row("cdp-v2", 0.10, 32)};
  Trace p, m;
  p.workers = m.workers = 1;
  for (auto* t : {&p, &m})
    for (int step = 0; step < 2; ++step) {
      const auto add = [&](StreamKind stream, OpCategory category, const char* name, double s) {
        TraceEvent e;
        e.stream = stream;
        e.category = category;
        e.name = t->intern(name);
        e.step = step;
        e.start = step * 0.1;
        e.end = e.start + s;
        t->events.push_back(e);
      };
      add(StreamKind::compute, OpCategory::forward, "fwd a..b", 0.01);
      add(StreamKind::compute, OpCategory::optimizer, "optimizer step", t == &p ? 0.030 : 0.031);
      add(StreamKind::comm, OpCategory::optimizer, "optimizer step", t == &p ? 0.0002 : 0.0001);
    }
  const auto c = compare_predicted_measured(predicted, measured, {&p}, {&m});
  ASSERT_EQ(c.ops.size(), 3u);
  int steps = 0;
  for (const auto& op : c.ops)
    if (op["op"] == "optimizer step") {
      ++steps;
      const bool comm = op["stream"] == "comm";
      EXPECT_NEAR(op["median_error"].get<double>(), comm ? 1.0 : -1.0 / 31, 1e-9) << op.dump();
    }
  EXPECT_EQ(steps, 2);
  EXPECT_THAT(c.op_table, HasSubstr("optimizer step (compute)"));
  EXPECT_THAT(c.op_table, HasSubstr("optimizer step (comm)"));
  EXPECT_THAT(c.csv, HasSubstr("cdp-v2,op:optimizer step (comm):median_s,0.0002,0.0001,1.000000,"));
  EXPECT_THAT(c.csv, HasSubstr("cdp-v2,op:forward:median_s,"));
  EXPECT_THAT(c.op_table, Not(HasSubstr("forward (")));
}

Trace forwards(double seconds) {
  Trace t;
  t.workers = 1;
  for (int step = 0; step < 2; ++step) {
    TraceEvent e;
    e.category = OpCategory::forward;
    e.name = t.intern("fwd a..b");
    e.start = step * 0.1;
    e.end = e.start + seconds;
    t.events.push_back(e);
  }
  return t;
}

TEST(Comparison, ComputeOffTheSameWayInEveryAlgorithmIsTheMachine) {
  // Both algorithms' iteration times are within 15%, but their forwards ran 30% and 25% longer
  // than the profile priced them: one warning names the range and the machine.
  const std::vector<SummaryRow> predicted = {row("ddp", 0.10, 32), row("acco", 0.10, 32)};
  const std::vector<SummaryRow> measured = {row("ddp", 0.11, 32), row("acco", 0.11, 32)};
  const Trace p = forwards(0.040), m_ddp = forwards(0.052), m_acco = forwards(0.050);
  const auto slow = compare_predicted_measured(predicted, measured, {&p, &p}, {&m_ddp, &m_acco});
  ASSERT_EQ(slow.warnings.size(), 1u);
  EXPECT_THAT(slow.warnings[0], HasSubstr("ran slower in every algorithm's run than the profile "
                                          "priced them (priced -23% to -20%)"));
  // One algorithm 30% off and the other 5% off: the model, not the machine; no warning.
  const Trace m_close = forwards(0.042);
  EXPECT_TRUE(compare_predicted_measured(predicted, measured, {&p, &p}, {&m_ddp, &m_close})
                  .warnings.empty());
  // Opposite signs: no common drift.
  const Trace m_fast = forwards(0.030);
  EXPECT_TRUE(compare_predicted_measured(predicted, measured, {&p, &p}, {&m_ddp, &m_fast})
                  .warnings.empty());
}

} // namespace
} // namespace overlapsim
