#include "comm/nccl_collnet.h"

#include <algorithm>
#include <limits>

namespace overlapsim::comm {

NcclCost nccl_collnet_cost(const NcclGeneration& gen, const NcclShape& s, CollectiveOp collective,
                           NcclAlgorithm algorithm, NcclProtocol protocol, double bytes) {
  NcclCost c{algorithm, protocol, 0, 0, std::numeric_limits<double>::infinity()};
  const bool direct = algorithm == NcclAlgorithm::collnet_direct;
  const bool all_reduce = collective == CollectiveOp::all_reduce;
  const bool half =
      collective == CollectiveOp::all_gather || collective == CollectiveOp::reduce_scatter;
  if (!gen.collnet || s.nodes < 2 || !s.even || protocol != NcclProtocol::simple)
    return c;
  if (!(direct || algorithm == NcclAlgorithm::collnet_chain) || !(all_reduce || (half && direct)))
    return c;
  const double g = s.per_node;
  const double heads = std::clamp(s.net_heads, 1, s.per_node);
  // tuning.cc: all-gather and reduce-scatter need every local rank to be a head (1:1 GPU:NIC).
  if (half && g > heads)
    return c;
  const double net_hop = (direct ? std::max(kCollNetDirectNetS, s.net_latency_s)
                                 : std::max(kCollNetChainNetS, s.net_latency_s)) +
                         gen.net_message_s;
  c.latency_s =
      gen.launch_s + net_hop +
      (direct ? 2 * (std::min(1.0, g - 1) * kCollNetDirectIntraS + (g - 1) * kCollNetArityS)
              : 2 * (g - 1) * kCollNetChainIntraS);
  // A node of one GPU moves nothing over NVLink: its NIC alone bounds the algorithm.
  const double inf = std::numeric_limits<double>::infinity();
  if (half) {
    // tuning.cc: busBw = ppn x min(bwIntra, 0.9 bwInter) per channel, used as the algorithm
    // bandwidth (no bus-to-algorithm ratio for non-ring all-gather/reduce-scatter).
    c.algbw_Bps = std::min(g > 1 ? s.intra_Bps : inf, 0.9 * s.net_Bps * g / heads);
  } else {
    const double both = std::min(g > 1 ? s.intra_Bps / 2 : inf, s.net_Bps);
    if (direct) {
      // tuning.cc: Collnet+Direct needs a NIC per GPU at full speed; factor = g/h - (g/h - 1)/2.
      const double factor = (g / heads + 1) / 2;
      c.algbw_Bps = both / factor * (gen.compute_capability >= 90 ? 0.85 : 1.0);
    } else {
      c.algbw_Bps = both;
    }
  }
  if (c.algbw_Bps > 0)
    c.time_s = c.latency_s + bytes / c.algbw_Bps;
  return c;
}

} // namespace overlapsim::comm
