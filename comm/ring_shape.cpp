#include "comm/ring_shape.h"

#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim::comm {

RingShape ring_shape(CollectiveOp op, int ranks) {
  if (ranks < 1)
    throw std::invalid_argument(
        fmt::format("a {} needs at least one rank, got {}", to_string(op), ranks));
  if (ranks == 1)
    return {};
  const double n = ranks;
  switch (op) {
  case CollectiveOp::all_reduce:
    return {2 * (n - 1), 2 * (n - 1) / n};
  case CollectiveOp::reduce_scatter:
  case CollectiveOp::all_gather:
  case CollectiveOp::all_to_all:
    return {n - 1, (n - 1) / n};
  case CollectiveOp::broadcast:
  case CollectiveOp::reduce:
    return {n - 1, 1.0};
  case CollectiveOp::send:
  case CollectiveOp::recv:
    return {1.0, 1.0};
  case CollectiveOp::barrier:
    return {2 * (n - 1), 0.0};
  }
  return {};
}

double array_bytes(CollectiveOp op, int ranks, double data_bytes) {
  return op == CollectiveOp::all_gather ? data_bytes * ranks : data_bytes;
}

double ring_bytes_sent(CollectiveOp op, int ranks, double array) {
  if (op == CollectiveOp::recv)
    return 0;
  return ring_shape(op, ranks).bus_factor * array;
}

double ring_seconds(CollectiveOp op, int ranks, double array, double latency_s,
                    double bandwidth_Bps) {
  const RingShape r = ring_shape(op, ranks);
  const double transfer = r.bus_factor > 0 ? r.bus_factor * array / bandwidth_Bps : 0.0;
  return r.steps * latency_s + transfer;
}

} // namespace overlapsim::comm
