#include "sim/comm_interference.h"

#include <fmt/format.h>
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
    : open_(platform.gpus.size()), enabled_(platform.gpus.size(), 0), load_(platform.gpus.size()) {
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
      load_[r] = sg4::this_actor::exec_init(kEndless)->set_priority(priority(r));
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
  const double before = priority(r);
  open_[r].insert(share);
  if (load_[r] && priority(r) != before) // without a load yet, its daemon reads open_
    load_[r]->update_priority(priority(r));
}

void CommInterference::end(int rank, double share) {
  const auto r = static_cast<std::size_t>(rank);
  if (!enabled_[r] || share <= 0)
    return;
  const double before = priority(r);
  open_[r].erase(open_[r].find(share));
  if (load_[r] && priority(r) != before)
    load_[r]->update_priority(priority(r));
}

} // namespace overlapsim::sim
