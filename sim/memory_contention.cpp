#include "sim/memory_contention.h"

#include <simgrid/s4u.hpp>

#include <algorithm>
#include <utility>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

MemoryContention::MemoryContention(std::vector<int> stand_in, int shared_by)
    : stand_in_(std::move(stand_in)),
      shared_by_(std::min(std::max(shared_by, 1), std::max(1, static_cast<int>(stand_in_.size())))),
      busy_(stand_in_.size(), 0), busy_since_(stand_in_.size(), 0),
      busy_seconds_(stand_in_.size(), 0) {}

void MemoryContention::begin(int rank) {
  if (!enabled())
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (busy_[r]++ == 0)
    busy_since_[r] = sg4::Engine::get_clock();
}

void MemoryContention::end(int rank) {
  if (!enabled())
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (--busy_[r] == 0)
    busy_seconds_[r] += sg4::Engine::get_clock() - busy_since_[r];
}

double MemoryContention::busy_seconds(int rank) const {
  const auto r = static_cast<std::size_t>(rank);
  return busy_seconds_[r] + (busy_[r] > 0 ? sg4::Engine::get_clock() - busy_since_[r] : 0.0);
}

double MemoryContention::others_busy(int rank) const {
  if (!enabled())
    return 0;
  const int world = static_cast<int>(stand_in_.size());
  const int first = rank / shared_by_ * shared_by_;
  const int last = std::min(world, first + shared_by_);
  double busy = 0;
  for (int r = first; r < last; ++r)
    if (r != rank)
      busy += busy_seconds(stand_in_[static_cast<std::size_t>(r)]);
  return busy / (shared_by_ - 1);
}

} // namespace overlapsim::sim
