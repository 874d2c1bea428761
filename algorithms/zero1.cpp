#include "algorithms/zero1.h"

#include "algorithms/model_state.h"
#include "algorithms/options.h"

#include <fmt/format.h>

namespace overlapsim {
namespace {

enum Signal : int { kBucketReady = 0, kGradsReduced = 1, kStepDone = 2, kParamsGathered = 3 };

class Zero1Program final : public WorkerProgram {
public:
  Zero1Program(Worker& w, double bucket_cap) : w_(w) {
    const auto layout = param_layout(w.scenario().model.spec);
    const int n = w.topology().world_size();
    const int me = w.topology().world().index_of(w.rank());
    // The rank owns the me-th 1/N piece of every bucket (what reduce-scatter leaves it); its
    // optimizer state holds exactly those pieces, back to back.
    const auto buckets =
        make_buckets(layout, 0, scenario::dtype_bytes(w.scenario().model.dtype), bucket_cap);
    std::int64_t owned = 0;
    for (const auto& b : buckets)
      owned += shard(0, b.grads.count, me, n).count;
    state_ = declare_model_state(w, owned);
    buckets_ = make_buckets(state_.layout, state_.grads,
                            scenario::dtype_bytes(w.scenario().model.dtype), bucket_cap);
    std::int64_t state_offset = 0;
    for (const auto& b : buckets_) {
      const Slice piece = shard(state_.grads, b.grads.count, me, n);
      pieces_.push_back(Slice{state_.grads, b.grads.offset + piece.offset, piece.count});
      state_pieces_.push_back(Slice{state_.optimizer_state, state_offset, piece.count});
      state_offset += piece.count;
    }
  }

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    const int world = w_.topology().world_size();
    const int total_steps = t.warmup_steps + t.steps;
    for (int step = 0; step < total_steps; ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        w_.forward({0, layers}, mb, state_.params);
        if (i + 1 < t.grad_accum)
          w_.backward({0, layers}, mb, state_.params, state_.grads);
        else
          backward_releasing_buckets(w_, buckets_, mb, layers, state_.params, state_.grads,
                                     kBucketReady);
      }
      w_.await(kGradsReduced);
      // The sharded update: only this rank's piece of each bucket.
      for (std::size_t b = 0; b < buckets_.size(); ++b) {
        const Slice& g = pieces_[b];
        w_.optimizer_step(OptimizerStep{.params = Slice{state_.params, g.offset, g.count},
                                        .grads = g,
                                        .state = state_pieces_[b],
                                        .grad_scale = 1.0 / (world * t.grad_accum),
                                        .step = step});
      }
      w_.notify(kStepDone);
      // The next forward needs every rank's updated pieces.
      w_.await(kParamsGathered);
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    const Group& world = w_.topology().world();
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      reduce_buckets_as_released(w_, buckets_, CollectiveOp::reduce_scatter, pieces_, step,
                                 kBucketReady);
      w_.notify(kGradsReduced);
      w_.await(kStepDone);
      for (std::size_t b = 0; b < buckets_.size(); ++b) {
        const Slice& g = pieces_[b];
        const Slice& whole = buckets_[b].grads;
        CollectiveCall gather;
        gather.op = CollectiveOp::all_gather;
        gather.group = &world;
        gather.data = Slice{state_.params, g.offset, g.count};
        gather.out = Slice{state_.params, whole.offset, whole.count};
        gather.name = fmt::format("all-gather params bucket {}", b);
        gather.step = step;
        w_.run(gather);
      }
      w_.notify(kParamsGathered);
    }
  }

private:
  Worker& w_;
  ModelState state_;
  std::vector<Bucket> buckets_;
  std::vector<Slice> pieces_;       // this rank's piece of each bucket (grads and params alike)
  std::vector<Slice> state_pieces_; // where each piece's optimizer state lives
};

class Zero1 final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  Zero1(std::string name, double cap) : name_(std::move(name)), cap_(cap) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    return std::make_unique<Zero1Program>(w, cap_);
  }

private:
  std::string name_;
  double cap_;
};

} // namespace

std::unique_ptr<Algorithm> make_zero1(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, zero1_descriptor());
  return std::make_unique<Zero1>(spec.name, opts.size_bytes("bucket_cap"));
}

const AlgorithmDescriptor& zero1_descriptor() {
  static const AlgorithmDescriptor d{
      "zero1",
      "ZeRO stage 1: gradients reduce-scattered, each GPU steps its optimizer shard, all-gather",
      "Rajbhandari et al., ZeRO, SC 2020",
      UpdateKind::synchronous,
      true,
      "#8172B3",
      {{"bucket_cap",
        OptionType::size,
        "25MiB",
        0,
        0,
        {},
        "gradient bytes per bucket (PyTorch's bucket_cap_mb = 25)"}},
      make_zero1};
  return d;
}

} // namespace overlapsim
