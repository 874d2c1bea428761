// Time 0 of a measured run on every rank: one instant, read on each rank's own clock, so that the
// ranks' traces line up (a collective's members, the steps' ends, the per-op table's "from the
// last member's start").
//
// Taken as each rank's clock right after the store's barrier, the origins differed by the
// barrier's polling interval: a one-element all-reduce ended 1.7-2.0 ms later on rank 0 than on
// rank 1 in every step of one run (2 CPU workers, 0.7-2 ms in every run), and the per-op table
// counted ACCO's counts all-reduce at 685 us where its members, aligned, spent 170 us.
//
// Ranks on one host (one running kernel: the same boot id) share its monotonic clock, which
// std::chrono::steady_clock reads, and take rank 0's reading exactly. A rank on another host
// estimates rank 0's clock by Cristian's algorithm over the store: it asks for rank 0's time
// several times and keeps the reply of the shortest round trip, read at that trip's midpoint, so
// its error is at most half that round trip.
#pragma once

#include <functional>
#include <string>

namespace c10d {
class Store;
}

namespace overlapsim::real {

struct ClockOrigin {
  double origin_s = 0;      // time 0, on this rank's clock (seconds)
  double uncertainty_s = 0; // at most this far from rank 0's time 0; on rank 0 the most of any rank
};

// Collective over the job's ranks (every rank calls it with the same `name`, once per name).
// `host` says which clock a rank reads (host_clock_id), `now` reads it in seconds.
ClockOrigin agree_on_origin(c10d::Store& store, const std::string& name, int rank, int world,
                            const std::string& host, const std::function<double()>& now);

// Which monotonic clock this process reads: the running kernel's boot id (the host name where
// that cannot be read).
std::string host_clock_id();

// std::chrono::steady_clock in seconds since its epoch.
double steady_now_s();

// One rank's estimate of rank 0's clock from one round trip: sent at `sent_s`, answered with rank
// 0's `reply_s`, received at `received_s` (this rank's clock). The estimate assumes the reply was
// read halfway through the trip.
struct ClockSample {
  double offset_s = 0; // rank 0's clock less this rank's
  double round_trip_s = 0;
};
ClockSample clock_sample(double sent_s, double reply_s, double received_s);

} // namespace overlapsim::real
