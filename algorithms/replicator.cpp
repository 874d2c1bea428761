#include "algorithms/replicator.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>

namespace overlapsim {

ReplicatorConfig replicator_config(const AlgorithmOptions& opts, bool with_kind) {
  ReplicatorConfig c;
  if (with_kind) {
    const auto kind = opts.choice("replicator");
    c.kind = kind == "demo"       ? ReplicatorKind::demo
             : kind == "random"   ? ReplicatorKind::random
             : kind == "striding" ? ReplicatorKind::striding
                                  : ReplicatorKind::diloco;
  }
  c.chunk = static_cast<int>(opts.integer("chunk"));
  const double block = static_cast<double>(c.chunk) * c.chunk;
  c.compression = opts.number("compression");
  if (c.kind == ReplicatorKind::demo) {
    // The paper's compression rate for DeMo: top_k / chunk^2; an explicit top_k wins.
    const auto fallback =
        opts.has("compression") ? std::max<long long>(1, std::llround(c.compression * block)) : 32;
    c.top_k = static_cast<int>(opts.integer("top_k", fallback, 1, static_cast<long long>(block)));
    c.compression = c.top_k / block;
  }
  c.decay = opts.number("decay");
  c.sign = opts.flag("sign");
  c.value_bytes = opts.choice("value_dtype") == "fp32" ? 4.0 : 2.0;
  if (with_kind)
    c.seed = static_cast<std::uint64_t>(opts.integer("seed"));
  return c;
}

std::vector<OptionSchema> replicator_options(bool with_kind) {
  std::vector<OptionSchema> o;
  if (with_kind) {
    o.push_back({"replicator",
                 OptionType::choice,
                 "demo",
                 0,
                 0,
                 {"demo", "random", "striding", "diloco"},
                 "what the replicas of a shard exchange (DeToNATION Sec. 3)"});
    o.push_back({"seed",
                 OptionType::integer,
                 "42",
                 0,
                 4611686018427387904.0,
                 {},
                 "random: the seed every replica draws the same indices from"});
  }
  o.push_back({"chunk",
               OptionType::integer,
               "64",
               1,
               4096,
               {},
               "DCT block side: blocks of chunk x chunk elements of the flat momentum"});
  o.push_back({"top_k",
               OptionType::integer,
               "",
               1,
               0,
               {},
               "coefficients kept per block (default 32, or compression x chunk^2; at most "
               "chunk^2); an explicit top_k wins over compression"});
  o.push_back({"compression",
               OptionType::number,
               "0.0625",
               1e-9,
               1,
               {},
               "the fraction of elements sent per step (demo: top_k / chunk^2; diloco: a full "
               "all-reduce every round(1 / compression) steps)"});
  o.push_back({"decay",
               OptionType::number,
               "0.999",
               0,
               1,
               {},
               "decoupled momentum decay: m <- decay m + g"});
  o.push_back({"sign", OptionType::flag, "true", 0, 0, {}, "DeMo-SGD applies sign(Q)"});
  o.push_back({"value_dtype",
               OptionType::choice,
               "fp32",
               0,
               0,
               {"fp32", "bf16", "fp16"},
               "bytes per value on the wire (indices are int32)"});
  return o;
}

double decoupled_state_bytes_per_param(ReplicatorKind kind, scenario::Dtype dtype) {
  return (dtype == scenario::Dtype::fp32 ? 0.0 : 4.0) +
         (kind == ReplicatorKind::diloco ? 0.0 : 4.0);
}

Replicator::Replicator(Worker& w, const ReplicatorConfig& config, const Group& group,
                       std::vector<ReplicatorPiece> pieces, double grad_scale)
    : w_(w), c_(config), group_(group), pieces_(std::move(pieces)), grad_scale_(grad_scale),
      lr_(w.scenario().training.learning_rate) {
  const int n = group.size();
  std::int64_t total = 0;
  for (const auto& p : pieces_)
    total += c_.selected(p.params.count);
  BufferId values = -1, indices = -1;
  switch (c_.kind) {
  case ReplicatorKind::demo:
    // Everyone's selection arrives: n x the own values and int32 indices.
    values = w.declare({"demo_values", MemoryCategory::buffers, n * total, c_.value_bytes});
    indices = w.declare({"demo_indices", MemoryCategory::buffers, n * total, 4.0});
    break;
  case ReplicatorKind::random:
  case ReplicatorKind::striding:
    values = w.declare({"replicated_values", MemoryCategory::buffers, total, c_.value_bytes});
    break;
  case ReplicatorKind::diloco:
    break; // the gradient shard is all-reduced in place
  }
  std::int64_t offset = 0;
  for (const auto& p : pieces_) {
    const std::int64_t k = c_.selected(p.params.count);
    const std::int64_t region = c_.kind == ReplicatorKind::demo ? n * k : k;
    values_.push_back(Slice{values, offset, values < 0 ? 0 : region});
    indices_.push_back(Slice{indices, offset, indices < 0 ? 0 : region});
    offset += region;
  }
}

bool Replicator::exchanges(int step) const {
  return group_.size() > 1 && c_.exchanges(step);
}

double Replicator::bytes_per_exchange() const {
  double bytes = 0;
  for (const auto& p : pieces_) {
    const auto k = static_cast<double>(c_.selected(p.params.count));
    bytes += c_.kind == ReplicatorKind::demo     ? k * (c_.value_bytes + 4)
             : c_.kind == ReplicatorKind::diloco ? k * w_.buffer(p.grads.buffer).element_bytes
                                                 : k * c_.value_bytes;
  }
  return bytes;
}

ReplicatorPhase Replicator::phase(std::size_t piece, ReplicatorPhase::Kind kind, int step) const {
  const auto& p = pieces_[piece];
  ReplicatorPhase op;
  op.phase = kind;
  op.config = c_;
  op.grads = p.grads;
  op.grad_scale = grad_scale_;
  op.params = p.params;
  op.momentum = p.momentum;
  op.values = values_[piece];
  op.indices = indices_[piece];
  op.group_size = group_.size();
  op.member = group_.index_of(w_.rank());
  op.exchanged = exchanges(step);
  op.lr = lr_;
  op.piece = static_cast<int>(piece);
  op.step = step;
  return op;
}

void Replicator::encode(int step) {
  for (std::size_t i = 0; i < pieces_.size(); ++i)
    w_.replicator_phase(phase(i, ReplicatorPhase::Kind::encode, step));
}

void Replicator::exchange(int step) {
  if (!exchanges(step))
    return;
  const int n = group_.size();
  const int me = group_.index_of(w_.rank());
  for (std::size_t i = 0; i < pieces_.size(); ++i) {
    CollectiveCall c;
    c.group = &group_;
    c.step = step;
    switch (c_.kind) {
    case ReplicatorKind::demo: {
      // Every worker's (index, value) pairs reach every worker: two all-gathers, as DeToNATION's
      // DeMo replicator issues them.
      const std::int64_t k = values_[i].count / n;
      c.op = CollectiveOp::all_gather;
      for (const auto& [region, what] :
           {std::pair{values_[i], "values"}, {indices_[i], "indices"}}) {
        c.data = Slice{region.buffer, region.offset + me * k, k};
        c.out = region;
        c.name = fmt::format("all-gather demo {} piece {}", what, i);
        w_.run(c);
      }
      break;
    }
    case ReplicatorKind::random:
    case ReplicatorKind::striding:
      // The same indices everywhere: the values are averaged.
      c.op = CollectiveOp::all_reduce;
      c.average = true;
      c.data = values_[i];
      c.name = fmt::format("all-reduce selected values piece {}", i);
      w_.run(c);
      break;
    case ReplicatorKind::diloco:
      c.op = CollectiveOp::all_reduce;
      c.average = true;
      c.data = pieces_[i].grads;
      c.name = fmt::format("all-reduce gradient piece {} (diloco)", i);
      w_.run(c);
      break;
    }
  }
}

void Replicator::decode_and_update(int step) {
  for (std::size_t i = 0; i < pieces_.size(); ++i)
    w_.replicator_phase(phase(i, ReplicatorPhase::Kind::decode, step));
}

} // namespace overlapsim
