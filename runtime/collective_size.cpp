#include "runtime/collective_size.h"

#include "runtime/topology.h"

#include <algorithm>

namespace overlapsim {

std::string calibration_op_name(CollectiveOp op) {
  if (is_point_to_point(op))
    return "send_recv";
  std::string name = to_string(op);
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
}

std::optional<CollectiveSize> profiled_size(const CollectiveCall& call, double data_bytes) {
  if (call.op == CollectiveOp::recv || call.op == CollectiveOp::barrier || call.group == nullptr)
    return std::nullopt;
  if (call.op == CollectiveOp::send)
    return CollectiveSize{calibration_op_name(call.op), 2, data_bytes};
  const int ranks = call.group->size();
  const double per_array = call.op == CollectiveOp::all_gather ? ranks : 1.0;
  return CollectiveSize{calibration_op_name(call.op), ranks, data_bytes * per_array};
}

bool in_place(const CollectiveCall& call) {
  const Slice& d = call.data;
  const Slice& o = call.out;
  if (o.buffer < 0)
    return true;
  return o.buffer == d.buffer && o.offset < d.offset + d.count && d.offset < o.offset + o.count;
}

} // namespace overlapsim
