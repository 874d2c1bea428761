#include "comm/collective_op.h"

namespace overlapsim {

const char* to_string(CollectiveOp op) {
  switch (op) {
  case CollectiveOp::all_reduce:
    return "all-reduce";
  case CollectiveOp::reduce_scatter:
    return "reduce-scatter";
  case CollectiveOp::all_gather:
    return "all-gather";
  case CollectiveOp::broadcast:
    return "broadcast";
  case CollectiveOp::reduce:
    return "reduce";
  case CollectiveOp::all_to_all:
    return "all-to-all";
  case CollectiveOp::send:
    return "send";
  case CollectiveOp::recv:
    return "recv";
  case CollectiveOp::barrier:
    return "barrier";
  }
  return "?";
}

std::optional<CollectiveOp> parse_calibration_op(std::string_view name) {
  if (name == "all_reduce" || name == "allreduce")
    return CollectiveOp::all_reduce;
  if (name == "reduce_scatter" || name == "reducescatter")
    return CollectiveOp::reduce_scatter;
  if (name == "all_gather" || name == "allgather")
    return CollectiveOp::all_gather;
  if (name == "broadcast")
    return CollectiveOp::broadcast;
  if (name == "reduce")
    return CollectiveOp::reduce;
  if (name == "all_to_all" || name == "alltoall")
    return CollectiveOp::all_to_all;
  if (name == "send_recv" || name == "sendrecv")
    return CollectiveOp::send;
  return std::nullopt;
}

} // namespace overlapsim
