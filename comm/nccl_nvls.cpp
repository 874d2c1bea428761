#include "comm/nccl_nvls.h"

#include <algorithm>
#include <limits>

namespace overlapsim::comm {

NcclCost nccl_nvls_cost(const NcclGeneration& gen, const NcclShape& s, CollectiveOp collective,
                        NcclAlgorithm algorithm, NcclProtocol protocol, double bytes) {
  NcclCost c{algorithm, protocol, 0, 0, std::numeric_limits<double>::infinity()};
  const bool half =
      collective == CollectiveOp::all_gather || collective == CollectiveOp::reduce_scatter;
  const bool multi = s.nodes > 1;
  if (gen.nvls_busbw_Bps <= 0 || protocol != NcclProtocol::simple || s.per_node < 2 || !s.even)
    return c;
  // One node: all-gather and reduce-scatter (its all-reduce is nccl_model.cpp's); across nodes
  // over CollNet: those and all-reduce.
  if (algorithm == NcclAlgorithm::nvls
          ? (multi || !half)
          : (!multi || !(half || collective == CollectiveOp::all_reduce)))
    return c;
  // Across nodes NCCL's NVLS needs CollNet; its all-gather and reduce-scatter a NIC per GPU.
  if (multi && (!gen.collnet || (half && s.per_node > std::max(1, s.net_heads))))
    return c;
  const double g = s.per_node;
  const double x = gen.nvls_busbw_Bps / 2;
  const double inf = std::numeric_limits<double>::infinity();
  const double net = multi ? s.net_Bps : inf;
  c.latency_s = gen.launch_s + gen.nvls_latency_s;
  if (multi)
    c.latency_s += std::max(kNvlsNetS, s.net_latency_s) + gen.net_message_s;
  if (half) {
    c.algbw_Bps = std::min(x * (g - 1) / g, net);
  } else {
    const double n = s.ranks;
    c.algbw_Bps = std::min(std::min(2 * x, net) * n / (2 * (n - 1)), s.intra_Bps);
  }
  if (c.algbw_Bps > 0)
    c.time_s = c.latency_s + bytes / c.algbw_Bps;
  return c;
}

} // namespace overlapsim::comm
