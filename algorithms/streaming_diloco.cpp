#include "algorithms/streaming_diloco.h"

#include "algorithms/model_state.h"
#include "algorithms/options.h"
#include "scenario/loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <deque>

namespace overlapsim {
namespace {

enum Signal : int { kReduce = 0, kReduced = 1 };
constexpr double kOuterStateBytes = 4; // fp32 anchor and momentum

int offset(int p, int period, int fragments) {
  return p * period / fragments;
}

// Fragment p holds layers [p L / P, (p + 1) L / P): contiguous groups of equal count (the paper's
// "sequential" pattern).
LayerRange fragment_layers(int p, int layers, int fragments) {
  return {p * layers / fragments, (p + 1) * layers / fragments};
}

struct Options {
  int period = 0, fragments = 0, overlap = 0;
  double alpha = 0, lr = 0, mu = 0;
};

class StreamingDilocoProgram final : public WorkerProgram {
public:
  StreamingDilocoProgram(Worker& w, const Options& o)
      : w_(w), o_(o), state_(declare_model_state(w, param_layout(w.scenario().model.spec).total())),
        anchor_(
            w.declare({"outer anchor (theta at the period's start)",
                       MemoryCategory::optimizer_state, state_.layout.total(), kOuterStateBytes})),
        momentum_(w.declare({"outer momentum", MemoryCategory::optimizer_state,
                             state_.layout.total(), kOuterStateBytes})),
        inflight_(w.declare({"fragments in flight", MemoryCategory::buffers, state_.layout.total(),
                             w.buffer(state_.params).element_bytes, resident_in_flight()})),
        syncs_(streaming_sync_schedule(total_steps(), o.period, o.fragments, o.overlap)) {}

  void run_compute() override {
    const auto& t = w_.scenario().training;
    const std::int64_t n = state_.layout.total();
    w_.copy(all(state_.params), all(anchor_)); // theta_start of every fragment's first period
    w_.fill(all(momentum_), 0.0);
    std::deque<FragmentSync> in_flight;
    std::size_t next = 0;
    for (int step = 0; step < total_steps(); ++step) {
      for (int i = 0; i < t.grad_accum; ++i) {
        const MicroBatch mb{step, i};
        w_.forward({0, layers()}, mb, state_.params);
        w_.backward({0, layers()}, mb, state_.params, state_.grads);
      }
      // Inner step (DiLoCo Algorithm 1, line 6).
      w_.optimizer_step(OptimizerStep{.params = all(state_.params),
                                      .grads = all(state_.grads),
                                      .state = Slice{state_.optimizer_state, 0, n},
                                      .grad_scale = 1.0 / t.grad_accum,
                                      .step = step});
      const int done = step + 1;
      // Merges due now go first: with tau = H a fragment merges and starts again at the same step.
      merge_due(in_flight, done, step);
      for (; next < syncs_.size() && syncs_[next].after_step == done; ++next) {
        const int p = syncs_[next].fragment;
        // The snapshot the all-reduce reads while the inner steps go on.
        w_.copy(frag(state_.params, p), frag(inflight_, p));
        w_.notify(kReduce, p);
        in_flight.push_back(syncs_[next]);
      }
      merge_due(in_flight, done, step); // tau = 0: at once
      w_.step_done(step, static_cast<double>(t.grad_accum) * t.micro_batch);
    }
  }

  void run_comm() override {
    for (const auto& s : syncs_) {
      const auto p = static_cast<int>(w_.await(kReduce));
      CollectiveCall call;
      call.op = CollectiveOp::all_reduce;
      call.group = &w_.topology().world();
      call.data = frag(inflight_, p);
      call.average = true;
      call.name = fmt::format("average fragment {} (outer)", p);
      call.step = s.after_step - 1;
      w_.run(call);
      w_.notify(kReduced, p);
    }
  }

private:
  void merge_due(std::deque<FragmentSync>& in_flight, int done, int step) {
    while (!in_flight.empty() && in_flight.front().after_step + o_.overlap == done) {
      const int p = in_flight.front().fragment;
      in_flight.pop_front();
      w_.await(kReduced); // FIFO: the fragments were started in this order
      // The outer Nesterov step on the fragment's average (DiLoCo Algorithm 1, lines 8-9), then
      // the merge with the parameters that moved on for tau steps (Streaming DiLoCo Eq. 3).
      w_.outer_step(OuterStep{.params = frag(inflight_, p),
                              .anchor = frag(anchor_, p),
                              .momentum = frag(momentum_, p),
                              .inner_state = frag(state_.optimizer_state, p),
                              .lr = o_.lr,
                              .mu = o_.mu,
                              .step = step,
                              .local = frag(state_.params, p),
                              .alpha = o_.alpha});
    }
  }

  // Elements of the in-flight buffer resident at once: the largest total over the phases of a
  // period of the fragments between snapshot and merge (at least one step each, the snapshot
  // living through its own all-reduce when tau = 0).
  std::int64_t resident_in_flight() const {
    std::int64_t most = 0;
    for (int r = 0; r < o_.period; ++r) {
      std::int64_t sum = 0;
      for (int p = 0; p < o_.fragments; ++p)
        if (((r - offset(p, o_.period, o_.fragments)) % o_.period + o_.period) % o_.period <
            std::max(o_.overlap, 1))
          sum += frag(state_.params, p).count;
      most = std::max(most, sum);
    }
    return most;
  }

  int layers() const { return static_cast<int>(w_.scenario().model.spec.layers.size()); }
  int total_steps() const {
    const auto& t = w_.scenario().training;
    return t.warmup_steps + t.steps;
  }
  Slice all(BufferId b) const { return Slice{b, 0, state_.layout.total()}; }
  Slice frag(BufferId b, int p) const {
    return state_.layout.layers(b, fragment_layers(p, layers(), o_.fragments));
  }

  Worker& w_;
  Options o_;
  ModelState state_;
  BufferId anchor_, momentum_, inflight_;
  std::vector<FragmentSync> syncs_;
};

class StreamingDiloco final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  StreamingDiloco(std::string name, std::string where, const Options& o)
      : name_(std::move(name)), where_(std::move(where)), o_(o) {}
  std::string name() const override { return name_; }
  int sync_period() const override { return o_.period; }
  std::unique_ptr<WorkerProgram> program(Worker& worker) const override {
    const auto layers = worker.scenario().model.spec.layers.size();
    if (static_cast<std::size_t>(o_.fragments) > layers)
      throw scenario::ScenarioError(
          fmt::format("{}: key 'algorithms.{}.fragments': {} fragments of a model of {} layers; "
                      "expected at most one fragment per layer",
                      where_, name_, o_.fragments, layers));
    return std::make_unique<StreamingDilocoProgram>(worker, o_);
  }

private:
  std::string name_, where_;
  Options o_;
};

} // namespace

std::vector<FragmentSync> streaming_sync_schedule(int total_steps, int period, int fragments,
                                                  int overlap_steps) {
  std::vector<FragmentSync> syncs;
  for (int c = 1; c + overlap_steps <= total_steps; ++c)
    for (int p = 0; p < fragments; ++p)
      if (c % period == offset(p, period, fragments) % period)
        syncs.push_back({c, p});
  return syncs;
}

std::unique_ptr<Algorithm> make_streaming_diloco(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, streaming_diloco_descriptor());
  Options o;
  o.period = static_cast<int>(opts.integer("H"));
  o.fragments = static_cast<int>(opts.integer("fragments"));
  // A fragment merges before its next sync starts (at the latest at the same step).
  o.overlap = static_cast<int>(opts.integer_at_most("overlap_steps", o.period));
  o.alpha = opts.number("alpha");
  o.lr = opts.number("outer_lr");
  o.mu = opts.number("outer_momentum");
  return std::make_unique<StreamingDiloco>(spec.name, spec.where, o);
}

const AlgorithmDescriptor& streaming_diloco_descriptor() {
  static const AlgorithmDescriptor d{
      "streaming-diloco",
      "Streaming DiLoCo: fragments synchronised in turn, overlapped with inner steps, merged",
      "Douillard et al., Streaming DiLoCo, 2025, Algorithm 1",
      UpdateKind::local,
      true,
      "#882255",
      {{"H", OptionType::integer, "10", 1, 1000000, {}, "inner steps between a fragment's syncs"},
       // The paper's main runs use a handful of fragments.
       {"fragments",
        OptionType::integer,
        "4",
        1,
        1000000,
        {},
        "contiguous groups of layers, synchronised staggered by H / fragments (at most one per "
        "layer)"},
       // Sec. 2.3: tau = 1 already hides most of the all-reduce.
       {"overlap_steps",
        OptionType::integer,
        "1",
        0,
        0,
        {},
        "inner steps a fragment's all-reduce overlaps (0 to H)"},
       // Sec. 2.3: the mixing factor it settles on.
       {"alpha",
        OptionType::number,
        "0.5",
        0,
        1,
        {},
        "merge: theta = alpha theta_local + (1 - alpha) theta_global"},
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
      make_streaming_diloco};
  return d;
}

} // namespace overlapsim
