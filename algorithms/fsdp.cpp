#include "algorithms/fsdp.h"

#include "algorithms/options.h"

#include <algorithm>
#include <charconv>
#include <fmt/format.h>

namespace overlapsim {

std::vector<LayerRange> wrap_units(const ParamLayout& layout, int layers_per_unit,
                                   double unit_bytes, double element_bytes) {
  const int layers = static_cast<int>(layout.offset.size()) - 1;
  std::vector<LayerRange> units;
  int first = 0;
  for (int l = 0; l < layers; ++l) {
    const bool full = unit_bytes > 0 ? static_cast<double>(layout.layers(0, {first, l + 1}).count) *
                                               element_bytes >=
                                           unit_bytes
                                     : l + 1 - first >= layers_per_unit;
    if (full || l + 1 == layers) {
      units.push_back({first, l + 1});
      first = l + 1;
    }
  }
  return units;
}

namespace {

enum Signal : int {
  kGathered = 0,
  kEvent = 1,
  kReduced = 2,
  kStepDone = 3,
  kEncoded = 4,
  kExchanged = 5
};

// The compute stream tells the communication stream two things on one FIFO (it can wait on one
// signal only): "done with the k-th gathered unit" (k >= 0, frees its buffer for a prefetch) and
// "unit u's gradients are ready" (encoded as -(u + 1)).
constexpr std::int64_t grad_ready(int unit) {
  return -(unit + 1);
}

class FsdpProgram final : public WorkerProgram {
public:
  FsdpProgram(Worker& w, const FsdpOptions& o) : w_(w), o_(o) {
    const auto& s = w.scenario();
    const Topology& topo = w.topology();
    const double p = scenario::dtype_bytes(s.model.dtype);
    layout_ = param_layout(s.model.spec);
    units_ = wrap_units(layout_, o.layers_per_unit, o.unit_bytes, p);
    const bool hybrid = o.hybrid || o.replicator;
    shard_group_ = hybrid ? &topo.intra_node(topo.node_of(w.rank())) : &topo.world();
    if (hybrid && topo.nodes() > 1 && !o.replicator)
      replicas_ = &topo.replication(topo.local_of(w.rank()));
    const int me = shard_group_->index_of(w.rank());
    const int parts = shard_group_->size();

    std::int64_t owned = 0, largest = 0;
    for (const auto& u : units_) {
      const Slice whole = layout_.layers(0, u);
      largest = std::max(largest, whole.count);
      owned += shard(0, whole.count, me, parts).count;
    }
    const std::int64_t total = layout_.total();
    // The flat buffers span the whole model (the real runtime binds them to it); the memory model
    // counts the shard plus what is unsharded at once (fsdp.h), which may exceed the buffer: the
    // shard and the unsharded parameters are separate storages in PyTorch's FSDP.
    const std::int64_t unsharded_params = o.reshard_after_forward ? 2 * largest : total;
    // Outside no_sync() FSDP reduces and frees each unit's gradients every micro-batch.
    const std::int64_t unsharded_grads =
        s.training.grad_accum > 1 && !o.sync_every_micro_batch ? total : largest;
    // MixedPrecision's reduce_dtype: gradients are cast before the reduction and kept sharded in
    // it.
    const double grad_bytes = o.reduce_dtype ? scenario::dtype_bytes(*o.reduce_dtype) : p;
    params_ = w.declare({"params", MemoryCategory::params, total, p, owned + unsharded_params});
    grads_ =
        w.declare({"grads", MemoryCategory::grads, total, grad_bytes, owned + unsharded_grads});
    if (o.sync_every_micro_batch && s.training.grad_accum > 1) {
      // Where the micro-batches before the last reduce to. Each reduction sums the gradients
      // accumulated so far, so the last one's result is the step's whole sum, which PyTorch
      // gets by adding each micro-batch's reduced shard: the same bytes on the wire, the same
      // result. Not counted: it stands in for the shard accumulator counted in grads.
      partial_ = w.declare({"reduced shards so far", MemoryCategory::grads, owned, grad_bytes, 0});
    }
    state_ = w.declare({"optimizer_state", MemoryCategory::optimizer_state, owned,
                        o.replicator
                            ? decoupled_state_bytes_per_param(o.replicator->kind, s.model.dtype)
                            : optimizer_state_bytes_per_param(s.training.optimizer, s.model.dtype),
                        -1});

    std::int64_t state_offset = 0;
    for (const auto& u : units_) {
      const Slice whole = layout_.layers(0, u);
      const Slice mine = shard(0, whole.count, me, parts);
      pieces_.push_back(Slice{0, whole.offset + mine.offset, mine.count});
      state_pieces_.push_back(Slice{state_, state_offset, mine.count});
      partial_pieces_.push_back(Slice{partial_, state_offset, mine.count});
      state_offset += mine.count;
    }
    if (o.replicator) {
      // FlexDeMo: one replicator piece per unit's shard, exchanged with the GPUs of the other
      // nodes that hold the same shard; the gradient is the shard group's sum.
      std::vector<ReplicatorPiece> pieces;
      for (std::size_t u = 0; u < units_.size(); ++u) {
        const Slice& g = pieces_[u];
        pieces.push_back({.grads = Slice{grads_, g.offset, g.count},
                          .params = Slice{params_, g.offset, g.count},
                          .momentum = state_pieces_[u]});
      }
      replicator_.emplace(w, *o.replicator, topo.replication(topo.local_of(w.rank())),
                          std::move(pieces), 1.0 / (parts * s.training.grad_accum));
    }
  }

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int units = static_cast<int>(units_.size());
    const double scale = 1.0 / (w_.topology().world_size() * t.grad_accum);
    std::int64_t k = 0; // gathered units consumed, counted over the whole run
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        const bool last = i + 1 == t.grad_accum;
        for (int u = 0; u < units; ++u) {
          w_.await(kGathered);
          w_.forward(units_[static_cast<std::size_t>(u)], mb, params_);
          if (o_.reshard_after_forward)
            w_.notify(kEvent, k);
          ++k;
        }
        for (int u = units - 1; u >= 0; --u) {
          if (o_.reshard_after_forward)
            w_.await(kGathered);
          w_.backward(units_[static_cast<std::size_t>(u)], mb, params_, grads_);
          // Gradients first: FSDP issues a unit's reduce-scatter in its post-backward hook,
          // before the next unit's pre-backward hook prefetches the one after.
          if (last || o_.sync_every_micro_batch)
            w_.notify(kEvent, grad_ready(u));
          if (o_.reshard_after_forward)
            w_.notify(kEvent, k++);
        }
        // Outside no_sync() the backward ends once its reductions are done (FSDP's final
        // callback waits for them).
        if (!last && o_.sync_every_micro_batch)
          w_.await(kReduced);
      }
      w_.await(kReduced);
      if (replicator_) {
        // FlexDeMo, Algorithm 1: decoupled momentum on the shard, selection, exchange between
        // replicas, shard update; the next forward's all-gathers rebuild the units.
        replicator_->encode(step);
        w_.notify(kEncoded);
        w_.await(kExchanged);
        replicator_->decode_and_update(step);
      }
      for (std::size_t u = 0; u < units_.size() && !replicator_; ++u) {
        const Slice& g = pieces_[u];
        w_.optimizer_step(OptimizerStep{.params = Slice{params_, g.offset, g.count},
                                        .grads = Slice{grads_, g.offset, g.count},
                                        .state = state_pieces_[u],
                                        .grad_scale = scale,
                                        .step = step});
      }
      w_.notify(kStepDone);
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    const int units = static_cast<int>(units_.size());
    const int per_micro_batch = o_.reshard_after_forward ? 2 * units : units;
    std::int64_t k = 0;         // gathers issued over the whole run
    std::int64_t released = -1; // the last gathered unit the compute stream is done with
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      if (step > 0)
        w_.await(kStepDone); // the next forward needs the updated shards
      released = k - 1;      // the compute stream has finished the previous step
      const std::int64_t end = k + static_cast<std::int64_t>(t.grad_accum) * per_micro_batch;
      const std::int64_t first = k;
      const int rounds = o_.sync_every_micro_batch ? t.grad_accum : 1;
      int reduced = 0;
      std::vector<CommHandle> replica_syncs;
      while (k < end || reduced < rounds * units) {
        // Two unsharded buffers: the k-th gather may start once the (k - 2)-th is released.
        if (k < end && (!o_.reshard_after_forward || k - 2 <= released)) {
          const int j = static_cast<int>((k - first) % per_micro_batch);
          gather(j < units ? j : 2 * units - 1 - j, step, j < units);
          w_.notify(kGathered, k++);
          continue;
        }
        const std::int64_t v = w_.await(kEvent);
        if (v >= 0) {
          released = std::max(released, v);
          continue;
        }
        const int u = static_cast<int>(-v - 1);
        // The micro-batches before the last reduce into partial_ (declared only then).
        const bool final_round = reduced / units == rounds - 1;
        const Slice shard_out = final_round
                                    ? Slice{grads_, pieces_[static_cast<std::size_t>(u)].offset,
                                            pieces_[static_cast<std::size_t>(u)].count}
                                    : partial_pieces_[static_cast<std::size_t>(u)];
        reduce_scatter(u, step, shard_out);
        if (replicas_ != nullptr)
          replica_syncs.push_back(w_.start(sync_replicas(u, step, shard_out)));
        ++reduced;
        if (!final_round && reduced % units == 0) { // a micro-batch's reductions are done
          for (auto& h : replica_syncs)
            w_.wait(h);
          replica_syncs.clear();
          w_.notify(kReduced);
        }
      }
      for (auto& h : replica_syncs)
        w_.wait(h);
      w_.notify(kReduced);
      if (replicator_) {
        w_.await(kEncoded);
        replicator_->exchange(step);
        w_.notify(kExchanged);
      }
    }
  }

private:
  void gather(int u, int step, bool forward) {
    const Slice whole = layout_.layers(params_, units_[static_cast<std::size_t>(u)]);
    const Slice& mine = pieces_[static_cast<std::size_t>(u)];
    CollectiveCall c;
    c.op = CollectiveOp::all_gather;
    c.group = shard_group_;
    c.data = Slice{params_, mine.offset, mine.count};
    c.out = whole;
    c.name = fmt::format("all-gather unit {} ({})", u, forward ? "fwd" : "bwd");
    c.step = step;
    w_.run(c);
  }

  void reduce_scatter(int u, int step, Slice out) {
    CollectiveCall c;
    c.op = CollectiveOp::reduce_scatter;
    c.group = shard_group_;
    c.data = layout_.layers(grads_, units_[static_cast<std::size_t>(u)]);
    c.out = out;
    c.name = fmt::format("reduce-scatter unit {}", u);
    c.step = step;
    w_.run(c);
  }

  // HSDP: the GPUs holding the same shard on every node sum their reduced shards.
  CollectiveCall sync_replicas(int u, int step, Slice shard) const {
    CollectiveCall c;
    c.op = CollectiveOp::all_reduce;
    c.group = replicas_;
    c.data = shard;
    c.name = fmt::format("all-reduce shard unit {}", u);
    c.step = step;
    return c;
  }

  Worker& w_;
  FsdpOptions o_;
  ParamLayout layout_;
  std::vector<LayerRange> units_;
  const Group* shard_group_ = nullptr;
  const Group* replicas_ = nullptr;
  BufferId params_ = -1, grads_ = -1, state_ = -1, partial_ = -1;
  std::vector<Slice> pieces_;         // this rank's shard of each unit (offsets into params/grads)
  std::vector<Slice> state_pieces_;   // where each shard's optimizer state lives
  std::vector<Slice> partial_pieces_; // where each shard is reduced before the last micro-batch
  std::optional<Replicator> replicator_;
};

class Fsdp final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  Fsdp(std::string name, FsdpOptions o) : name_(std::move(name)), o_(o) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    return std::make_unique<FsdpProgram>(w, o_);
  }

private:
  std::string name_;
  FsdpOptions o_;
};

bool is_whole_number(const std::string& s) {
  long long v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc() && end == s.data() + s.size();
}
} // namespace

void read_wrap_options(const scenario::AlgorithmSpec& spec, const AlgorithmOptions& opts,
                       FsdpOptions& o) {
  if (opts.has("wrap")) {
    if (is_whole_number(spec.options.at("wrap").value))
      o.layers_per_unit = static_cast<int>(opts.integer("wrap", 1, 1, 1 << 20));
    else
      o.unit_bytes = opts.size_bytes("wrap", 0);
  }
  o.reshard_after_forward = opts.flag("reshard_after_forward");
}

std::unique_ptr<WorkerProgram> make_fsdp_program(Worker& w, const FsdpOptions& o) {
  return std::make_unique<FsdpProgram>(w, o);
}

std::unique_ptr<Algorithm> make_fsdp(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, fsdp_descriptor());
  FsdpOptions o;
  read_wrap_options(spec, opts, o);
  o.hybrid = opts.choice("sharding") == "hybrid";
  o.sync_every_micro_batch = opts.flag("sync_every_micro_batch");
  o.reduce_dtype = opts.dtype("reduce_dtype");
  return std::make_unique<Fsdp>(spec.name, o);
}

const AlgorithmDescriptor& fsdp_descriptor() {
  static const AlgorithmDescriptor d{
      "fsdp",
      "FSDP: parameters sharded, all-gathered per unit, gradients reduce-scattered (HSDP: hybrid)",
      "Zhao et al., PyTorch FSDP, VLDB 2023",
      UpdateKind::synchronous,
      true,
      "#006D5B",
      {{"sharding",
        OptionType::choice,
        "full",
        0,
        0,
        {"full", "hybrid"},
        "full: over all GPUs; hybrid: inside a node, the shards all-reduced across nodes"},
       {"wrap",
        OptionType::size,
        "",
        0,
        0,
        {},
        "layers per FSDP unit (a whole number, default 1) or a size: consecutive layers until a "
        "unit holds that much"},
       {"reshard_after_forward",
        OptionType::flag,
        "true",
        0,
        0,
        {},
        "free the gathered parameters after the forward and gather them again for the backward"},
       {"sync_every_micro_batch",
        OptionType::flag,
        "false",
        0,
        0,
        {},
        "reduce-scatter every micro-batch's gradients (outside no_sync(), as OLMo's trainer)"},
       {"reduce_dtype",
        OptionType::dtype,
        "",
        0,
        0,
        {},
        "MixedPrecision's reduce_dtype (default the model's)"}},
      make_fsdp};
  return d;
}

} // namespace overlapsim
