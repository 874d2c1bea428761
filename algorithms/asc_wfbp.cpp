#include "algorithms/asc_wfbp.h"

#include "algorithms/layer_cost_estimate.h"
#include "algorithms/model_state.h"
#include "algorithms/options.h"

#include <algorithm>
#include <fmt/format.h>

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

// All-reduces in flight at once. Assumption: two, the smallest number that is simultaneous;
// ASC-WFBP's scheduler chooses per iteration, a choice this program does not make.

class AscWfbpProgram final : public WorkerProgram {
public:
  AscWfbpProgram(Worker& w, int channels)
      : w_(w), state_(declare_model_state(w, param_layout(w.scenario().model.spec).total())) {
    // One communicator per channel: the world's ranks rotated by c, the same ring of links, but
    // its own NCCL communicator, so its all-reduces run beside the other channels' instead of
    // queueing behind them (collectives on one group run in issue order).
    // A layer table's all-reduce times were measured one at a time and run as fixed durations,
    // which cannot share a link: with one, the all-reduces stay serial.
    const int world = w.topology().world_size();
    if (w.scenario().model.spec.comm_times_from_table)
      channels = 1;
    // The world's members rotated by c (a data-parallel group's own ranks under 3D parallelism).
    const auto& members = w.topology().world().ranks;
    for (int c = 0; c < std::min(channels, std::max(world, 1)); ++c) {
      std::vector<int> ranks;
      for (int r = 0; r < world; ++r)
        ranks.push_back(members[static_cast<std::size_t>((r + c) % world)]);
      channels_.push_back(&w.topology().group(ranks));
    }
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
      w_.optimizer_step(OptimizerStep{.params = Slice{state_.params, 0, n},
                                      .grads = Slice{state_.grads, 0, n},
                                      .state = Slice{state_.optimizer_state, 0, n},
                                      .grad_scale = 1.0 / (world * t.grad_accum),
                                      .step = step});
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  // ASC-WFBP's simultaneous communications: a group ready while earlier all-reduces are still
  // in flight starts at once on the next channel (round robin), sharing the links with them and
  // overlapping its startup with their transfers, instead of waiting for the stream to drain;
  // a channel runs its own all-reduces one after the other. One channel: MG-WFBP's serial stream.
  void run_comm() override {
    const auto& t = w_.scenario().training;
    std::vector<CommHandle> in_flight(channels_.size());
    for (int step = 0; step < t.warmup_steps + t.steps; ++step) {
      for (std::size_t k = 0; k < buckets_.size(); ++k) {
        const auto b = static_cast<std::size_t>(w_.await(kGroupReady));
        auto& h = in_flight[k % channels_.size()];
        if (h.valid())
          w_.wait(h);
        CollectiveCall call;
        call.op = CollectiveOp::all_reduce;
        call.group = channels_[k % channels_.size()];
        call.data = buckets_[b].grads;
        call.name = fmt::format("all-reduce group {}", b);
        call.step = step;
        h = w_.start(call);
      }
      for (auto& h : in_flight)
        if (h.valid()) {
          w_.wait(h);
          h = {};
        }
      w_.notify(kGradsReduced);
    }
  }

private:
  Worker& w_;
  ModelState state_;
  std::vector<Bucket> buckets_;
  std::vector<const Group*> channels_;
};

class AscWfbp final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  AscWfbp(std::string name, int channels) : name_(std::move(name)), channels_(channels) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& worker) const override {
    return std::make_unique<AscWfbpProgram>(worker, channels_);
  }

private:
  std::string name_;
  int channels_;
};

} // namespace

std::unique_ptr<Algorithm> make_asc_wfbp(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, asc_wfbp_descriptor());
  return std::make_unique<AscWfbp>(spec.name, static_cast<int>(opts.integer("simultaneous")));
}

const AlgorithmDescriptor& asc_wfbp_descriptor() {
  static const AlgorithmDescriptor d{
      "asc-wfbp",
      "wait-free backpropagation with merged small tensors and simultaneous all-reduces",
      "Shi et al., ASC-WFBP (DreamDDP's baseline); MG-WFBP's merging",
      UpdateKind::synchronous,
      false,
      "#637939",
      // The number of all-reduces in flight is an assumption: the paper searches it per iteration.
      {{"simultaneous",
        OptionType::integer,
        "2",
        1,
        64,
        {},
        "merged groups all-reduced at once on separate communicators (1: serial)"}},
      make_asc_wfbp};
  return d;
}

} // namespace overlapsim
