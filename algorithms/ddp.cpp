#include "algorithms/ddp.h"

#include "algorithms/model_state.h"
#include "algorithms/options.h"

#include <optional>

namespace overlapsim {
namespace {

enum Signal : int { kBucketReady = 0, kGradsReduced = 1, kStepDone = 2, kParamsGathered = 3 };

constexpr double kDefaultBucketCap = 25.0 * 1024 * 1024; // torch DDP bucket_cap_mb = 25 (MiB)

// How a PyTorch DDP job is set up; the defaults are the efficient setup (bf16 model, gradients
// reduced once per optimizer step, a replicated optimizer).
struct DdpSetup {
  double bucket_cap = kDefaultBucketCap;
  bool overlap = true; // false: S-SGD, every bucket reduced after the whole backward
  // PyTorch DDP outside no_sync(): each micro-batch's backward all-reduces its buckets, and DDP
  // waits for them before the next micro-batch (the reducer finalises every backward). What a
  // training loop that accumulates without no_sync() pays, e.g. the ACCO paper's DDP baseline.
  bool sync_every_micro_batch = false;
  std::optional<scenario::Dtype> dtype; // parameters, gradients, communication; unset: model.dtype
  // torch.distributed.optim.ZeroRedundancyOptimizer over DDP: each rank steps its 1/N of the
  // parameters, then every rank's updated piece is broadcast to all (the bytes of an all-gather),
  // before the next forward.
  bool zero_redundancy = false;
  // torch DDP's gradient_as_bucket_view (default False): when false the reducer keeps its own
  // flat bucket buffers beside param.grad (a second gradient-sized buffer, "the saved memory size
  // will be equal to the total gradients size", DDP docs), copies each gradient into its bucket
  // as it is ready (mark_variable_ready_dense) and copies the reduced bucket back into .grad
  // (finalize_bucket_dense). True: .grad is a view of the bucket, neither copy nor buffer.
  bool gradient_as_bucket_view = false;
};

class DataParallelProgram final : public WorkerProgram {
public:
  DataParallelProgram(Worker& w, const DdpSetup& setup) : w_(w), setup_(setup) {
    const scenario::Dtype dtype = setup.dtype.value_or(w.scenario().model.dtype);
    const auto layout = param_layout(w.scenario().model.spec);
    const int n = w.topology().world_size();
    const int me = w.topology().world().index_of(w.rank());
    own_ = setup.zero_redundancy ? shard(0, layout.total(), me, n) : Slice{0, 0, layout.total()};
    state_ = declare_model_state(w, own_.count, dtype);
    own_.buffer = state_.params;
    const double p = scenario::dtype_bytes(dtype);
    grad_buckets_ = make_buckets(state_.layout, state_.grads, p, setup.bucket_cap);
    // One GPU: plain single-device training, as a one-GPU job runs without a DDP wrapper (and
    // as the single-GPU measurements this is held against ran): no reducer, no bucket copies.
    if (setup.gradient_as_bucket_view || n == 1) {
      buckets_ = grad_buckets_;
    } else {
      bucket_buffer_ =
          w.declare({"ddp_gradient_buckets", MemoryCategory::buffers, state_.layout.total(), p});
      buckets_ = make_buckets(state_.layout, bucket_buffer_, p, setup.bucket_cap);
    }
  }

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    const int world = w_.topology().world_size();
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        const bool last = i + 1 == t.grad_accum;
        w_.forward({0, layers}, mb, state_.params);
        if (setup_.overlap && (last || setup_.sync_every_micro_batch)) {
          backward_releasing_buckets(w_, grad_buckets_, mb, layers, state_.params, state_.grads,
                                     kBucketReady, bucket_buffer_ >= 0 ? &buckets_ : nullptr);
          if (!last) {
            w_.await(kGradsReduced);
            copy_buckets_back();
          }
        } else {
          w_.backward({0, layers}, mb, state_.params, state_.grads);
        }
      }
      if (!setup_.overlap)
        for (std::size_t b = 0; b < buckets_.size(); ++b) {
          if (bucket_buffer_ >= 0)
            w_.copy(grad_buckets_[b].grads, buckets_[b].grads);
          w_.notify(kBucketReady, static_cast<std::int64_t>(b));
        }
      w_.await(kGradsReduced);
      copy_buckets_back();
      // Reduced every micro-batch, the gradients arrive averaged over the workers already.
      const double scale =
          1.0 / ((setup_.sync_every_micro_batch ? 1 : world) * static_cast<double>(t.grad_accum));
      w_.optimizer_step(OptimizerStep{.params = own_,
                                      .grads = Slice{state_.grads, own_.offset, own_.count},
                                      .state = Slice{state_.optimizer_state, 0, own_.count},
                                      .grad_scale = scale,
                                      .step = step});
      if (setup_.zero_redundancy) {
        w_.notify(kStepDone);
        w_.await(kParamsGathered);
      }
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    const int rounds = setup_.sync_every_micro_batch ? t.grad_accum : 1;
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (int r = 0; r < rounds; ++r) {
        reduce_buckets_as_released(w_, buckets_, CollectiveOp::all_reduce, {}, step, kBucketReady,
                                   setup_.sync_every_micro_batch);
        w_.notify(kGradsReduced);
      }
      if (setup_.zero_redundancy) {
        w_.await(kStepDone);
        CollectiveCall gather;
        gather.op = CollectiveOp::all_gather;
        gather.group = &w_.topology().world();
        gather.data = own_;
        gather.out = Slice{state_.params, 0, state_.layout.total()};
        gather.name = "broadcast updated params";
        gather.step = step;
        w_.run(gather);
        w_.notify(kParamsGathered);
      }
    }
  }

private:
  // The reduced buckets back into .grad, which the optimizer reads (no-op for bucket views).
  void copy_buckets_back() {
    if (bucket_buffer_ < 0)
      return;
    const std::int64_t total = state_.layout.total();
    w_.copy(Slice{bucket_buffer_, 0, total}, Slice{state_.grads, 0, total});
  }

  Worker& w_;
  DdpSetup setup_;
  ModelState state_;
  Slice own_; // the parameters this rank's optimizer updates: all, or its ZeRO shard
  std::vector<Bucket> grad_buckets_; // the buckets' elements in .grad
  std::vector<Bucket> buckets_;      // what is all-reduced: the bucket buffer, or .grad as a view
  BufferId bucket_buffer_ = -1;
};

class DataParallel final : public Algorithm {
public:
  // ZeroRedundancyOptimizer broadcasts each rank's shard from that rank: the roots tell them apart.
  bool node_symmetric() const override { return !setup_.zero_redundancy; }
  DataParallel(std::string name, const DdpSetup& setup) : name_(std::move(name)), setup_(setup) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& worker) const override {
    return std::make_unique<DataParallelProgram>(worker, setup_);
  }

private:
  std::string name_;
  DdpSetup setup_;
};

} // namespace

std::unique_ptr<Algorithm> make_ddp(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, ddp_descriptor());
  DdpSetup setup;
  setup.bucket_cap = opts.size_bytes("bucket_cap");
  setup.sync_every_micro_batch = opts.flag("sync_every_micro_batch");
  setup.dtype = opts.dtype("dtype");
  setup.zero_redundancy = opts.flag("zero_redundancy");
  setup.gradient_as_bucket_view = opts.flag("gradient_as_bucket_view");
  return std::make_unique<DataParallel>(spec.name, setup);
}

std::unique_ptr<Algorithm> make_s_sgd(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, s_sgd_descriptor());
  DdpSetup setup;
  setup.bucket_cap = opts.size_bytes("bucket_cap");
  setup.overlap = false;
  setup.gradient_as_bucket_view = opts.flag("gradient_as_bucket_view");
  return std::make_unique<DataParallel>(spec.name, setup);
}

const AlgorithmDescriptor& ddp_descriptor() {
  static const AlgorithmDescriptor d{
      "ddp",
      "PyTorch DDP: bucketed gradient all-reduces overlapped with the backward",
      "Li et al., PyTorch Distributed, VLDB 2020",
      UpdateKind::synchronous,
      true,
      "#4C72B0",
      {{"bucket_cap",
        OptionType::size,
        "25MiB",
        0,
        0,
        {},
        "gradient bytes per bucket (PyTorch's bucket_cap_mb = 25)"},
       {"sync_every_micro_batch",
        OptionType::flag,
        "false",
        0,
        0,
        {},
        "all-reduce every micro-batch's buckets (accumulation without no_sync())"},
       {"dtype",
        OptionType::dtype,
        "",
        0,
        0,
        {},
        "the model DDP keeps and communicates (default model.dtype)"},
       {"zero_redundancy",
        OptionType::flag,
        "false",
        0,
        0,
        {},
        "torch's ZeroRedundancyOptimizer: each rank steps its 1/N shard, shards gathered after"},
       {"gradient_as_bucket_view",
        OptionType::flag,
        "false",
        0,
        0,
        {},
        "false (PyTorch's default): gradients copied into and out of a second, bucket buffer"}},
      make_ddp};
  return d;
}

const AlgorithmDescriptor& s_sgd_descriptor() {
  static const AlgorithmDescriptor d{
      "s-sgd",
      "synchronous SGD: DDP's buckets all-reduced after the whole backward, no overlap",
      "DreamDDP's S-SGD baseline",
      UpdateKind::synchronous,
      true,
      "#937860",
      {{"bucket_cap",
        OptionType::size,
        "25MiB",
        0,
        0,
        {},
        "gradient bytes per bucket (PyTorch's bucket_cap_mb = 25)"},
       // DreamDDP's S-SGD baseline all-reduces the gradients where they are, not through DDP's
       // reducer.
       {"gradient_as_bucket_view",
        OptionType::flag,
        "true",
        0,
        0,
        {},
        "false: gradients copied through a bucket buffer as DDP's reducer does"}},
      make_s_sgd};
  return d;
}

} // namespace overlapsim
