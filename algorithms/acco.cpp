#include "algorithms/acco.h"

#include "algorithms/model_state.h"
#include "algorithms/options.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim {
namespace {

enum class Variant { dpu, acco_wp, acco };

enum Signal : int { kHandOff = 0, kRoundDone = 1 };

// By default an optimizer step holds at most this many times DDP's micro-batches per step
// (training.grad_accum): unbounded, a slow network let ACCO accumulate 839,744 samples a step at
// 10 Mb/s and read as a 3,281x speedup (issue 62.3).
constexpr int kDefaultStepMultiple = 4;

// Micro-batches the compute stream accumulates per round: at least `min` (0: the variant's
// default), at most `max` (kDefaultCap: kDefaultStepMultiple x grad_accum per optimizer step,
// split over its rounds; 0: unbounded, the paper's behaviour: keep computing while the round runs).
constexpr int kDefaultCap = -1;
struct Accumulation {
  int min = 0;
  int max = kDefaultCap;
};

// A round as the compute stream hands it over: which optimizer step it feeds, which stage (ACCO's
// stage 1 or 2; 0 for the one-round variants) and how many micro-batches it accumulated.
struct Round {
  int step;
  int stage;
  int micro_batches;
};

std::int64_t encode(Round r) {
  return (static_cast<std::int64_t>(r.step) << 32) | (static_cast<std::int64_t>(r.stage) << 24) |
         r.micro_batches;
}
Round decode(std::int64_t v) {
  return Round{static_cast<int>(v >> 32), static_cast<int>((v >> 24) & 0xff),
               static_cast<int>(v & 0xffffff)};
}

class DelayedUpdateProgram final : public WorkerProgram {
public:
  DelayedUpdateProgram(Worker& w, Variant variant, int warmup_rounds, Accumulation accumulation)
      : w_(w), variant_(variant), warmup_rounds_(warmup_rounds),
        max_micro_batches_(accumulation.max) {
    // At least the mini-batch DDP uses per step: grad_accum micro-batches per round, split over
    // ACCO's two stages (the paper's fine-tuning runs ACCO with half DDP's accumulation, Table 5).
    // A cap below that default lowers it (an explicit minimum above the cap is refused earlier).
    const int accum = w.scenario().training.grad_accum;
    const int fallback = variant == Variant::acco ? std::max(1, accum / 2) : accum;
    // The default cap: kDefaultStepMultiple x grad_accum per optimizer step, over its rounds
    // (ACCO's two stages take half each), never below an explicit minimum.
    if (max_micro_batches_ == kDefaultCap)
      max_micro_batches_ =
          std::max(accumulation.min, std::max(1, kDefaultStepMultiple * accum / rounds_per_step()));
    min_micro_batches_ = accumulation.min > 0 ? accumulation.min : fallback;
    if (max_micro_batches_ > 0)
      min_micro_batches_ = std::min(min_micro_batches_, max_micro_batches_);
    // On a pipeline (issue 65) a round is one pass of the stage's schedule: training.grad_accum
    // micro-batches on every stage, whatever its communication takes. The paper lets each worker
    // accumulate while its round runs (Algorithm 1, lines 6-9: N_i differs across workers); the
    // stages of one pipeline cannot, since a stage's forward needs the previous stage's activation
    // of the same micro-batch: a count each stage chose from its own round would leave the
    // slowest stage's schedule waiting for messages nobody sends. One pass per round is the count
    // they all know without communicating, and parameters change only at a flush, where a
    // synchronous pipeline changes them too. The communication of round t still overlaps round
    // t + 1's pass; a pass shorter than the round waits for it (exposed communication). ACCO's
    // step is two passes (its estimate and correction rounds, Algorithm 1 with N~ = N).
    pipeline_ = w.scenario().parallelism.pipeline > 1;
    if (pipeline_) {
      const bool min_other = accumulation.min > 0 && accumulation.min != accum;
      const bool max_other = accumulation.max != kDefaultCap && accumulation.max != accum;
      if (min_other || max_other)
        throw std::invalid_argument(fmt::format(
            "{}_micro_batches: {} on a pipeline (parallelism.pipeline: {}): every stage runs "
            "one pass of the schedule a round, training.grad_accum = {} micro-batches; leave "
            "the option out or set it to {}",
            min_other ? "min" : "max", min_other ? accumulation.min : accumulation.max,
            w.scenario().parallelism.pipeline, accum, accum));
      min_micro_batches_ = max_micro_batches_ = accum;
    }
    const auto layout = param_layout(w.scenario().model.spec);
    const int n = w.topology().world_size();
    const int me = w.topology().world().index_of(w.rank());
    const double element_bytes = scenario::dtype_bytes(w.scenario().model.dtype);
    state_ = declare_model_state(w, shard(0, layout.total(), me, n).count);
    // The buffer the compute stream hands to the communication stream (Buffer_i of Algorithm 1):
    // gradients going out, parameters coming back.
    handoff_ =
        w.declare({"handoff_buffer", MemoryCategory::buffers, layout.total(), element_bytes});
    own_ = shard(state_.params, layout.total(), me, n);
    // This rank's shard of the summed gradients; ACCO keeps the estimate round's sum in it for the
    // correction round (Algorithm 1, line 35).
    reduced_ =
        w.declare({"reduced_grads_shard", MemoryCategory::buffers, own_.count, element_bytes});
    // Micro-batch counts: [0] the estimate round's (or the only round's), [1] the correction's.
    counts_ = w.declare({"micro_batch_counts", MemoryCategory::buffers, 2, 8});
  }

  int rounds_per_step() const { return variant_ == Variant::acco ? 2 : 1; }

  // Compute stream. Round r computes on the parameters the communication stream produced in round
  // r - 2 (it finished round r - 1's input while round r - 1 was being computed): for ACCO, odd
  // rounds run on theta(t) and even rounds on the estimate theta~(t+1) (Algorithm 1, lines 8 and
  // 15); round 0 runs on theta(0) and provides the initial gradients (g~(0), or g(-1) for DPU).
  void run_compute() override {
    const auto& t = w_.scenario().training;
    const int layers = static_cast<int>(w_.scenario().model.spec.layers.size());
    const int total_steps = t.warmup_steps + t.steps;
    const int rounds = total_steps * rounds_per_step();
    const std::int64_t total = state_.layout.total();
    const Slice params{state_.params, 0, total}, grads{state_.grads, 0, total};
    const Slice handoff{handoff_, 0, total};
    w_.notify(kRoundDone); // no round runs before the first hand-off
    bool handoff_has_params = false;
    int step_accumulated = 0; // ACCO: both rounds of an optimizer step (issue 27.5)
    for (int r = 0; r < rounds; ++r) {
      const Round round{r / rounds_per_step(), rounds_per_step() == 2 ? 1 + r % 2 : 0, 0};
      int accumulated = 0;
      // Accumulate until the running round has finished, and at least the minimum number of
      // micro-batches (Algorithm 1, lines 6-9 and 13-16; N_i >= 1 in eq. DPU).
      // With a cap (max_micro_batches), a compute stream that reached it waits for the round
      // instead: min = max makes the accumulation, and so the real math, independent of timing.
      bool round_done = false;
      while (!round_done || accumulated < min_micro_batches_) {
        if (!round_done && max_micro_batches_ > 0 && accumulated >= max_micro_batches_) {
          w_.await(kRoundDone);
          round_done = true;
          continue;
        }
        const MicroBatch mb{round.step, accumulated};
        w_.forward({0, layers}, mb, state_.params);
        w_.backward({0, layers}, mb, state_.params, state_.grads);
        ++accumulated;
        if (!round_done)
          round_done = w_.poll(kRoundDone).has_value();
      }
      // The exchange through Buffer_i (Algorithm 1, lines 10-11 and 18-19): take the parameters
      // the finished round produced, leave this round's gradients.
      if (handoff_has_params)
        w_.copy(handoff, params);
      w_.copy(grads, handoff);
      handoff_has_params = true;
      // Recorded per optimizer step, as micro_batches_per_step reads: ACCO's step holds the
      // estimate round's micro-batches and the correction's (stage 1 and 2).
      step_accumulated += accumulated;
      if (round.stage != 1) {
        w_.record_accumulation(round.step, step_accumulated);
        step_accumulated = 0;
      }
      w_.notify(kHandOff, encode(Round{round.step, round.stage, accumulated}));
      if (r < warmup_rounds_) { // non-delayed warm-up: wait for this very round's parameters
        w_.await(kRoundDone);
        w_.notify(kRoundDone);
        w_.copy(handoff, params);
        handoff_has_params = false;
      }
    }
    // Training goes on past the last measured step: keep computing (micro-batches no step
    // counts) until the last round ends, so the measured window has no artificial drain. On a
    // pipeline, one pass (what overlaps a round in the steady state), then the round: every
    // stage runs as many passes.
    if (pipeline_) {
      for (int i = 0; i < max_micro_batches_; ++i) {
        const MicroBatch mb{total_steps, i};
        w_.forward({0, layers}, mb, state_.params);
        w_.backward({0, layers}, mb, state_.params, state_.grads);
      }
      w_.await(kRoundDone);
      return;
    }
    for (int i = 0; !w_.poll(kRoundDone).has_value(); ++i) {
      const MicroBatch mb{total_steps, i};
      w_.forward({0, layers}, mb, state_.params);
      w_.backward({0, layers}, mb, state_.params, state_.grads);
    }
  }

  void run_comm() override {
    const auto& t = w_.scenario().training;
    const Group& world = w_.topology().world();
    const std::int64_t total = state_.layout.total();
    const int rounds = (t.warmup_steps + t.steps) * rounds_per_step();
    const Slice handoff{handoff_, 0, total};
    const Slice handoff_own{handoff_, own_.offset, own_.count};
    const Slice reduced{reduced_, 0, own_.count};
    const Slice state{state_.optimizer_state, 0, own_.count};
    int step_micro_batches = 0; // ACCO: N~ of the estimate round plus N of the correction
    for (int r = 0; r < rounds; ++r) {
      const Round round = decode(w_.await(kHandOff));
      const bool correction = round.stage == 2;
      const std::string label =
          round.stage == 0 ? std::string() : fmt::format(" (stage {})", round.stage);
      auto collective = [&](CollectiveOp op, Slice data, Slice out, const std::string& what) {
        CollectiveCall call;
        call.op = op;
        call.group = &world;
        call.data = data;
        call.out = out;
        call.name = what + label;
        call.step = round.step;
        w_.run(call);
      };
      // Sum of the micro-batch counts, to weight the gradients (Algorithm 1, lines 25 and 34).
      const Slice count{counts_, correction ? 1 : 0, 1};
      w_.fill(count, round.micro_batches);
      collective(CollectiveOp::all_reduce, count, {}, "all-reduce counts");
      // The correction reduces g + sum(g~): this rank adds the kept sum of g~ to its own shard
      // only, so the reduce-scatter leaves sum(g) + sum(g~) in it (line 35).
      if (correction)
        w_.accumulate(reduced, handoff_own);
      collective(CollectiveOp::reduce_scatter, handoff, reduced, "reduce-scatter grads");
      // ACCO: the estimate round computes theta~(t+1) without committing it (line 27), the
      // correction commits theta(t+1) (line 36). DPU commits every round; ACCO-WP commits
      // theta(t+1) and then estimates theta~(t+2) = Opt(theta(t+1), same gradients).
      OptimizerStep step{.params = own_,
                         .grads = reduced,
                         .state = state,
                         .grad_scale = 1.0 / world.size(),
                         .step = round.step,
                         .out = handoff_own,
                         .commit = variant_ != Variant::acco || correction,
                         .divisor = correction ? Slice{counts_, 0, 2} : count};
      w_.optimizer_step(step);
      if (variant_ == Variant::acco_wp) {
        step.commit = false;
        w_.optimizer_step(step);
      }
      collective(CollectiveOp::all_gather, handoff_own, handoff, "all-gather params");
      step_micro_batches += round.micro_batches;
      if (round.stage != 1) { // an optimizer step is complete
        w_.step_done(round.step,
                     static_cast<double>(step_micro_batches) * w_.scenario().training.micro_batch);
        step_micro_batches = 0;
      }
      w_.notify(kRoundDone);
    }
  }

private:
  Worker& w_;
  Variant variant_;
  int warmup_rounds_;
  int max_micro_batches_ = 0; // 0: no cap
  int min_micro_batches_ = 1;
  bool pipeline_ = false; // parallelism.pipeline > 1: a round is one pass of the schedule
  ModelState state_;
  BufferId handoff_ = -1;
  BufferId reduced_ = -1;
  BufferId counts_ = -1;
  Slice own_;
};

class DelayedUpdate final : public Algorithm {
public:
  bool node_symmetric() const override { return true; }
  DelayedUpdate(std::string name, Variant variant, int warmup, Accumulation accumulation)
      : name_(std::move(name)), variant_(variant), warmup_(warmup), accumulation_(accumulation) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    return std::make_unique<DelayedUpdateProgram>(w, variant_, warmup_, accumulation_);
  }

private:
  std::string name_;
  Variant variant_;
  int warmup_;
  Accumulation accumulation_;
};

} // namespace

namespace {
Accumulation accumulation(const AlgorithmOptions& opts) {
  Accumulation a;
  a.min = static_cast<int>(opts.integer("min_micro_batches", 0, 1, 1 << 20));
  // 0: no cap. Any other cap may not be below an explicit minimum (the option's error names
  // max_micro_batches).
  a.max = static_cast<int>(opts.integer("max_micro_batches", kDefaultCap, 0, 1 << 20));
  if (a.max > 0)
    a.max = static_cast<int>(opts.integer("max_micro_batches", 0, std::max(1, a.min), 1 << 20));
  return a;
}
} // namespace

std::unique_ptr<Algorithm> make_dpu(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, dpu_descriptor());
  return std::make_unique<DelayedUpdate>(
      spec.name, Variant::dpu, static_cast<int>(opts.integer("warmup_steps")), accumulation(opts));
}

std::unique_ptr<Algorithm> make_acco_wp(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, acco_wp_descriptor());
  return std::make_unique<DelayedUpdate>(spec.name, Variant::acco_wp, 0, accumulation(opts));
}

std::unique_ptr<Algorithm> make_acco(const scenario::AlgorithmSpec& spec) {
  const AlgorithmOptions opts(spec, acco_descriptor());
  return std::make_unique<DelayedUpdate>(spec.name, Variant::acco, 0, accumulation(opts));
}

namespace {
std::vector<OptionSchema> accumulation_options() {
  return {
      {"min_micro_batches",
       OptionType::integer,
       "",
       1,
       1048576,
       {},
       "micro-batches a round accumulates at least (default: as many as fit in the "
       "communication)"},
      {"max_micro_batches",
       OptionType::integer,
       "",
       0,
       1048576,
       {},
       "micro-batches a round accumulates at most (default: 4x DDP's micro-batches per optimizer "
       "step, training.grad_accum, split over the step's rounds: 4 x grad_accum for dpu and "
       "acco-wp, 2 x grad_accum for each of acco's two; at least min_micro_batches; 0: no cap, "
       "the paper's behaviour)"}};
}
} // namespace

const AlgorithmDescriptor& dpu_descriptor() {
  static const AlgorithmDescriptor d = [] {
    AlgorithmDescriptor u{"dpu",
                          "Delayed Parameter Updates: the step applies the previous round's "
                          "gradients while the next round computes",
                          "ZeRO-Offload's DPU as the ACCO paper re-purposes it, Eq. (DPU)",
                          UpdateKind::delayed,
                          true,
                          "#DA8BC3",
                          {{"warmup_steps",
                            OptionType::integer,
                            "0",
                            0,
                            1048576,
                            {},
                            "steps run synchronously before the delay starts"}},
                          make_dpu};
    const auto acc = accumulation_options();
    u.options.insert(u.options.end(), acc.begin(), acc.end());
    return u;
  }();
  return d;
}

const AlgorithmDescriptor& acco_wp_descriptor() {
  static const AlgorithmDescriptor d{
      "acco-wp",
      "ACCO without its prediction step: DPU's delay with ZeRO-1's sharded optimizer",
      "ACCO paper, Sec. 3 (ACCO without its estimate), Sec. 5.2",
      UpdateKind::delayed,
      true,
      "#CCB974",
      accumulation_options(),
      make_acco_wp};
  return d;
}

const AlgorithmDescriptor& acco_descriptor() {
  static const AlgorithmDescriptor d{
      "acco",
      "ACCO: an estimated update hides the sharded optimizer's communication, then the committed "
      "one",
      "ACCO: Accumulate While You Communicate, Algorithm 1",
      UpdateKind::delayed,
      true,
      "#C44E52",
      accumulation_options(),
      make_acco};
  return d;
}

} // namespace overlapsim
