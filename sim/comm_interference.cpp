#include "sim/comm_interference.h"

#include <fmt/format.h>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u.hpp>

#include <algorithm>
#include <limits>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

namespace {
// FLOPs no run reaches: 1e15 s on a 1 PFLOP/s GPU.
constexpr double kEndless = 1e30;
// SimGrid wants a priority above 0 (kinds at 0 never open a load; this guards the empty set).
constexpr double kLightest = 1e-12;
// The priority that turns the load off: SimGrid's sharing penalty is 1 / priority, and a variable
// of penalty 0 takes no share of its host.
constexpr double kOff = std::numeric_limits<double>::infinity();
} // namespace

CommInterference::CommInterference(const Platform& platform, bool enabled)
    : open_(platform.gpus.size()), enabled_(platform.gpus.size(), 0), load_(platform.gpus.size()),
      applied_(platform.gpus.size(), kOff), dirty_(platform.gpus.size(), 0) {
  if (!enabled)
    return;
  for (std::size_t r = 0; r < platform.gpus.size(); ++r) {
    if (platform.gpus[r] == nullptr)
      continue; // folded: a rank that is not simulated
    enabled_[r] = 1;
    // Starts the GPU's load, off unless a transfer opened before it ran, and blocks until SimGrid
    // ends it with the streams.
    sg4::Actor::create(fmt::format("i{}", r), platform.gpus[r], [this, r] {
      sg4::Actor::self()->daemonize();
      // Once only daemons are left SimGrid ends them and their loads; a flush due at that instant
      // then finds none.
      sg4::this_actor::on_exit([this, r](bool) { load_[r] = nullptr; });
      applied_[r] = priority(r);
      load_[r] = sg4::this_actor::exec_init(kEndless)->set_priority(applied_[r]);
      load_[r]->start();
      sg4::Semaphore::create(0)->acquire(); // never released
    });
  }
}

double CommInterference::priority(std::size_t r) const {
  return open_[r].empty() ? kOff : load_weight(r);
}

double CommInterference::load_weight(std::size_t r) const {
  return open_[r].empty() ? kLightest : std::max(kLightest, weight(*open_[r].rbegin()));
}

void CommInterference::begin(int rank, double share) {
  const auto r = static_cast<std::size_t>(rank);
  if (!enabled_[r] || share <= 0) // a kind that takes nothing does not load the GPU
    return;
  open_[r].insert(share);
  changed(r);
}

void CommInterference::end(int rank, double share) {
  const auto r = static_cast<std::size_t>(rank);
  if (!enabled_[r] || share <= 0)
    return;
  open_[r].erase(open_[r].find(share));
  changed(r);
}

void CommInterference::changed(std::size_t r) {
  if (!load_[r] || dirty_[r]) // without a load yet, its daemon reads open_
    return;
  dirty_[r] = 1;
  dirty_ranks_.push_back(r);
  if (flush_set_)
    return;
  // SimGrid re-solves the max-min system only once no actor is left to run at this instant; its
  // timers at this instant run right after a solve that advances no time, and the engine then
  // solves again before time moves. Applied there, the loads' priorities are the ones every
  // sharing of the host after this instant sees, as if set at once.
  flush_set_ = true;
  simgrid::kernel::timer::Timer::set(sg4::Engine::get_clock(), [this] { flush(); });
}

void CommInterference::flush() {
  flush_set_ = false;
  for (const std::size_t r : dirty_ranks_) {
    dirty_[r] = 0;
    if (!load_[r]) // its daemon was ended with the run (see the constructor)
      continue;
    if (const double p = priority(r); p != applied_[r]) {
      applied_[r] = p;
      load_[r]->update_priority(p);
    }
  }
  dirty_ranks_.clear();
}

} // namespace overlapsim::sim
