// The collectives and point-to-point messages every part of overlapsim names: the algorithms'
// calls (runtime/), their prices (collective_price.h), calibration profiles (scenario/) and the
// real worker (validate/).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace overlapsim {

enum class CollectiveOp : std::uint8_t {
  all_reduce,
  reduce_scatter,
  all_gather,
  broadcast,
  reduce,
  all_to_all,
  send,
  recv,
  barrier
};
const char* to_string(CollectiveOp op); // "all-reduce", "reduce-scatter", ...

// A message between two ranks rather than a collective over a group.
constexpr bool is_point_to_point(CollectiveOp op) {
  return op == CollectiveOp::send || op == CollectiveOp::recv;
}

// The op a calibration profile's name stands for: all_reduce (or allreduce), reduce_scatter,
// all_gather, broadcast, reduce, all_to_all, send_recv (a message: CollectiveOp::send); nullopt
// for any other name.
std::optional<CollectiveOp> parse_calibration_op(std::string_view name);

} // namespace overlapsim
