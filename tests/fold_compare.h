// A folded simulation's summary against the full one's, field by field (site_fold_test.cpp,
// unequal_sites_test.cpp).
#pragma once

#include "trace/metrics.h"

#include <gtest/gtest.h>

#include <cmath>

namespace overlapsim::testing {

// Every summary field a user compares, folded against full, to `rel` relative (`rel` of the
// iteration for times and fractions).
inline void expect_equal_summary(const Metrics& folded, const Metrics& full, double rel = 1e-9) {
  const auto close = [rel](double a, double b) { return std::abs(a - b) <= rel * std::abs(b); };
  EXPECT_PRED2(close, folded.iteration_time_s, full.iteration_time_s);
  EXPECT_PRED2(close, folded.throughput_samples_s, full.throughput_samples_s);
  EXPECT_PRED2(close, folded.samples, full.samples);
  EXPECT_PRED2(close, folded.comm_bytes_per_step, full.comm_bytes_per_step);
  EXPECT_PRED2(close, folded.inter_node_bytes_per_step, full.inter_node_bytes_per_step);
  EXPECT_PRED2(close, folded.wan_bytes_per_step, full.wan_bytes_per_step);
  EXPECT_PRED2(close, folded.peak_memory_bytes, full.peak_memory_bytes);
  const double t = rel * full.iteration_time_s;
  EXPECT_NEAR(folded.idle_fraction_mean, full.idle_fraction_mean, rel);
  EXPECT_NEAR(folded.exposed_comm_s, full.exposed_comm_s, t);
  EXPECT_NEAR(folded.waiting_s, full.waiting_s, t);
  EXPECT_NEAR(folded.compute_s_per_step, full.compute_s_per_step, t);
  EXPECT_NEAR(folded.comm_s_per_step, full.comm_s_per_step, t);
  ASSERT_EQ(folded.idle_fraction.size(), full.idle_fraction.size());
  for (std::size_t g = 0; g < full.idle_fraction.size(); ++g)
    EXPECT_NEAR(folded.idle_fraction[g], full.idle_fraction[g], rel) << "GPU " << g;
}

} // namespace overlapsim::testing
