// Metrics from hand-built traces: window, idle, exposed communication, interval arithmetic.
#include "trace/chrome_trace.h"
#include "trace/metrics.h"

#include <cmath>
#include <cstring>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace overlapsim {
namespace {

TEST(Intervals, UnionAndUncovered) {
  // [0,2) u [1,3) u [5,6) = 4
  EXPECT_DOUBLE_EQ(union_length({{0, 2}, {1, 3}, {5, 6}}), 4.0);
  // [0,10) minus ([1,2) u [4,6)) = 10 - 3 = 7
  EXPECT_DOUBLE_EQ(uncovered_length({{0, 10}}, {{4, 6}, {1, 2}}), 7.0);
  // Fully covered.
  EXPECT_DOUBLE_EQ(uncovered_length({{1, 2}, {3, 4}}, {{0, 5}}), 0.0);
  // Partly covered on both ends: [0,4) minus [-1,1) minus [3,9) = 2
  EXPECT_DOUBLE_EQ(uncovered_length({{0, 4}}, {{-1, 1}, {3, 9}}), 2.0);
}

TEST(Metrics, HandBuiltTwoWorkerTrace) {
  Trace t;
  t.workers = 2;
  const auto fwd = t.intern("fwd");
  const auto ar = t.intern("all-reduce");
  // Steps of 10 s. Worker 0 computes 6 s per step, worker 1 computes 8 s; each all-reduce runs
  // from 5 s to 9 s of the step on both (worker 0: 1 s hidden behind compute, 3 s exposed;
  // worker 1: 3 s hidden, 1 s exposed) and sends 100 bytes.
  for (int step = 0; step < 3; ++step) {
    const double base = 10.0 * step;
    t.events.push_back(
        {base, base + 6, 0, StreamKind::compute, OpCategory::forward, fwd, -1, step, 0, 0, 0});
    t.events.push_back(
        {base, base + 8, 1, StreamKind::compute, OpCategory::forward, fwd, -1, step, 0, 0, 0});
    for (int w = 0; w < 2; ++w) {
      t.events.push_back(
          {base + 5, base + 9, w, StreamKind::comm, OpCategory::comm, ar, -1, step, -1, 100, 0});
      t.steps.push_back({base + 10, w, step, 4});
    }
  }
  t.peak_memory = {{1, 2, 3, 4, 5}, {1, 2, 3, 4, 10}};
  const auto m = compute_metrics(t, /*warmup_steps=*/1, /*steps=*/2);
  EXPECT_DOUBLE_EQ(m.window_start_s, 10);
  EXPECT_DOUBLE_EQ(m.window_end_s, 30);
  EXPECT_DOUBLE_EQ(m.iteration_time_s, 10);
  EXPECT_EQ(m.step_times_s, (std::vector<double>{10, 10}));
  EXPECT_DOUBLE_EQ(m.throughput_samples_s, 16.0 / 20.0); // 2 steps x 2 workers x 4 samples
  EXPECT_DOUBLE_EQ(m.idle_fraction[0], 0.4);
  EXPECT_DOUBLE_EQ(m.idle_fraction[1], 0.2);
  EXPECT_DOUBLE_EQ(m.idle_fraction_mean, 0.3);
  EXPECT_DOUBLE_EQ(m.idle_fraction_max, 0.4);
  // Worker 0's 3 s of data moving beyond its compute: no network ends its step before worker 1's
  // 8 s of compute, so 2 s are exposed (a faster network removes them) and 1 s waits (issue 62.4).
  EXPECT_DOUBLE_EQ(m.exposed_comm_s, (2.0 + 1.0) / 2);
  EXPECT_DOUBLE_EQ(m.waiting_s, (1.0 + 0.0) / 2);
  EXPECT_DOUBLE_EQ(m.comm_bytes_per_step, 100);
  EXPECT_DOUBLE_EQ(m.compute_s_per_step, (6.0 + 8.0) / 2);
  EXPECT_DOUBLE_EQ(m.comm_s_per_step, 4.0);
  EXPECT_DOUBLE_EQ(m.peak_memory_bytes, 20);
  EXPECT_DOUBLE_EQ(m.memory_breakdown[4], 10);
}

// Step s lasts from when the later worker finished s - 1 to when the later one finished s.
TEST(Metrics, StepTimesAreMeasuredFromTheLaterWorker) {
  Trace t;
  t.workers = 2;
  const double ends[2][4] = {{1, 2, 9, 10}, {1.5, 3, 4, 12}}; // worker 0 stalls in step 2
  for (int w = 0; w < 2; ++w)
    for (int step = 0; step < 4; ++step)
      t.steps.push_back({ends[w][step], w, step, 1});
  const auto m = compute_metrics(t, /*warmup_steps=*/1, /*steps=*/3);
  EXPECT_DOUBLE_EQ(m.window_start_s, 1.5);
  EXPECT_DOUBLE_EQ(m.iteration_time_s, (12 - 1.5) / 3);
  EXPECT_EQ(m.step_times_s, (std::vector<double>{1.5, 6, 3})); // 3 - 1.5, 9 - 3, 12 - 9
}

TEST(Metrics, MissingStepIsAnError) {
  Trace t;
  t.workers = 1;
  t.steps.push_back({1.0, 0, 0, 1});
  EXPECT_THROW(compute_metrics(t, 1, 2), std::runtime_error);
}

TEST(Trace, SerializeRoundTrip) {
  Trace t;
  t.workers = 3;
  t.gpus_per_node = 3;
  t.end_time = 4.5;
  const auto id = t.intern("x");
  t.events.push_back({1, 2, 2, StreamKind::comm, OpCategory::comm, id, -1, 3, -1, 42, 0});
  t.steps.push_back({2, 1, 0, 8});
  t.peak_memory = {{1, 2, 3, 4, 5}};
  const auto u = Trace::deserialize(t.serialize());
  EXPECT_EQ(u.workers, 3);
  EXPECT_EQ(u.names, t.names);
  ASSERT_EQ(u.events.size(), 1u);
  EXPECT_EQ(u.events[0].bytes, 42);
  EXPECT_EQ(u.steps[0].samples, 8);
  EXPECT_EQ(u.peak_memory[0][4], 5);
  EXPECT_DOUBLE_EQ(u.end_time, 4.5);
}

TEST(ChromeTrace, BackToBackOpsNeverOverlapAfterRounding) {
  // Issue 15.17: ts and dur rounded separately overlapped back-to-back ops by 0.001 us. Ops end
  // where the next starts at times whose microsecond values round in opposite directions.
  Trace t;
  t.workers = 1;
  const auto id = t.intern("op");
  double time = 0;
  for (int i = 0; i < 1000; ++i) {
    const double next = time + 1.0004e-6 + i * 3.3e-10;
    t.events.push_back(
        {time, next, 0, StreamKind::compute, OpCategory::forward, id, -1, 0, -1, 0, 0});
    time = next;
  }
  const auto doc = nlohmann::json::parse(chrome_trace_json(t, "t"));
  double previous_end = -1;
  int checked = 0;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] != "X")
      continue;
    const double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    if (previous_end >= 0) {
      EXPECT_GE(ts, previous_end - 1e-9) << checked; // equal microsecond strings parse equal
    }
    // End points are the nanosecond roundings of the true times.
    EXPECT_NEAR(ts + dur, std::round(t.events[static_cast<std::size_t>(checked)].end * 1e9) / 1e3,
                1e-6);
    previous_end = ts + dur;
    ++checked;
  }
  EXPECT_EQ(checked, 1000);
}

TEST(Trace, EmptyTraceRoundTripsAndDamageIsAnError) {
  // Issue 15.10: deserializing empty vectors gave memcpy a null destination (UBSan, on every
  // simulation: accumulations are empty for most algorithms). The sanitizer build catches it.
  Trace t;
  t.workers = 2;
  const std::string bytes = t.serialize();
  const auto u = Trace::deserialize(bytes);
  EXPECT_EQ(u.workers, 2);
  EXPECT_TRUE(u.events.empty());
  EXPECT_TRUE(u.accumulations.empty());
  // A cut-off trace, and one whose event count claims more events than bytes follow.
  EXPECT_THROW(Trace::deserialize(std::string_view(bytes).substr(0, bytes.size() - 1)),
               std::runtime_error);
  Trace one;
  one.events.resize(1);
  std::string damaged = one.serialize();
  const std::size_t count_at =
      // The counts after the events: memory, steps, accumulations, peak_memory, representative,
      // class_of, gpu_roles.
      damaged.size() - 7 * sizeof(std::uint64_t) - sizeof(TraceEvent) - sizeof(std::uint64_t);
  const std::uint64_t huge = damaged.size() / sizeof(TraceEvent) + 1;
  std::memcpy(damaged.data() + count_at, &huge, sizeof huge);
  EXPECT_THROW(Trace::deserialize(damaged), std::runtime_error);
}

} // namespace
} // namespace overlapsim
