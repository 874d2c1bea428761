#include "sim/compute_interference.h"

#include <simgrid/s4u.hpp>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

ComputeInterference::ComputeInterference(const Platform& platform, bool enabled)
    : platform_(platform), enabled_(enabled && !platform.progress.empty()),
      busy_(platform.gpus.size(), 0), busy_since_(platform.gpus.size(), 0),
      busy_seconds_(platform.gpus.size(), 0) {}

void ComputeInterference::compute_begin(int rank) {
  if (!enabled())
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (busy_[r]++ == 0) {
    busy_since_[r] = sg4::Engine::get_clock();
    platform_.progress[r]->set_pstate(1);
  }
}

void ComputeInterference::compute_end(int rank) {
  if (!enabled())
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (--busy_[r] == 0) {
    busy_seconds_[r] += sg4::Engine::get_clock() - busy_since_[r];
    platform_.progress[r]->set_pstate(0);
  }
}

double ComputeInterference::computed(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return busy_seconds_[r] + (busy_[r] > 0 ? sg4::Engine::get_clock() - busy_since_[r] : 0.0);
}

std::vector<double> ComputeInterference::snapshot(const std::vector<int>& members) const {
  std::vector<double> at;
  if (!enabled())
    return at;
  at.reserve(members.size());
  for (const int r : members)
    at.push_back(computed(r));
  return at;
}

void ComputeInterference::make_up(const std::vector<int>& members, const std::vector<double>& since,
                                  const std::vector<double>& shares) const {
  if (!enabled() || since.size() != members.size() || shares.size() != members.size())
    return;
  double most = 0;
  int pacer = -1;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const double lost = shares[i] * (computed(members[i]) - since[i]);
    if (shares[i] > 0 && lost > most) {
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
