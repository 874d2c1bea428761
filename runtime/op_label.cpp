#include "runtime/op_label.h"

#include <fmt/format.h>

namespace overlapsim {

OpLabel op_label(const hw::ModelSpec& model, LayerRange layers, LayerPass pass) {
  const char* what = pass == LayerPass::forward     ? "fwd"
                     : pass == LayerPass::recompute ? "recompute fwd"
                                                    : "bwd";
  const OpCategory category =
      pass == LayerPass::backward ? OpCategory::backward : OpCategory::forward;
  const auto& first = model.layers[static_cast<std::size_t>(layers.first)].name;
  if (layers.last - layers.first == 1)
    return {category, fmt::format("{} {}", what, first)};
  return {category, fmt::format("{} {}..{}", what, first,
                                model.layers[static_cast<std::size_t>(layers.last - 1)].name)};
}

OpLabel op_label(const OptimizerStep& op) {
  return {OpCategory::optimizer, op.commit ? "optimizer step" : "optimizer estimate"};
}

OpLabel op_label(const OuterStep&) {
  return {OpCategory::optimizer, "outer step"};
}

OpLabel op_label(MemoryOp op) {
  switch (op) {
  case MemoryOp::copy:
    return {OpCategory::copy, "copy"};
  case MemoryOp::accumulate:
    return {OpCategory::copy, "accumulate"};
  case MemoryOp::fill:
    return {OpCategory::copy, "fill"};
  case MemoryOp::reload_master:
    return {OpCategory::copy, "reload master"};
  }
  return {OpCategory::copy, "?"};
}

OpLabel op_label(const CollectiveCall& call) {
  return {OpCategory::comm, call.name.empty() ? to_string(call.op) : call.name};
}

OpLabel op_label(const ReplicatorPhase& op) {
  const bool encode = op.phase == ReplicatorPhase::Kind::encode;
  return {encode ? OpCategory::compress : OpCategory::optimizer,
          fmt::format("{} {} piece {}", to_string(op.config.kind),
                      encode ? "encode" : "decode + update", op.piece)};
}

} // namespace overlapsim
