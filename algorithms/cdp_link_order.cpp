#include "algorithms/cdp_link_order.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace overlapsim::cdp {

std::vector<int> cdp_v2_route(int world, int stage) {
  const int last = world - 1;
  std::vector<int> chain{last};
  const int others = world - 1; // workers 0..N-2, in a cycle
  if (others == 0)
    return chain;
  const int start = (world - 1 - stage) % others;
  for (int k = 0; k < others; ++k)
    chain.push_back((start + k) % others);
  return chain;
}

CyclicTimeline::CyclicTimeline(std::vector<double> forward, std::vector<double> backward)
    : forward_(std::move(forward)), backward_(std::move(backward)) {
  if (forward_.empty() || forward_.size() != backward_.size())
    throw std::invalid_argument("CyclicTimeline: one forward and one backward time a stage");
  period_ = std::accumulate(forward_.begin(), forward_.end(), 0.0) +
            std::accumulate(backward_.begin(), backward_.end(), 0.0);
}

double CyclicTimeline::start(int worker) const {
  // The start token leaves worker i-1 after its forward of stage 1 (of stage 0 with one stage).
  const double stagger = forward_[0] + (forward_.size() > 1 ? forward_[1] : 0.0);
  return worker * stagger;
}

double CyclicTimeline::forward_start(int worker, int step, int stage) const {
  return start(worker) + step * period_ +
         std::accumulate(forward_.begin(), forward_.begin() + stage, 0.0);
}

double CyclicTimeline::backward_end(int worker, int step, int stage) const {
  return start(worker) + step * period_ + std::accumulate(forward_.begin(), forward_.end(), 0.0) +
         std::accumulate(backward_.begin() + stage, backward_.end(), 0.0);
}

std::vector<Transfer> transfers_of(const CyclicTimeline& t, int rank, int step, bool sends) {
  const int n = t.stages();
  std::vector<Transfer> out;
  auto keep = [&](const Transfer& x) {
    if ((sends ? x.from : x.to) == rank)
      out.push_back(x);
  };
  for (int j = n - 1; j >= 0; --j) {
    // Lap one: i -> i+1, needed when i+1's backward of j ends.
    for (int i = 0; i + 1 < n; ++i)
      keep({t.backward_end(i + 1, step, j), step, j, Lap::partial, i, i + 1});
    // Lap two: each hop of the route, needed before the receiver's next forward of j.
    const auto route = cdp_v2_route(n, j);
    for (std::size_t k = 0; k + 1 < route.size(); ++k) {
      const int to = route[k + 1];
      const bool fresh = j >= n - 1 - to;
      keep({t.forward_start(to, step + (fresh ? 1 : 2), j), step, j, Lap::complete, route[k], to});
    }
  }
  return out;
}

LinkOrder::LinkOrder(CyclicTimeline timeline, int rank, int steps, bool sends)
    : t_(std::move(timeline)), rank_(rank), steps_(steps), sends_(sends) {
  // A transfer of step s is due before the forwards of step s+2 end, so those of step
  // s + lookahead come after every one of step s.
  lookahead_ = 3 + static_cast<int>(std::ceil(t_.start(t_.stages() - 1) / t_.period()));
}

LinkOrder::LinkOrder(CyclicTimeline timeline, int rank, int steps, bool sends, Lap only)
    : LinkOrder(std::move(timeline), rank, steps, sends) {
  only_ = static_cast<int>(only);
}

void LinkOrder::fill() {
  while (generated_ < steps_ && (queue_.empty() || generated_ <= queue_.back().step + lookahead_)) {
    for (const auto& x : transfers_of(t_, rank_, generated_, sends_))
      if (only_ < 0 || static_cast<int>(x.lap) == only_)
        queue_.push_back(x);
    ++generated_;
    // Earliest last; ties: the older step, lap one, the later stage (the backward order).
    std::sort(queue_.begin(), queue_.end(), [](const Transfer& a, const Transfer& b) {
      return std::tuple(a.due, a.step, a.lap, -a.stage) >
             std::tuple(b.due, b.step, b.lap, -b.stage);
    });
  }
}

bool LinkOrder::empty() {
  fill();
  return queue_.empty();
}

const Transfer& LinkOrder::front() {
  fill();
  if (queue_.empty())
    throw std::logic_error("LinkOrder: no transfer left");
  return queue_.back();
}

void LinkOrder::pop() {
  fill();
  queue_.pop_back();
}

void LinkOrder::take(const Transfer* x) {
  queue_.erase(queue_.begin() + (x - queue_.data()));
}

} // namespace overlapsim::cdp
