#include "algorithms/replicator.h"

#include "algorithms/model_state.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace overlapsim {

ReplicatorConfig replicator_config(const AlgorithmOptions& opts, bool with_kind) {
  ReplicatorConfig c;
  if (with_kind) {
    const auto kind = opts.text("replicator", "demo", {"demo", "random", "striding", "diloco"});
    c.kind = kind == "demo"       ? ReplicatorKind::demo
             : kind == "random"   ? ReplicatorKind::random
             : kind == "striding" ? ReplicatorKind::striding
                                  : ReplicatorKind::diloco;
  }
  c.chunk = static_cast<int>(opts.integer("chunk", 64, 1, 1 << 15));
  const double block = static_cast<double>(c.chunk) * c.chunk;
  // The paper's compression rate: the fraction of elements transmitted per step. For the demo
  // replicator it sets top_k = compression x chunk^2 (at least 1); an explicit top_k wins.
  c.compression = opts.number("compression", 1.0 / 16, 1e-9, 1.0);
  if (c.kind == ReplicatorKind::demo) {
    const auto fallback = opts.has("compression")
                              ? std::max<long long>(1, std::llround(c.compression * block))
                              : 32;
    c.top_k = static_cast<int>(opts.integer("top_k", fallback, 1, static_cast<long long>(block)));
    c.compression = c.top_k / block;
  }
  c.sign = opts.text("sign", "true", {"true", "false"}) == "true";
  c.value_bytes = opts.text("value_dtype", "fp32", {"fp32", "bf16", "fp16"}) == "fp32" ? 4.0 : 2.0;
  c.seed = static_cast<std::uint64_t>(opts.integer("seed", 42, 0, 1LL << 62));
  return c;
}

double decoupled_state_bytes_per_param(spec::Dtype dtype) {
  return (dtype == spec::Dtype::fp32 ? 0.0 : 4.0) + 4.0;
}

Replicator::Replicator(Worker& w, const ReplicatorConfig& config, const Group& group,
                       Slice momentum)
    : w_(w), c_(config), group_(group), momentum_(momentum) {
  const std::int64_t e = momentum.count;
  const int n = group.size();
  switch (c_.kind) {
  case ReplicatorKind::demo: {
    const std::int64_t block = static_cast<std::int64_t>(c_.chunk) * c_.chunk;
    per_step_ = std::min(e, (e + block - 1) / block * c_.top_k);
    // Everyone's selection arrives: n x per step values and int32 indices.
    values_ = w.declare({"demo_values", MemoryCategory::buffers, n * per_step_, c_.value_bytes});
    indices_ = w.declare({"demo_indices", MemoryCategory::buffers, n * per_step_, 4.0});
    break;
  }
  case ReplicatorKind::random:
  case ReplicatorKind::striding:
    per_step_ = std::max<std::int64_t>(1, std::llround(c_.compression * static_cast<double>(e)));
    values_ = w.declare({"replicated_values", MemoryCategory::buffers, per_step_, c_.value_bytes});
    break;
  case ReplicatorKind::diloco:
    per_step_ = e;
    // All-reduced in place on the momentum; declared for the size of what goes on the wire.
    values_ = w.declare({"diloco_values", MemoryCategory::buffers, e, c_.value_bytes, 0});
    break;
  }
}

bool Replicator::syncs(int step) const {
  if (group_.size() == 1)
    return false;
  if (c_.kind != ReplicatorKind::diloco)
    return true;
  const int period = std::max(1, static_cast<int>(std::lround(1.0 / c_.compression)));
  return (step + 1) % period == 0;
}

std::int64_t Replicator::selected(int step) const {
  return syncs(step) ? per_step_ : 0;
}

void Replicator::op(const char* name, OpCategory category, double bytes_per_element, int step) {
  w_.elementwise(ElementwiseOp{name, category, momentum_, bytes_per_element, step});
}

void Replicator::encode(int step) {
  const double p = spec::dtype_bytes(w_.scenario().model.dtype);
  // m <- beta m + g: read m (fp32) and g, write m.
  op("decoupled momentum", OpCategory::optimizer, 8 + p, step);
  if (!syncs(step))
    return;
  const double c = c_.compression;
  switch (c_.kind) {
  case ReplicatorKind::demo:
    // Chunked DCT-II (read m, write the coefficients) and top-k over each block (read them).
    op("dct encode + top-k", OpCategory::compress, 12, step);
    // The own selection decoded (zero-fill, inverse DCT: 12) and subtracted from m (12).
    op("remove transmitted", OpCategory::compress, 24, step);
    break;
  case ReplicatorKind::random:
  case ReplicatorKind::striding:
    // Gather the selected elements (read m, write values) and zero them in m.
    op("select + remove", OpCategory::compress, c * (8 + c_.value_bytes), step);
    break;
  case ReplicatorKind::diloco:
    break; // the whole momentum goes, in place
  }
}

void Replicator::exchange(int step) {
  if (!syncs(step))
    return;
  const int n = group_.size();
  const int me = group_.index_of(w_.rank());
  CollectiveCall c;
  c.group = &group_;
  c.step = step;
  if (c_.kind == ReplicatorKind::demo) {
    // DeMo: every worker's (index, value) pairs reach every worker (DeToNATION Algorithm 1's
    // all_gather in the replication group), values and indices as two all-gathers.
    c.op = CollectiveOp::all_gather;
    for (const auto& [buffer, what] : {std::pair{values_, "values"}, std::pair{indices_, "indices"}}) {
      c.data = Slice{buffer, me * per_step_, per_step_};
      c.out = Slice{buffer, 0, n * per_step_};
      c.name = fmt::format("all-gather demo {}", what);
      w_.run(c);
    }
    return;
  }
  // Same indices everywhere (shared seed, or the whole momentum): the values are averaged.
  c.op = CollectiveOp::all_reduce;
  c.average = true;
  c.data = Slice{values_, 0, per_step_};
  c.name = c_.kind == ReplicatorKind::diloco ? "all-reduce momentum (diloco)"
                                             : "all-reduce selected values";
  w_.run(c);
}

void Replicator::decode_and_update(int step) {
  const double p = spec::dtype_bytes(w_.scenario().model.dtype);
  if (syncs(step)) {
    switch (c_.kind) {
    case ReplicatorKind::demo:
      // Scatter everyone's coefficients into zeroed blocks (4) and inverse DCT (read, write: 8).
      op("dct decode", OpCategory::compress, 12, step);
      break;
    case ReplicatorKind::random:
    case ReplicatorKind::striding:
      op("scatter decode", OpCategory::compress, 4 + c_.compression * c_.value_bytes, step);
      break;
    case ReplicatorKind::diloco:
      break;
    }
  }
  // theta <- theta - lr sign(Q): read Q, update the fp32 master, write the 16-bit parameter.
  op("demo-sgd update", OpCategory::optimizer, 4 + (p < 4 ? 8 + p : 8), step);
}

} // namespace overlapsim
