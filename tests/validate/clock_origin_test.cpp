// The ranks' common time 0 (validate/clock_origin.h): exact on one host, within the bound of
// Cristian's estimate across hosts.
#include "validate/clock_origin.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <vector>

namespace overlapsim::real {
namespace {

TEST(ClockOrigin, ASampleReadsTheReplyAtTheRoundTripsMidpoint) {
  // Sent at 10 s, received at 10.004 s on this rank's clock; rank 0 answered 15.003 s: read at
  // 10.002 s here, so rank 0's clock is 5.001 s ahead, within half the 4 ms trip.
  const ClockSample s = clock_sample(10.0, 15.003, 10.004);
  EXPECT_NEAR(s.offset_s, 5.001, 1e-12);
  EXPECT_NEAR(s.round_trip_s, 0.004, 1e-12);
}

// `world` ranks on threads sharing one store, rank r reading the steady clock plus skew[r] and
// living on host[r]; returns each rank's origin and bound.
std::vector<ClockOrigin> agree(const std::vector<double>& skew,
                               const std::vector<std::string>& host) {
  const auto store = c10::make_intrusive<c10d::HashStore>();
  std::vector<std::future<ClockOrigin>> ranks;
  const int world = static_cast<int>(skew.size());
  for (int r = 0; r < world; ++r)
    ranks.push_back(std::async(std::launch::async, [&, r] {
      return agree_on_origin(*store, "clock/test", r, world, host[static_cast<std::size_t>(r)],
                             [&, r] { return steady_now_s() + skew[static_cast<std::size_t>(r)]; });
    }));
  std::vector<ClockOrigin> out;
  for (auto& f : ranks)
    out.push_back(f.get());
  return out;
}

TEST(ClockOrigin, RanksOnRankZerosHostTakeItsReadingExactly) {
  // One host, one clock: the skew is not there to find (it would be a time namespace), and the
  // ranks take rank 0's reading as is, bound 0.
  const auto o = agree({0.0, 0.0, 0.0}, {"boot a", "boot a", "boot a"});
  EXPECT_EQ(o[1].origin_s, o[0].origin_s);
  EXPECT_EQ(o[2].origin_s, o[0].origin_s);
  for (const auto& r : o)
    EXPECT_EQ(r.uncertainty_s, 0.0);
}

TEST(ClockOrigin, RanksOnOtherHostsEstimateRankZerosClockWithinTheirBound) {
  // Rank 1 on rank 0's host; ranks 2 and 3 on hosts whose clocks run 5 s ahead and 3 s behind.
  const std::vector<double> skew{0.0, 0.0, 5.0, -3.0};
  const auto o = agree(skew, {"boot a", "boot a", "boot b", "boot c"});
  EXPECT_EQ(o[1].origin_s, o[0].origin_s);
  EXPECT_EQ(o[1].uncertainty_s, 0.0);
  for (const int r : {2, 3}) {
    // Time 0 on rank r's clock is rank 0's reading moved by the skew, within the bound (a
    // shared-memory store's round trip: microseconds, so far below the skews).
    const double error = o[static_cast<std::size_t>(r)].origin_s - (o[0].origin_s + skew[r]);
    EXPECT_LE(std::abs(error), o[static_cast<std::size_t>(r)].uncertainty_s + 1e-9) << r;
    EXPECT_GT(o[static_cast<std::size_t>(r)].uncertainty_s, 0.0) << r;
    EXPECT_LT(o[static_cast<std::size_t>(r)].uncertainty_s, 0.05) << r;
  }
  // Rank 0 reports the worst rank's bound.
  EXPECT_DOUBLE_EQ(o[0].uncertainty_s, std::max(o[2].uncertainty_s, o[3].uncertainty_s));
}

} // namespace
} // namespace overlapsim::real
