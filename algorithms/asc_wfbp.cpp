#include "algorithms/asc_wfbp.h"

#include "algorithms/layer_cost_estimate.h"
#include "algorithms/model_state.h"
#include "algorithms/options.h"

#include <algorithm>

namespace overlapsim {

std::vector<LayerGroup> asc_wfbp_groups(const LayerCosts& costs, double startup_s) {
  const int L = costs.layers();
  std::vector<LayerGroup> groups;
  if (L == 0)
    return groups;
  double bp_end = costs.bp_s[static_cast<std::size_t>(L - 1)]; // backward from the output at 0
  double comm_free = 0;                                        // the stream's previous end
  LayerGroup open{L - 1, L};
  double open_ready = bp_end;
  double open_bytes_time = costs.comm_s[static_cast<std::size_t>(L - 1)] - startup_s;
  for (int l = L - 2; l >= 0; --l) {
    const auto i = static_cast<std::size_t>(l);
    bp_end += costs.bp_s[i];
    const double tau_c = std::max(comm_free, open_ready);
    if (bp_end < tau_c + startup_s) { // MG-WFBP: ready before the startup is over, merge
      open.first = l;
      open_ready = bp_end;
      open_bytes_time += costs.comm_s[i] - startup_s;
      continue;
    }
    comm_free = tau_c + startup_s + open_bytes_time;
    groups.push_back(open);
    open = LayerGroup{l, l + 1};
    open_ready = bp_end;
    open_bytes_time = costs.comm_s[i] - startup_s;
  }
  groups.push_back(open);
  return groups;
}

namespace {

enum Signal : int { kGroupReady = 0, kGradsReduced = 1 };

class AscWfbpProgram final : public WorkerProgram {
public:
  explicit AscWfbpProgram(Worker& w)
      : w_(w), state_(declare_model_state(w, param_layout(w.scenario().model.spec).total())) {
    const auto& s = w.scenario();
    for (const auto& g : asc_wfbp_groups(estimate_layer_costs(s), all_reduce_startup_s(s))) {
      const Slice grads = state_.layout.layers(state_.grads, {g.first, g.last});
      if (grads.count > 0)
        buckets_.push_back(Bucket{grads, g.first});
    }
  }

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    const int world = w_.topology().world_size();
    const std::int64_t n = state_.layout.total();
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        w_.forward({0, layers}, mb, state_.params);
        if (i + 1 < t.grad_accum)
          w_.backward({0, layers}, mb, state_.params, state_.grads);
        else // wait-free: each group goes to the communication stream once its backward is done
          backward_releasing_buckets(w_, buckets_, mb, layers, state_.params, state_.grads,
                                     kGroupReady);
      }
      w_.await(kGradsReduced);
      w_.optimizer_step(OptimizerStep{Slice{state_.params, 0, n}, Slice{state_.grads, 0, n},
                                      Slice{state_.optimizer_state, 0, n},
                                      1.0 / (world * t.grad_accum), step});
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      reduce_buckets_as_released(w_, buckets_, CollectiveOp::all_reduce, {}, step, kGroupReady);
      w_.notify(kGradsReduced);
    }
  }

private:
  Worker& w_;
  ModelState state_;
  std::vector<Bucket> buckets_;
};

class AscWfbp final : public Algorithm {
public:
  explicit AscWfbp(std::string name) : name_(std::move(name)) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& worker) const override {
    return std::make_unique<AscWfbpProgram>(worker);
  }

private:
  std::string name_;
};

} // namespace

std::unique_ptr<Algorithm> make_asc_wfbp(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, {});
  return std::make_unique<AscWfbp>(spec.name);
}

} // namespace overlapsim
