#include "algorithms/demo.h"

#include "algorithms/model_state.h"
#include "algorithms/options.h"
#include "algorithms/replicator.h"

#include <optional>

namespace overlapsim {
namespace {

enum Signal : int { kEncoded = 0, kExchanged = 1 };

class DemoProgram final : public WorkerProgram {
public:
  DemoProgram(Worker& w, const ReplicatorConfig& c) : w_(w) {
    const auto& s = w.scenario();
    const double p = scenario::dtype_bytes(s.model.dtype);
    layout_ = param_layout(s.model.spec);
    const std::int64_t n = layout_.total();
    params_ = w.declare({"params", MemoryCategory::params, n, p});
    grads_ = w.declare({"grads", MemoryCategory::grads, n, p});
    // The decoupled momentum (and, for 16-bit parameters, the fp32 master copy DeMo-SGD updates).
    state_ = w.declare({"optimizer_state", MemoryCategory::optimizer_state, n,
                        decoupled_state_bytes_per_param(c.kind, s.model.dtype)});
    // No gradient is reduced: each worker's own, averaged over its micro-batches.
    replicator_.emplace(w, c, w.topology().world(),
                        std::vector{ReplicatorPiece{.grads = Slice{grads_, 0, n},
                                                    .params = Slice{params_, 0, n},
                                                    .momentum = Slice{state_, 0, n}}},
                        1.0 / s.training.grad_accum);
  }

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        w_.forward({0, layers}, mb, params_);
        w_.backward({0, layers}, mb, params_, grads_);
      }
      replicator_->encode(step);
      w_.notify(kEncoded);
      w_.await(kExchanged);
      replicator_->decode_and_update(step);
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      w_.await(kEncoded);
      replicator_->exchange(step);
      w_.notify(kExchanged);
    }
  }

private:
  Worker& w_;
  ParamLayout layout_;
  BufferId params_ = -1, grads_ = -1, state_ = -1;
  std::optional<Replicator> replicator_;
};

class Demo final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  Demo(std::string name, ReplicatorConfig c) : name_(std::move(name)), c_(c) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    return std::make_unique<DemoProgram>(w, c_);
  }

private:
  std::string name_;
  ReplicatorConfig c_;
};

} // namespace

std::unique_ptr<Algorithm> make_demo(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, demo_descriptor());
  return std::make_unique<Demo>(spec.name, replicator_config(opts, false));
}

const AlgorithmDescriptor& demo_descriptor() {
  static const AlgorithmDescriptor d{
      "demo",
      "DeMo: decoupled momentum, its top-k DCT coefficients all-gathered instead of gradients",
      "Peng et al., DeMo: Decoupled Momentum Optimization, 2024",
      UpdateKind::local,
      true,
      "#B2DF8A",
      replicator_options(false),
      make_demo};
  return d;
}

} // namespace overlapsim
