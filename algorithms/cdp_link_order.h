// CDP-v2's link schedule, set ahead (Fournier & Oyallon, "Cyclic Data Parallelism", Sec. 3.2: "the
// order of communications can be predefined"; Table 1: one point-to-point step between two time
// steps).
//
// The cyclic schedule fixes, before training starts, when every worker runs every stage op: worker
// i starts two forwards after worker i-1 (the start token) and runs forwards 0..N-1, then
// backwards N-1..0, a step of P = sum of the stages' forward + backward times. From it follow the
// transfers of a step and when each is needed:
//  - lap one: worker i's partial sum of stage j goes to i+1, which adds its own gradient once its
//    backward of j ends: due at bwd_end(i+1, s, j);
//  - lap two: the last worker's complete sum of stage j travels its route (straight to the
//    boundary worker N-1-j, then ring order, cdp_v2_route); each worker on it needs it before its
//    next forward of j: step s+1 where the stage is fresh (j >= N-1-i), s+2 otherwise.
// Each worker sends its transfers one at a time in the order of these deadlines (earliest first),
// and posts its receives in the same order; the simulator and the real runtime run the same
// order. Deadlines are in the stages' compute units (FLOPs of forward and backward, as
// split_stages balances them): only their order matters.
#pragma once

#include <cstdint>
#include <vector>

namespace overlapsim::cdp {

// Lap two's chain for `stage` of CDP-v2 on `world` workers: the last worker, then the boundary
// worker N-1-j, then the other workers 0..N-2 in ring order from there.
std::vector<int> cdp_v2_route(int world, int stage);

// The idle-free cyclic timeline, in compute units (see above).
class CyclicTimeline {
public:
  CyclicTimeline(std::vector<double> forward, std::vector<double> backward);
  int stages() const { return static_cast<int>(forward_.size()); }
  double period() const { return period_; }
  double start(int worker) const;
  double forward_start(int worker, int step, int stage) const;
  double backward_end(int worker, int step, int stage) const;

private:
  std::vector<double> forward_, backward_;
  double period_ = 0;
};

enum class Lap : std::uint8_t { partial, complete };

struct Transfer {
  double due = 0; // when the receiver needs it in the cyclic timeline
  int step = 0;
  int stage = 0;
  Lap lap = Lap::partial;
  int from = 0;
  int to = 0;
};

// The transfers of `step` in which `rank` is the sender (`sends`) or the receiver, unordered.
std::vector<Transfer> transfers_of(const CyclicTimeline& t, int rank, int step, bool sends);

// One worker's sends, or its receives of one lap, over `steps` steps, earliest deadline first
// (ties: the older step, lap one, the later stage). Generated a few steps ahead at a time.
class LinkOrder {
public:
  LinkOrder(CyclicTimeline timeline, int rank, int steps, bool sends);
  LinkOrder(CyclicTimeline timeline, int rank, int steps, bool sends, Lap only);
  bool empty();
  const Transfer& front();
  void pop();
  // The earliest transfer that `ready` accepts, if any (removed with take()).
  template <class Ready> const Transfer* first(Ready ready) {
    fill();
    for (auto it = queue_.rbegin(); it != queue_.rend(); ++it)
      if (ready(*it))
        return &*it;
    return nullptr;
  }
  void take(const Transfer* x);

private:
  void fill();
  CyclicTimeline t_;
  int rank_, steps_;
  bool sends_;
  int only_ = -1; // a Lap, or -1: both
  int generated_ = 0;
  int lookahead_ = 0;
  std::vector<Transfer> queue_; // sorted, earliest last
};

} // namespace overlapsim::cdp
