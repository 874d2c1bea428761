#include "algorithms/ddp.h"

#include "algorithms/model_state.h"
#include "algorithms/options.h"

namespace overlapsim {
namespace {

enum Signal : int { kBucketReady = 0, kGradsReduced = 1 };

constexpr double kDefaultBucketCap = 25.0 * 1024 * 1024; // torch DDP bucket_cap_mb = 25 (MiB)

class DataParallelProgram final : public WorkerProgram {
public:
  DataParallelProgram(Worker& w, double bucket_cap, bool overlap)
      : w_(w), overlap_(overlap), state_(declare_model_state(w, param_count(w))) {
    buckets_ = make_buckets(state_.layout, state_.grads,
                            spec::dtype_bytes(w.scenario().model.dtype), bucket_cap);
  }

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    const int world = w_.topology().world_size();
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        w_.forward({0, layers}, mb, state_.params);
        if (i + 1 < t.grad_accum || !overlap_) {
          w_.backward({0, layers}, mb, state_.params, state_.grads);
        } else {
          backward_releasing_buckets(w_, buckets_, mb, layers, state_.params, state_.grads,
                                     kBucketReady);
        }
      }
      if (!overlap_)
        for (std::size_t b = 0; b < buckets_.size(); ++b)
          w_.notify(kBucketReady, static_cast<std::int64_t>(b));
      w_.await(kGradsReduced);
      const std::int64_t n = state_.layout.total();
      w_.optimizer_step(OptimizerStep{Slice{state_.params, 0, n}, Slice{state_.grads, 0, n},
                                      Slice{state_.optimizer_state, 0, n},
                                      1.0 / (world * t.grad_accum), step});
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      reduce_buckets_as_released(w_, buckets_, CollectiveOp::all_reduce, {}, step, kBucketReady);
      w_.notify(kGradsReduced);
    }
  }

private:
  static std::int64_t param_count(const Worker& w) {
    return param_layout(w.scenario().model.spec).total();
  }

  Worker& w_;
  bool overlap_;
  ModelState state_;
  std::vector<Bucket> buckets_;
};

class DataParallel final : public Algorithm {
public:
  DataParallel(std::string name, double bucket_cap, bool overlap)
      : name_(std::move(name)), bucket_cap_(bucket_cap), overlap_(overlap) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& worker) const override {
    return std::make_unique<DataParallelProgram>(worker, bucket_cap_, overlap_);
  }

private:
  std::string name_;
  double bucket_cap_;
  bool overlap_;
};

} // namespace

std::unique_ptr<Algorithm> make_ddp(const spec::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, {"bucket_cap"});
  return std::make_unique<DataParallel>(spec.name, opts.size_bytes("bucket_cap", kDefaultBucketCap),
                                        true);
}

std::unique_ptr<Algorithm> make_s_sgd(const spec::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, {"bucket_cap"});
  return std::make_unique<DataParallel>(spec.name, opts.size_bytes("bucket_cap", kDefaultBucketCap),
                                        false);
}

} // namespace overlapsim
