// The compact peer arrivals (trace/peer_arrivals.h) on hand-built traces: collective instances by
// (name, step, group, occurrence), point-to-point rendezvous, and the same times as
// peer_arrivals() (issue 64.1).
#include "trace/analysis.h"
#include "trace/peer_arrivals.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

TEST(PeerArrivals, CollectiveInstancesTakeTheirLastStart) {
  // Two GPUs run "ar" twice in step 0 (occurrences 0 and 1) and once in step 1. GPU 0 starts them
  // at 1, 5 and 9 s, GPU 1 at 2, 4 and 10 s (its events listed out of start order): the instances'
  // last arrivals are 2, 5 and 10 s. A compute op has none.
  Trace t;
  t.workers = 2;
  const auto ar = t.intern("ar"), fwd = t.intern("fwd"), ring = t.intern("ring/fused");
  const auto comm = [&](double start, int worker, int step) {
    return TraceEvent{start, start + 0.5, worker, StreamKind::comm, OpCategory::comm,
                      ar,    ring,        step};
  };
  t.events = {comm(1, 0, 0),
              comm(4, 1, 0),
              comm(2, 1, 0),
              comm(5, 0, 0),
              comm(9, 0, 1),
              comm(10, 1, 1),
              {0, 1, 0, StreamKind::compute, OpCategory::forward, fwd, -1, 0}};
  const PeerArrivals a(t);
  EXPECT_EQ(a.instances(), 3u);
  // GPU 1's start at 2 s is its first "ar" of step 0, its start at 4 s its second.
  EXPECT_EQ(a.instance(0), a.instance(2));
  EXPECT_EQ(a.instance(1), a.instance(3));
  EXPECT_EQ(a.instance(4), a.instance(5));
  EXPECT_NE(a.instance(0), a.instance(1));
  EXPECT_EQ(a.instance(6), -1);
  EXPECT_EQ(a.per_event(), (std::vector<double>{2, 5, 2, 5, 10, 10, -1}));
  EXPECT_EQ(a.per_event(), peer_arrivals(t));
  EXPECT_EQ(a.matched_send(2), -1);
}

TEST(PeerArrivals, ReceiveAndSendMeet) {
  // GPU 1 posts "recv x" at 1 s; GPU 0 starts "send x" at 3 s; both end at 4 s. An unmatched
  // receive (another end) gets no time.
  Trace t;
  t.workers = 2;
  const auto send = t.intern("send x"), recv = t.intern("recv x"), p2p = t.intern("p2p");
  t.events = {{1, 4, 1, StreamKind::comm, OpCategory::comm, recv, p2p, 0, -1, 0, 0},
              {3, 4, 0, StreamKind::comm, OpCategory::comm, send, p2p, 0, -1, 100, 0},
              {2, 7, 1, StreamKind::comm, OpCategory::comm, recv, p2p, 0, -1, 0, 0}};
  const PeerArrivals a(t);
  EXPECT_EQ(a.instances(), 0u);
  EXPECT_EQ(a.matched_send(0), 1);
  EXPECT_EQ(a.matched_send(1), -1);
  EXPECT_EQ(a.matched_send(2), -1);
  EXPECT_EQ(a.per_event(), (std::vector<double>{3, 1, -1}));
}

} // namespace
} // namespace overlapsim
