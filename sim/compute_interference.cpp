#include "sim/compute_interference.h"

#include <simgrid/s4u.hpp>

#include <algorithm>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

bool ComputeInterference::Busy::begin(std::size_t rank) {
  if (running[rank]++ > 0)
    return false;
  since[rank] = sg4::Engine::get_clock();
  return true;
}

bool ComputeInterference::Busy::end(std::size_t rank) {
  if (--running[rank] > 0)
    return false;
  seconds[rank] += sg4::Engine::get_clock() - since[rank];
  return true;
}

double ComputeInterference::Busy::total(std::size_t rank) const {
  return seconds[rank] + (running[rank] > 0 ? sg4::Engine::get_clock() - since[rank] : 0.0);
}

ComputeInterference::ComputeInterference(const Platform& platform, bool enabled,
                                         double comm_stream_share)
    : platform_(platform), enabled_(enabled && !platform.progress.empty()),
      comm_stream_share_(comm_stream_share), any_(platform.gpus.size()),
      comm_stream_(platform.gpus.size()) {}

void ComputeInterference::compute_begin(int rank, bool comm_stream) {
  if (!enabled())
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (comm_stream)
    comm_stream_.begin(r);
  if (any_.begin(r))
    platform_.progress[r]->set_pstate(1);
}

void ComputeInterference::compute_end(int rank, bool comm_stream) {
  if (!enabled())
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (comm_stream)
    comm_stream_.end(r);
  if (any_.end(r))
    platform_.progress[r]->set_pstate(0);
}

ComputeInterference::Computed ComputeInterference::computed(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return {any_.total(r), comm_stream_.total(r)};
}

std::vector<ComputeInterference::Computed>
ComputeInterference::snapshot(const std::vector<int>& members) const {
  std::vector<Computed> at;
  if (!enabled())
    return at;
  at.reserve(members.size());
  for (const int r : members)
    at.push_back(computed(r));
  return at;
}

void ComputeInterference::make_up(const std::vector<int>& members,
                                  const std::vector<Computed>& since, double share) const {
  // The communication stream's seconds lose its own share where that is the larger.
  const double extra = std::max(0.0, comm_stream_share_ - share);
  if (!enabled() || (share <= 0 && extra <= 0) || since.size() != members.size())
    return;
  double most = 0;
  int pacer = -1;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const Computed now = computed(members[i]);
    const double lost =
        share * (now.any - since[i].any) + extra * (now.comm_stream - since[i].comm_stream);
    if (lost > most) {
      most = lost;
      pacer = members[i];
    }
  }
  // The progress host runs one "FLOP" per second when its GPU is idle.
  if (pacer >= 0)
    sg4::this_actor::exec_init(most)
        ->set_host(platform_.progress[static_cast<std::size_t>(pacer)])
        ->wait();
}

} // namespace overlapsim::sim
