#include "comm/nccl_pat.h"

#include <algorithm>
#include <bit>
#include <limits>

namespace overlapsim::comm {

NcclCost nccl_pat_cost(const NcclGeneration& gen, const NcclShape& s, CollectiveOp collective,
                       NcclProtocol protocol, double bytes) {
  NcclCost c{NcclAlgorithm::pat, protocol, 0, 0, std::numeric_limits<double>::infinity()};
  const bool half =
      collective == CollectiveOp::all_gather || collective == CollectiveOp::reduce_scatter;
  if (!half || protocol != NcclProtocol::simple || s.ranks < 2 || s.per_node != 1 ||
      s.nodes != s.ranks || gen.compute_capability < 60)
    return c;
  const double net = std::max(kPatTreeNetS, s.net_latency_s) + gen.net_message_s;
  // NCCL's log2i: floor(log2 n).
  const int levels = std::bit_width(static_cast<unsigned>(s.ranks)) - 1;
  c.latency_s = gen.launch_s + kPatBaseS + levels * net / 3.5 + s.ranks * kPatPerRankS;
  c.algbw_Bps = kPatBandwidthShare * s.net_Bps * gen.bandwidth_share[2];
  if (c.algbw_Bps > 0)
    c.time_s = c.latency_s + bytes / c.algbw_Bps;
  return c;
}

} // namespace overlapsim::comm
