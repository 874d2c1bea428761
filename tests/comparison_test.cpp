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
  // One repeat: its range is its value, and a prediction off it is outside.
  EXPECT_THAT(c.csv, HasSubstr("ddp,iteration_time_s,0.1,0.12,-0.166667,-0.02,0.12,0.12,false\n"));
  EXPECT_EQ(c.rows[0]["within_noise"], false);
  EXPECT_EQ(c.rows[0]["measured_repeats"].size(), 1u);
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

TEST(Comparison, RepeatedFigureIsTheMedianAndRangeOfItsRepeats) {
  // Repeats of 10, 12 and 11 ms: median 11, range 10..12, spread 2 / 11.
  const Repeated r = repeated({0.010, 0.012, 0.011});
  EXPECT_DOUBLE_EQ(r.median, 0.011);
  EXPECT_DOUBLE_EQ(r.min, 0.010);
  EXPECT_DOUBLE_EQ(r.max, 0.012);
  EXPECT_NEAR(r.spread(), 2.0 / 11, 1e-12);
  ASSERT_EQ(r.values.size(), 3u);
  EXPECT_DOUBLE_EQ(r.values[1], 0.012); // in the order they ran
  // 11.5 ms predicted: +4.5% against the median, inside 10..12: noise. 13 ms: outside.
  EXPECT_NEAR(relative_error(0.0115, r.median), 0.5 / 11, 1e-12);
  EXPECT_TRUE(within_noise(0.0115, r));
  EXPECT_TRUE(within_noise(0.010, r)); // the range's ends are in it
  EXPECT_FALSE(within_noise(0.013, r));
  EXPECT_FALSE(within_noise(std::nan(""), r));
  // An even count's median is the mean of the middle two; NaNs are left out of the statistics.
  EXPECT_DOUBLE_EQ(repeated({0.010, 0.014}).median, 0.012);
  const Repeated with_nan = repeated({std::nan(""), 0.02, 0.04});
  EXPECT_DOUBLE_EQ(with_nan.median, 0.03);
  EXPECT_EQ(with_nan.values.size(), 3u);
  EXPECT_TRUE(std::isnan(repeated({std::nan("")}).median));
  // One repeat: no spread; only the measurement itself is inside.
  EXPECT_EQ(repeated({0.01}).spread(), 0.0);
  EXPECT_TRUE(within_noise(0.01, repeated({0.01})));
  EXPECT_FALSE(within_noise(0.0101, repeated({0.01})));
  // The repeat validate writes out: the one nearest the median iteration time, the earliest of
  // equals (two repeats: both are as near; the first).
  EXPECT_EQ(median_repeat({row("ddp", 0.10, 32), row("ddp", 0.12, 32), row("ddp", 0.11, 32)}), 2u);
  EXPECT_EQ(median_repeat({row("ddp", 0.10, 32), row("ddp", 0.12, 32)}), 0u);
  EXPECT_EQ(median_repeat({}), 0u);
}

TEST(Comparison, RepeatsGiveMediansRangesAndMarkErrorsWithinNoise) {
  // DDP measured three times: 100, 120 and 110 ms a step, forwards of 50, 52 and 48 ms; predicted
  // 115 ms a step and 40 ms forwards.
  const std::vector<double> iterations = {0.10, 0.12, 0.11}, forward_s = {0.050, 0.052, 0.048};
  std::vector<SummaryRow> repeats;
  std::vector<Trace> traces;
  for (std::size_t r = 0; r < 3; ++r) {
    repeats.push_back(row("ddp", iterations[r], 32));
    traces.push_back(forwards(forward_s[r]));
  }
  const Trace p = forwards(0.040);
  const std::vector<std::vector<SummaryRow>> measured = {repeats}; // one algorithm, 3 repeats
  const std::vector<std::vector<const Trace*>> measured_traces = {
      {&traces[0], &traces[1], &traces[2]}};
  const auto compare = [&](double predicted_iteration) {
    return compare_predicted_measured({row("ddp", predicted_iteration, 32)}, measured, {&p},
                                      measured_traces);
  };
  const auto c = compare(0.115);
  ASSERT_EQ(c.rows[0]["metric"], "iteration_time_s");
  EXPECT_DOUBLE_EQ(c.rows[0]["measured"].get<double>(), 0.11);                 // the median
  EXPECT_NEAR(c.rows[0]["relative_error"].get<double>(), 0.005 / 0.11, 1e-12); // +4.5%
  EXPECT_EQ(c.rows[0]["measured_repeats"],
            (nlohmann::ordered_json{0.10, 0.12, 0.11})); // each repeat, in the order they ran
  EXPECT_DOUBLE_EQ(c.rows[0]["measured_min"].get<double>(), 0.10);
  EXPECT_DOUBLE_EQ(c.rows[0]["measured_max"].get<double>(), 0.12);
  EXPECT_NEAR(c.rows[0]["measured_spread"].get<double>(), 0.02 / 0.11, 1e-12);
  EXPECT_EQ(c.rows[0]["within_noise"], true);
  EXPECT_THAT(c.csv, HasSubstr("ddp,iteration_time_s,0.115,0.11,0.045455,"));
  EXPECT_THAT(c.csv, HasSubstr(",0.1,0.12,true\n"));
  EXPECT_THAT(c.table, HasSubstr("+4.5%  within noise -9.1%..+9.1%\n"));
  EXPECT_TRUE(c.warnings.empty());
  // Forward + backward per step: the median of 50, 52, 48 ms; 40 ms is outside 48..52.
  const auto& fb = c.rows.back();
  ASSERT_EQ(fb["metric"], "forward_backward_s");
  EXPECT_NEAR(fb["measured"].get<double>(), 0.050, 1e-12);
  EXPECT_EQ(fb["within_noise"], false);
  EXPECT_THAT(c.table, HasSubstr("-20.0%  noise -4.0%..+4.0%\n"));
  // Idle measured 0 in every repeat and predicted 0: within a range of nothing, said as it is.
  EXPECT_THAT(c.table, HasSubstr("+0.0%  within noise 0..0\n"));
  // The op: its measured side is the repeats' median, each repeat's beside it.
  ASSERT_EQ(c.ops.size(), 1u);
  EXPECT_NEAR(c.ops[0]["measured"]["median_s"].get<double>(), 0.050, 1e-12);
  ASSERT_EQ(c.ops[0]["measured_repeats"]["median_s"].size(), 3u);
  for (std::size_t r = 0; r < 3; ++r)
    EXPECT_NEAR(c.ops[0]["measured_repeats"]["median_s"][r].get<double>(), forward_s[r], 1e-12);
  EXPECT_EQ(c.ops[0]["median_within_noise"], false);
  EXPECT_THAT(c.csv, HasSubstr("ddp,op:forward:median_s,0.04,0.05,-0.200000,"));
  EXPECT_THAT(c.op_table, HasSubstr("noise -4.0%..+4.0%"));
  // The machine's drift: compute ran 25% slower than priced; the repeats 0, +4% and -4% of their
  // median.
  const auto& drift = c.machine_drift;
  EXPECT_NEAR(drift["runs_vs_profile"]["median"].get<double>(), 0.25, 1e-12);
  EXPECT_NEAR(drift["runs_vs_profile"]["algorithms"]["ddp"].get<double>(), 0.25, 1e-12);
  ASSERT_EQ(drift["repeats_vs_median"].size(), 3u);
  EXPECT_NEAR(drift["repeats_vs_median"][0].get<double>(), 0.0, 1e-12);
  EXPECT_NEAR(drift["repeats_vs_median"][1].get<double>(), 0.04, 1e-12);
  EXPECT_NEAR(drift["repeats_vs_median"][2].get<double>(), -0.04, 1e-12);
  EXPECT_THAT(c.drift_line, HasSubstr("the runs +25.0% against the profile's price; the repeats "
                                      "-4.0% to +4.0% of their median"));
  // 130 ms predicted: +18.2%, outside 100..120 ms, and past the 15% warning.
  const auto off = compare(0.13);
  EXPECT_EQ(off.rows[0]["within_noise"], false);
  EXPECT_THAT(off.table, HasSubstr("+18.2%  noise -9.1%..+9.1%\n"));
  EXPECT_THAT(off.csv, HasSubstr(",0.1,0.12,false\n"));
  ASSERT_EQ(off.warnings.size(), 1u);
  EXPECT_THAT(off.warnings[0], Not(HasSubstr("within")));
}

} // namespace
} // namespace overlapsim
