#include "algorithms/local_sgd.h"

#include "algorithms/layer_cost_estimate.h"
#include "algorithms/model_state.h"
#include "algorithms/options.h"
#include "algorithms/partial_sync_schedule.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

namespace overlapsim {
namespace {

enum Signal : int { kLayerUpdated = 0, kSyncDone = 1 };
constexpr std::int64_t kEndOfStep = -1;

class LocalSgdProgram final : public WorkerProgram {
public:
  // `schedule` empty: FLSGD (everything averaged after the period's last step, not overlapped).
  // `extra[h]`: layers averaged again at local iteration h (DreamDDP Sec. 3.4, bubble filling).
  LocalSgdProgram(Worker& w, int period, std::optional<Assignment> schedule,
                  std::vector<std::vector<int>> extra)
      : w_(w), period_(period), schedule_(std::move(schedule)), extra_(std::move(extra)),
        state_(declare_model_state(w, param_layout(w.scenario().model.spec).total())) {}

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      const int h = step % period_;
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        w_.forward({0, layers}, mb, state_.params);
        if (i + 1 < t.grad_accum || !schedule_)
          w_.backward({0, layers}, mb, state_.params, state_.grads);
        else
          backward_updating_layers(mb, h, layers);
      }
      if (!schedule_) {
        update({0, layers}, step);
        if (h == period_ - 1)
          for (int l = layers - 1; l >= 0; --l)
            w_.notify(kLayerUpdated, l);
      }
      w_.notify(kLayerUpdated, kEndOfStep);
      w_.await(kSyncDone); // the next forward reads the averaged parameters
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (std::int64_t l = w_.await(kLayerUpdated); l != kEndOfStep; l = w_.await(kLayerUpdated)) {
        CollectiveCall call;
        call.op = CollectiveOp::all_reduce;
        call.group = &w_.topology().world();
        call.data = state_.layout.layer(state_.params, static_cast<int>(l));
        call.average = true;
        call.name = fmt::format("average layer {}", l);
        call.step = step;
        w_.run(call);
        // The optimizer continues from the average (Eq. 5), not from its own master copy.
        w_.reload_master(call.data,
                         state_.layout.layer(state_.optimizer_state, static_cast<int>(l)));
      }
      w_.notify(kSyncDone);
    }
  }

private:
  // Backward from the output one layer at a time; a layer averaged at this local step gets its
  // optimizer step at once and goes to the communication stream (Eq. 5: update, then average);
  // the other layers are updated together after the backward.
  void backward_updating_layers(MicroBatch mb, int h, int layers) {
    int top = layers;
    for (int l = layers - 1; l >= 0; --l) {
      if (!averaged_at(l, h))
        continue;
      w_.backward({l, top}, mb, state_.params, state_.grads);
      update({l, l + 1}, mb.step);
      w_.notify(kLayerUpdated, l);
      top = l;
    }
    if (top > 0)
      w_.backward({0, top}, mb, state_.params, state_.grads);
    // The layers not averaged now, in contiguous runs.
    for (int l = 0; l < layers;) {
      if (averaged_at(l, h)) {
        ++l;
        continue;
      }
      int end = l;
      while (end < layers && !averaged_at(end, h))
        ++end;
      update({l, end}, mb.step);
      l = end;
    }
  }

  // Layer l is averaged at local iteration h: its own iteration in the schedule, or a bubble
  // filled at h.
  bool averaged_at(int l, int h) const {
    if ((*schedule_)[static_cast<std::size_t>(l)] == h)
      return true;
    if (extra_.empty())
      return false;
    const auto& e = extra_[static_cast<std::size_t>(h)];
    return std::find(e.begin(), e.end(), l) != e.end();
  }

  void update(LayerRange r, int step) {
    const auto& t = w_.scenario().training;
    w_.optimizer_step(OptimizerStep{.params = state_.layout.layers(state_.params, r),
                                    .grads = state_.layout.layers(state_.grads, r),
                                    .state = state_.layout.layers(state_.optimizer_state, r),
                                    .grad_scale = 1.0 / t.grad_accum,
                                    .step = step});
  }

  Worker& w_;
  int period_;
  std::optional<Assignment> schedule_;
  std::vector<std::vector<int>> extra_;
  ModelState state_;
};

enum class Family { flsgd, plsgd_enp, dreamddp };

class LocalSgd final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  LocalSgd(std::string name, int period, Family family, bool bubble_filling)
      : name_(std::move(name)), period_(period), family_(family), bubble_filling_(bubble_filling) {}
  std::string name() const override { return name_; }
  int sync_period() const override { return period_; }
  std::unique_ptr<WorkerProgram> program(Worker& worker) const override {
    const auto& s = worker.scenario();
    const int layers = static_cast<int>(s.model.spec.layers.size());
    std::optional<Assignment> schedule;
    std::vector<std::vector<int>> extra;
    if (family_ == Family::plsgd_enp) {
      schedule = equal_number_partition(layers, period_);
    } else if (family_ == Family::dreamddp) {
      const LayerCosts costs = estimate_layer_costs(s);
      schedule = dreamddp_schedule(costs, period_);
      if (bubble_filling_)
        extra = bubble_filling(costs, *schedule, period_);
    }
    return std::make_unique<LocalSgdProgram>(worker, period_, std::move(schedule),
                                             std::move(extra));
  }

private:
  std::string name_;
  int period_;
  Family family_;
  bool bubble_filling_;
};

std::unique_ptr<Algorithm> make(const scenario::AlgorithmSpec& spec, Family family) {
  const AlgorithmOptions opts(spec, family == Family::dreamddp    ? dreamddp_descriptor()
                                    : family == Family::plsgd_enp ? plsgd_enp_descriptor()
                                                                  : local_sgd_descriptor());
  const auto period = static_cast<int>(opts.integer("H"));
  return std::make_unique<LocalSgd>(spec.name, period, family,
                                    family == Family::dreamddp && opts.flag("bubble_filling"));
}

} // namespace

std::unique_ptr<Algorithm> make_local_sgd(const scenario::AlgorithmSpec& spec) {
  return make(spec, Family::flsgd);
}
std::unique_ptr<Algorithm> make_plsgd_enp(const scenario::AlgorithmSpec& spec) {
  return make(spec, Family::plsgd_enp);
}
std::unique_ptr<Algorithm> make_dreamddp(const scenario::AlgorithmSpec& spec) {
  return make(spec, Family::dreamddp);
}

const AlgorithmDescriptor& local_sgd_descriptor() {
  static const AlgorithmDescriptor d{
      "local-sgd",
      "local SGD: H local steps, then the whole model averaged (FLSGD)",
      "DreamDDP paper's FLSGD baseline (Sec. 2)",
      UpdateKind::local,
      true,
      "#8C8C8C",
      {{"H",
        OptionType::integer,
        "10",
        1,
        1000000,
        {},
        "optimizer steps between synchronisations (measured over whole periods)"}},
      make_local_sgd};
  return d;
}

const AlgorithmDescriptor& plsgd_enp_descriptor() {
  static const AlgorithmDescriptor d{
      "plsgd-enp",
      "partial local SGD: each of the H steps averages an equal number of layers",
      "DreamDDP paper's PLSGD-ENP baseline",
      UpdateKind::local,
      true,
      "#FFA600",
      {{"H",
        OptionType::integer,
        "10",
        1,
        1000000,
        {},
        "optimizer steps between synchronisations (measured over whole periods)"}},
      make_plsgd_enp};
  return d;
}

const AlgorithmDescriptor& dreamddp_descriptor() {
  static const AlgorithmDescriptor d{
      "dreamddp",
      "DreamDDP: layers assigned to the H steps so each step's averaging hides in its backward",
      "DreamDDP, Algorithm 1 (partitioning), Sec. 3.4 (bubble filling)",
      UpdateKind::local,
      true,
      "#FB9A99",
      {{"H",
        OptionType::integer,
        "10",
        1,
        1000000,
        {},
        "optimizer steps between synchronisations (measured over whole periods)"},
       {"bubble_filling",
        OptionType::flag,
        "false",
        0,
        0,
        {},
        "average earlier layers again at later steps where their all-reduce fits in idle "
        "communication time"}},
      make_dreamddp};
  return d;
}

} // namespace overlapsim
