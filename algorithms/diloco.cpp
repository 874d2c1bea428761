#include "algorithms/diloco.h"

#include "algorithms/model_state.h"
#include "algorithms/options.h"

namespace overlapsim {
namespace {

enum Signal : int { kAverage = 0, kAveraged = 1 };
constexpr double kOuterStateBytes = 4; // fp32 anchor and momentum

class DilocoProgram final : public WorkerProgram {
public:
  DilocoProgram(Worker& w, int period, double lr, double mu)
      : w_(w), period_(period), lr_(lr), mu_(mu),
        state_(declare_model_state(w, param_layout(w.scenario().model.spec).total())),
        anchor_(
            w.declare({"outer anchor (theta at the period's start)",
                       MemoryCategory::optimizer_state, state_.layout.total(), kOuterStateBytes})),
        momentum_(w.declare({"outer momentum", MemoryCategory::optimizer_state,
                             state_.layout.total(), kOuterStateBytes})) {}

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    const std::int64_t n = state_.layout.total();
    w_.copy(all(state_.params), all(anchor_)); // theta_start of the first period
    w_.fill(all(momentum_), 0.0);
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        w_.forward({0, layers}, mb, state_.params);
        w_.backward({0, layers}, mb, state_.params, state_.grads);
      }
      // Inner step (Algorithm 1, line 6).
      w_.optimizer_step(OptimizerStep{.params = all(state_.params),
                                      .grads = all(state_.grads),
                                      .state = Slice{state_.optimizer_state, 0, n},
                                      .grad_scale = 1.0 / t.grad_accum,
                                      .step = step});
      if (step % period_ == period_ - 1) {
        w_.notify(kAverage, step);
        w_.await(kAveraged);
        // Outer step (Algorithm 1, lines 8-9).
        w_.outer_step(OuterStep{.params = all(state_.params),
                                .anchor = all(anchor_),
                                .momentum = all(momentum_),
                                .inner_state = Slice{state_.optimizer_state, 0, n},
                                .lr = lr_,
                                .mu = mu_,
                                .step = step});
      }
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    for (int step = period_ - 1; step < t.warmup_steps + t.steps; step += period_) {
      w_.await(kAverage);
      CollectiveCall call;
      call.op = CollectiveOp::all_reduce;
      call.group = &w_.topology().world();
      call.data = all(state_.params);
      call.average = true;
      call.name = "average parameters (outer)";
      call.step = step;
      w_.run(call);
      w_.notify(kAveraged);
    }
  }

private:
  Slice all(BufferId b) const { return Slice{b, 0, state_.layout.total()}; }

  Worker& w_;
  int period_;
  double lr_, mu_;
  ModelState state_;
  BufferId anchor_, momentum_;
};

class Diloco final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  Diloco(std::string name, int period, double lr, double mu)
      : name_(std::move(name)), period_(period), lr_(lr), mu_(mu) {}
  std::string name() const override { return name_; }
  int sync_period() const override { return period_; }
  std::unique_ptr<WorkerProgram> program(Worker& worker) const override {
    return std::make_unique<DilocoProgram>(worker, period_, lr_, mu_);
  }

private:
  std::string name_;
  int period_;
  double lr_, mu_;
};

} // namespace

std::unique_ptr<Algorithm> make_diloco(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, diloco_descriptor());
  return std::make_unique<Diloco>(spec.name, static_cast<int>(opts.integer("H")),
                                  opts.number("outer_lr"), opts.number("outer_momentum"));
}

const AlgorithmDescriptor& diloco_descriptor() {
  static const AlgorithmDescriptor d{
      "diloco",
      "DiLoCo: H inner steps, then the averaged pseudo-gradient and an outer Nesterov step",
      "Douillard et al., DiLoCo, 2023, Algorithm 1",
      UpdateKind::local,
      true,
      "#DD8452",
      {{"H", OptionType::integer, "10", 1, 1000000, {}, "inner steps between synchronisations"},
       {"outer_lr",
        OptionType::number,
        "0.7",
        0,
        100,
        {},
        "outer Nesterov learning rate (DiLoCo Sec. 3)"},
       {"outer_momentum",
        OptionType::number,
        "0.9",
        0,
        1,
        {},
        "outer Nesterov momentum (DiLoCo Sec. 3)"}},
      make_diloco};
  return d;
}

} // namespace overlapsim
