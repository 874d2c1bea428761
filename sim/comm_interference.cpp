#include "sim/comm_interference.h"

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

CommInterference::CommInterference(const Platform& platform, double share)
    : platform_(platform), share_(share), open_(platform.gpus.size(), 0),
      exec_(platform.gpus.size()) {}

void CommInterference::begin(int rank) {
  if (share_ <= 0)
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (open_[r]++ > 0)
    return; // already slowed: bounded per GPU, not per transfer
  auto* host = platform_.gpus[r];
  // Far more work than any transfer lasts; cancelled when the last transfer ends.
  exec_[r] = sg4::Exec::init()
                 ->set_host(host)
                 ->set_flops_amount(host->get_speed() * 1e9)
                 ->set_bound(host->get_speed() * share_);
  exec_[r]->start();
}

void CommInterference::end(int rank) {
  if (share_ <= 0)
    return;
  const auto r = static_cast<std::size_t>(rank);
  if (--open_[r] > 0)
    return;
  exec_[r]->cancel();
  exec_[r] = nullptr;
}

} // namespace overlapsim::sim
