#include "sim/table_comm_time.h"

#include <algorithm>

namespace overlapsim::sim {

TableCommTime::TableCommTime(const hw::ModelSpec& model)
    : active_(model.comm_times_from_table), layout_(param_layout(model)) {
  for (const auto& l : model.layers)
    comm_s_.push_back(l.comm_time_s);
}

std::optional<double> TableCommTime::seconds(const CollectiveCall& call,
                                             std::int64_t buffer_elements) const {
  if (!active_ || buffer_elements != layout_.total())
    return std::nullopt;
  double fraction = 1.0; // of an all-reduce's time
  Slice range = call.data;
  switch (call.op) {
  case CollectiveOp::all_reduce:
    break;
  case CollectiveOp::reduce_scatter:
    fraction = 0.5;
    break;
  case CollectiveOp::all_gather:
    fraction = 0.5;
    range = call.out; // the data is this rank's shard; the layers are the gathered array's
    break;
  default:
    return std::nullopt;
  }
  double total = 0;
  const std::int64_t lo = range.offset, hi = range.offset + range.count;
  for (std::size_t l = 0; l < comm_s_.size(); ++l) {
    const std::int64_t a = layout_.offset[l], b = layout_.offset[l + 1];
    const std::int64_t overlap = std::min(hi, b) - std::max(lo, a);
    if (overlap > 0)
      total += comm_s_[l] * static_cast<double>(overlap) / static_cast<double>(b - a);
  }
  return total * fraction;
}

} // namespace overlapsim::sim
