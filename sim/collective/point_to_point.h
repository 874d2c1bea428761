// Send and receive (pipeline stages, DiLoCo's and CDP's messages): the k-th send between two
// ranks on a group and tag meets the k-th receive; the last of the two to arrive moves the
// sender's bytes between their hosts, and both leave when it is done. Over TCP a message whose
// opposite direction carries one starts late (hw::LinkSpec::reverse_busy_s).
#pragma once

#include "sim/collective/algorithm.h"

#include <map>
#include <memory>
#include <tuple>
#include <utility>

namespace overlapsim::sim::collective {

class PointToPoint final : public Algorithm {
public:
  explicit PointToPoint(Fabric& fabric) : fabric_(fabric) {}
  // s.op: send (`bytes` to `peer`) or recv (from `peer`; the sender gives the size).
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int peer) override;

private:
  void message(const Scope& s, int self, int src, int dst, double bytes);
  Fabric& fabric_;
  // How many each side has posted per (group, tag, src, dst), and the open meetings.
  using PairKey = std::tuple<int, int, int, int>;
  std::map<PairKey, std::int64_t> sends_posted_, recvs_posted_;
  std::map<std::tuple<int, int, int, int, std::int64_t>, std::shared_ptr<Instance>> messages_;
  // The messages moving, by (source, destination) node.
  std::map<std::pair<int, int>, int> messages_moving_;
};

} // namespace overlapsim::sim::collective
