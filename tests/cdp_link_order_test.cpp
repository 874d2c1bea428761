// CDP-v2's link schedule set ahead (algorithms/cdp_link_order.h): routes, deadlines and the order
// each worker sends in, by hand on N = 4.
#include "algorithms/cdp_link_order.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace overlapsim::cdp {
namespace {

// 4 stages, forward 1 and backward 2 units each: worker i starts 2i (the token after two
// forwards), a step is P = 12; forward j of step s starts 2i + 12s + j, backward j ends
// 2i + 12s + 4 + 2 (4 - j).
CyclicTimeline four() {
  return CyclicTimeline({1, 1, 1, 1}, {2, 2, 2, 2});
}

std::string label(const Transfer& x) {
  return fmt::format("{}{}s{}>{}@{:g}", x.lap == Lap::partial ? "P" : "C", x.stage, x.step, x.to,
                     x.due);
}

TEST(CdpLinkOrder, RoutesGoStraightToTheBoundaryThenRound) {
  // The last worker (3) sends stage j's sum to worker N-1-j, which relays it in ring order over
  // workers 0..2; stage 0's boundary is the last worker itself, so its route starts at 0.
  EXPECT_EQ(cdp_v2_route(4, 0), (std::vector<int>{3, 0, 1, 2}));
  EXPECT_EQ(cdp_v2_route(4, 1), (std::vector<int>{3, 2, 0, 1}));
  EXPECT_EQ(cdp_v2_route(4, 2), (std::vector<int>{3, 1, 2, 0}));
  EXPECT_EQ(cdp_v2_route(4, 3), (std::vector<int>{3, 0, 1, 2}));
  EXPECT_EQ(cdp_v2_route(1, 0), (std::vector<int>{0}));
}

TEST(CdpLinkOrder, TheTimelineIsThePapersCycle) {
  const auto t = four();
  EXPECT_DOUBLE_EQ(t.period(), 12);
  EXPECT_DOUBLE_EQ(t.start(3), 6);
  EXPECT_DOUBLE_EQ(t.forward_start(2, 1, 3), 4 + 12 + 3);
  EXPECT_DOUBLE_EQ(t.backward_end(1, 0, 0), 2 + 4 + 8);
}

TEST(CdpLinkOrder, AWorkerSendsEarliestDeadlineFirst) {
  // Worker 1, step 0. Lap one to worker 2, due as 2's backward of j ends: 16 - 2j. Lap two: it
  // relays stage 0 (route 3, 0, 1, 2; worker 2 runs stage 0 on the older version: due at its
  // forward of step 2, 4 + 24 = 28), stage 2 (3, 1, 2, 0: fresh at 2, 4 + 12 + 2 = 18) and
  // stage 3 (3, 0, 1, 2: 19); it ends stage 1's route. Step 1's lap one follows 12 later; at 28
  // the older step goes first.
  LinkOrder order(four(), 1, 3, true);
  std::vector<std::string> got;
  for (int k = 0; k < 11; ++k) {
    got.push_back(label(order.front()));
    order.pop();
  }
  EXPECT_EQ(got, (std::vector<std::string>{"P3s0>2@10", "P2s0>2@12", "P1s0>2@14", "P0s0>2@16",
                                           "C2s0>2@18", "C3s0>2@19", "P3s1>2@22", "P2s1>2@24",
                                           "P1s1>2@26", "C0s0>2@28", "P0s1>2@28"}));
}

TEST(CdpLinkOrder, TheLastWorkerSendsTheFreshSumsFirst) {
  // Worker 3's sums are complete at 12, 14, 16, 18 (stages 3..0); stage 3 is due at worker 0's
  // next forward of it (12 + 3 = 15), stage 2 at worker 1's (2 + 12 + 2), stage 1 at worker 2's
  // (4 + 12 + 1), stage 0 at worker 0's forward of step 2 (24: the older version).
  LinkOrder order(four(), 3, 1, true);
  std::vector<std::string> got;
  while (!order.empty()) {
    got.push_back(label(order.front()));
    order.pop();
  }
  EXPECT_EQ(got, (std::vector<std::string>{"C3s0>0@15", "C2s0>1@16", "C1s0>2@17", "C0s0>0@24"}));
  // Its receives: lap one's partial sums from worker 2, due as its own backwards end.
  LinkOrder in(four(), 3, 1, false, Lap::partial);
  std::vector<double> due;
  while (!in.empty()) {
    due.push_back(in.front().due);
    in.pop();
  }
  EXPECT_EQ(due, (std::vector<double>{12, 14, 16, 18}));
}

} // namespace
} // namespace overlapsim::cdp
