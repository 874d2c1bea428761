#include "sim/comm_interference.h"

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

namespace {
// FLOPs no run reaches: 1e15 s on a 1 PFLOP/s GPU.
constexpr double kEndless = 1e30;
} // namespace

CommInterference::CommInterference(const Platform& platform, double share)
    : open_(platform.gpus.size(), 0), opened_(platform.gpus.size()), closed_(platform.gpus.size()) {
  if (share <= 0)
    return;
  for (std::size_t r = 0; r < platform.gpus.size(); ++r) {
    if (platform.gpus[r] == nullptr)
      continue; // folded: a rank that is not simulated
    opened_[r] = sg4::Semaphore::create(0);
    closed_[r] = sg4::Semaphore::create(0);
    // Ended by SimGrid, blocked in acquire(), once the streams have finished.
    sg4::Actor::create(fmt::format("i{}", r), platform.gpus[r],
                       [opened = opened_[r], closed = closed_[r], w = weight(share)] {
                         sg4::Actor::self()->daemonize();
                         for (;;) {
                           opened->acquire();
                           auto load = sg4::this_actor::exec_init(kEndless)->set_priority(w);
                           load->start();
                           closed->acquire();
                           load->cancel();
                         }
                       });
  }
}

void CommInterference::begin(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (open_[r]++ == 0 && opened_[r])
    opened_[r]->release();
}

void CommInterference::end(int rank) {
  const auto r = static_cast<std::size_t>(rank);
  if (--open_[r] == 0 && closed_[r])
    closed_[r]->release();
}

} // namespace overlapsim::sim
