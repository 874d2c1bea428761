#include "validate/collective_pieces.h"

#include "comm/ring_shape.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <torch/torch.h>
#include <vector>

namespace overlapsim::real {

std::int64_t piece_elements_for(double bus_bandwidth_Bps) {
  const double bytes = std::isfinite(bus_bandwidth_Bps) && bus_bandwidth_Bps > 0
                           ? bus_bandwidth_Bps * kPieceWireSeconds
                           : static_cast<double>(kMaxPieceBytes);
  return static_cast<std::int64_t>(std::clamp(bytes, static_cast<double>(kMinPieceBytes),
                                              static_cast<double>(kMaxPieceBytes))) /
         4;
}

std::int64_t agreed_piece_elements(CommBackend& world, int ranks,
                                   std::chrono::milliseconds timeout) {
  constexpr std::int64_t kElements = 256 * 1024; // 1 MiB
  std::vector<torch::Tensor> data{torch::ones({kElements})};
  // The fastest of a few, after one to warm the connections: the link's speed, not a moment when
  // a thread waited for a core.
  double fastest = std::numeric_limits<double>::infinity();
  for (int r = 0; r < 6; ++r) {
    const auto start = std::chrono::steady_clock::now();
    world.allreduce(data)->wait(timeout);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (r > 0)
      fastest = std::min(fastest, took);
  }
  // nccl-tests' busbw: what each rank sends of the data (comm/ring_shape.h) per second.
  const double bus =
      comm::bus_factor(CollectiveOp::all_reduce, ranks) * 4.0 * kElements / std::max(fastest, 1e-9);
  std::vector<torch::Tensor> agreed{
      torch::full({1}, static_cast<double>(piece_elements_for(bus)), torch::kFloat64)};
  c10d::BroadcastOptions from_rank0;
  from_rank0.rootRank = 0;
  world.broadcast(agreed, from_rank0)->wait(timeout);
  return static_cast<std::int64_t>(agreed.front().item<double>());
}

} // namespace overlapsim::real
