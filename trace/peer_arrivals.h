// When each event's peers were all there (peer_arrivals() in analysis.h), held compactly for the
// metrics and the analysis of a large trace: a collective instance number per event (4 bytes) and
// one time per instance, with the point-to-point events on the side. Issue 64.1: the vector of
// times (8 bytes an event), the instance keys it came from (16) and the matched sends (8) were 32
// bytes an event, 180 MB of the parent of a 1,024-GPU run (5.7 million events).
#pragma once

#include "trace/trace.h"

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace overlapsim {

class PeerArrivals {
public:
  explicit PeerArrivals(const Trace& t);

  // The time its last peer arrived: a collective's last participant's start, a receive's send's
  // start, a send's receive's post; -1 for an event without peers.
  double operator[](std::size_t event) const;

  // A collective instance (the k-th op with this name, step and group on each of its GPUs):
  // 0 .. instances() - 1, or -1 for an event that is none (compute, point-to-point).
  std::int32_t instance(std::size_t event) const { return instance_[event]; }
  std::size_t instances() const { return latest_.size(); }

  // The send a point-to-point receive completes with (same exchange name, step and end): -1 for
  // any other event and for a receive without one.
  std::ptrdiff_t matched_send(std::size_t event) const;

  // Every event's time, as peer_arrivals() returns it.
  std::vector<double> per_event() const;

private:
  std::vector<std::int32_t> instance_;                     // per event
  std::vector<double> latest_;                             // per instance
  std::vector<std::pair<std::size_t, std::size_t>> sends_; // (receive, send), by receive
  std::vector<std::pair<std::size_t, double>> p2p_;        // (event, time), by event
};

} // namespace overlapsim
