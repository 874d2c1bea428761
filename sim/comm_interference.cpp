#include "sim/comm_interference.h"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include <algorithm>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

namespace {
// FLOPs no run reaches: 1e15 s on a 1 PFLOP/s GPU.
constexpr double kEndless = 1e30;
// SimGrid wants a priority above 0 (kinds at 0 never open a load; this guards the empty set).
constexpr double kLightest = 1e-12;
} // namespace

CommInterference::CommInterference(const Platform& platform, bool enabled)
    : open_(platform.gpus.size()), opened_(platform.gpus.size()), closed_(platform.gpus.size()),
      load_(platform.gpus.size()) {
  if (!enabled)
    return;
  for (std::size_t r = 0; r < platform.gpus.size(); ++r) {
    if (platform.gpus[r] == nullptr)
      continue; // folded: a rank that is not simulated
    opened_[r] = sg4::Semaphore::create(0);
    closed_[r] = sg4::Semaphore::create(0);
    // Ended by SimGrid, blocked in acquire(), once the streams have finished.
    sg4::Actor::create(fmt::format("i{}", r), platform.gpus[r], [this, r] {
      sg4::Actor::self()->daemonize();
      for (;;) {
        opened_[r]->acquire();
        load_[r] = sg4::this_actor::exec_init(kEndless)->set_priority(load_weight(r));
        load_[r]->start();
        closed_[r]->acquire();
        std::exchange(load_[r], nullptr)->cancel();
      }
    });
  }
}

double CommInterference::load_weight(std::size_t r) const {
  return open_[r].empty() ? kLightest : std::max(kLightest, weight(*open_[r].rbegin()));
}

void CommInterference::begin(int rank, double share) {
  const auto r = static_cast<std::size_t>(rank);
  if (!opened_[r] || share <= 0) // a kind that takes nothing does not load the GPU
    return;
  const double before = load_weight(r);
  open_[r].insert(share);
  if (open_[r].size() == 1)
    opened_[r]->release();
  else if (load_[r] && load_weight(r) != before)
    load_[r]->update_priority(load_weight(r));
}

void CommInterference::end(int rank, double share) {
  const auto r = static_cast<std::size_t>(rank);
  if (!opened_[r] || share <= 0)
    return;
  const double before = load_weight(r);
  open_[r].erase(open_[r].find(share));
  if (open_[r].empty())
    closed_[r]->release();
  else if (load_[r] && load_weight(r) != before)
    load_[r]->update_priority(load_weight(r));
}

} // namespace overlapsim::sim
