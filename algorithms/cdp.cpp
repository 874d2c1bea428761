#include "algorithms/cdp.h"

#include "algorithms/cdp_mp.h"
#include "algorithms/cdp_zero.h"
#include "algorithms/model_state.h"
#include "algorithms/options.h"
#include "scenario/loader.h"

#include <algorithm>
#include <deque>
#include <fmt/format.h>
#include <stdexcept>
#include <utility>

namespace overlapsim {

std::vector<LayerRange> split_stages(const hw::ModelSpec& model, int stages) {
  const int layers = static_cast<int>(model.layers.size());
  if (stages < 1 || layers < stages)
    throw std::invalid_argument(fmt::format(
        "cannot cut a model of {} layers into {} stages of equal compute: CDP gives each GPU of "
        "its ring one stage; use a model with at least {} layers, or at most {} GPUs",
        layers, stages, stages, layers));
  std::vector<double> cost;
  double total = 0;
  for (const auto& l : model.layers) {
    cost.push_back(l.fwd_flops_per_sample + l.bwd_flops_per_sample);
    total += cost.back();
  }
  // Greedy: close stage k once it reaches k/N of the total, leaving a layer for every later stage.
  std::vector<LayerRange> out;
  int first = 0;
  double done = 0;
  for (int k = 0; k < stages; ++k) {
    int last = first + 1;
    done += cost[static_cast<std::size_t>(first)];
    const double target = total * (k + 1) / stages;
    while (last < layers - (stages - k - 1) &&
           done + cost[static_cast<std::size_t>(last)] / 2 <= target) {
      done += cost[static_cast<std::size_t>(last)];
      ++last;
    }
    if (k == stages - 1)
      last = layers;
    out.push_back({first, last});
    first = last;
  }
  return out;
}

namespace {

enum class Rule { v1, v2 };
enum class Setting { multi_gpu, single_gpu, zero, model_parallel };

enum Signal : int { kParams = 0, kReduced = 1 };
enum Tag : int { kPartial = 0, kComplete = 1 };

std::int64_t encode(int step, int stage) {
  return (static_cast<std::int64_t>(step) << 20) | stage;
}
int step_of(std::int64_t v) {
  return static_cast<int>(v >> 20);
}
int stage_of(std::int64_t v) {
  return static_cast<int>(v & 0xfffff);
}

struct Options {
  Rule rule;
  Setting setting;
  bool cyclic;
};

class CdpProgram final : public WorkerProgram {
public:
  CdpProgram(Worker& w, Options o) : w_(w), o_(o) {
    const auto& s = w.scenario();
    n_ = o.setting == Setting::multi_gpu ? w.topology().world_size() : s.training.grad_accum;
    stages_ = split_stages(s.model.spec, n_);
    state_ = declare_model_state(w, param_layout(s.model.spec).total());
    const double p = scenario::dtype_bytes(s.model.dtype);
    const std::int64_t total = state_.layout.total();
    // Two versions of the parameters: a stage's forward may need the version before the newest
    // (CDP-v1 always, CDP-v2 for the stages j < N - 1 - i), and the update that makes the newest
    // writes the other buffer, never the one a forward or backward in flight is reading. CDP-v1
    // counts it as parameters (the paper's second copy); for CDP-v2 it is a working buffer.
    if (o.cyclic && o.setting == Setting::multi_gpu) {
      versions_[0] = state_.params;
      versions_[1] = w.declare(
          {o.rule == Rule::v1 ? "previous_params" : "params_next_version",
           o.rule == Rule::v1 ? MemoryCategory::params : MemoryCategory::buffers, total, p});
    } else if (o.rule == Rule::v1 && o.cyclic) {
      w.declare({"previous_params", MemoryCategory::params, total, p});
    }
    if (o.setting == Setting::multi_gpu && o.cyclic) {
      // The gradient sums travelling the ring, by step modulo 3: a step's sends are retired after
      // the next step (on the stream that sent them), and the other stream may run a step ahead,
      // so a buffer is rewritten only three steps later. Lap one (partial sums) and lap two
      // (complete sums; lap one's receives too, consumed before the step's complete sum exists).
      for (int k = 0; k < kRingBuffers; ++k) {
        partial_[k] =
            w.declare({fmt::format("ring_partial_sums_{}", k), MemoryCategory::buffers, total, p});
        complete_[k] =
            w.declare({fmt::format("ring_complete_sums_{}", k), MemoryCategory::buffers, total, p});
      }
      token_ = w.declare({"start_token", MemoryCategory::buffers, 1, p});
    }
    version_.assign(static_cast<std::size_t>(n_), -1);
    const int world = w.topology().world_size();
    const int me = w.rank();
    if (o.setting == Setting::multi_gpu && world > 1) {
      prev_ = (me + world - 1) % world;
      next_ = (me + 1) % world;
      to_prev_ = &w.topology().group({std::min(prev_, me), std::max(prev_, me)});
      to_next_ = &w.topology().group({std::min(next_, me), std::max(next_, me)});
    }
  }

  void run_compute() override {
    if (o_.setting == Setting::single_gpu)
      o_.cyclic ? single_gpu_cyclic() : single_gpu_simultaneous();
    else
      o_.cyclic ? multi_gpu_cyclic() : multi_gpu_simultaneous();
  }

  void run_comm() override {
    if (o_.setting != Setting::multi_gpu || !o_.cyclic || w_.topology().world_size() == 1)
      return;
    // The second lap: the complete gradient of each stage comes round the ring, every worker
    // updates the stage with it and passes it on (the last worker started it).
    const int world = w_.topology().world_size();
    const bool last = w_.rank() == world - 1;
    std::vector<CommHandle> sends, previous;
    for (int step = 0; step < total_steps(); ++step) {
      for (int k = 0; k < n_; ++k) {
        int stage = n_ - 1 - k;
        // The complete sum: the last worker made it in its lap-one buffer, the others receive it.
        Slice sum;
        if (last)
          stage = stage_of(w_.await(kReduced));
        const auto [from, to] = lap_two_route(stage);
        if (last) {
          sum = stage_slice(partial_[step % kRingBuffers], stage);
        } else {
          sum = stage_slice(complete_[step % kRingBuffers], stage);
          w_.run(p2p(CollectiveOp::recv, stage, kComplete, step, from, pair(from), sum));
        }
        // Passed on before the local update: the next worker's copy does not depend on it.
        if (to >= 0)
          sends.push_back(
              w_.start(p2p(CollectiveOp::send, stage, kComplete, step, to, pair(to), sum)));
        update(stage, step, sum);
        w_.notify(kParams, encode(step, stage));
      }
      retire(sends, previous);
    }
    for (auto* list : {&previous, &sends})
      for (auto& h : *list)
        w_.wait(h);
  }

private:
  // Lap two's route for `stage`: (the worker this one receives the complete sum from, the one it
  // passes it to), -1 where none. The last worker starts every route. Under CDP-v2 it sends
  // straight to the worker whose next forward of the stage has no slack, i = N-1-j (that forward
  // starts as the last backward of the stage ends), which relays it on in ring order: workers
  // i > N-1-j have 2 (i - (N-1-j)) time steps of slack, one per hop for each two, and the others
  // use the older version. Around the ring from worker 0 instead, the boundary worker of stage
  // j = 1 would wait for N-1 hops. CDP-v1 needs no version before the next step: ring order.
  std::pair<int, int> lap_two_route(int stage) const {
    const int world = w_.topology().world_size();
    const int last = world - 1, me = w_.rank();
    const int others = world - 1; // workers 0..N-2, in a cycle
    const int start = o_.rule == Rule::v2 ? (world - 1 - stage) % others : 0;
    auto chain = [&](int k) { return k == 0 ? last : (start + k - 1) % others; };
    int position = 0;
    while (chain(position) != me)
      ++position;
    return {position == 0 ? -1 : chain(position - 1),
            position + 1 < world ? chain(position + 1) : -1};
  }

  const Group& pair(int peer) const {
    return w_.topology().group({std::min(peer, w_.rank()), std::max(peer, w_.rank())});
  }

  int total_steps() const {
    return w_.scenario().training.warmup_steps + w_.scenario().training.steps;
  }

  Slice stage_grads(int stage) const {
    return state_.layout.layers(state_.grads, stages_[static_cast<std::size_t>(stage)]);
  }

  Slice stage_slice(BufferId buffer, int stage) const {
    return state_.layout.layers(buffer, stages_[static_cast<std::size_t>(stage)]);
  }

  // The buffer holding parameter version v (the update of step v applied; -1: the initial ones).
  BufferId version_buffer(int v) const {
    return versions_[static_cast<std::size_t>((std::max(v, -1) + 1) % 2)];
  }

  CollectiveCall p2p(CollectiveOp op, int stage, int tag, int step, int peer, const Group& g,
                     Slice data) const {
    CollectiveCall c;
    c.op = op;
    c.group = &g;
    c.data = data;
    c.peer = peer;
    c.tag = tag;
    c.step = step;
    c.name = fmt::format("{} {} stage {}", op == CollectiveOp::send ? "send" : "recv",
                         tag == kPartial ? "partial grad" : "summed grad", stage);
    return c;
  }

  // Updates `stage` from the summed gradients `sum` of its N micro-batches (their mean). In the
  // multi-GPU cycle the result is parameter version `step`, written to its own buffer.
  void update(int stage, int step, Slice sum) {
    const Slice g = stage_grads(stage);
    OptimizerStep op{Slice{state_.params, g.offset, g.count}, sum,
                     Slice{state_.optimizer_state, g.offset, g.count}, 1.0 / n_, step};
    if (versions_[1] >= 0)
      op.out = stage_slice(version_buffer(step), stage);
    w_.optimizer_step(op);
  }

  // The parameters micro-batch `mb` uses for `stage` at `step` (see await_params).
  BufferId params_for(int step, int stage, int mb) const {
    if (versions_[1] < 0)
      return state_.params;
    const bool fresh = o_.rule == Rule::v2 && stage >= n_ - 1 - mb;
    return version_buffer(step - (fresh ? 1 : 2));
  }

  // Blocks until this worker holds the version of `stage` that micro-batch `mb` must use at `step`.
  void await_params(int step, int stage, int mb) {
    // CDP-v2: fresh (updated by step - 1) for stages j >= N - 1 - i (0-based), else one step older.
    // CDP-v1: one step older for every stage.
    const bool fresh = o_.rule == Rule::v2 && stage >= n_ - 1 - mb;
    const int needed = step - (fresh ? 1 : 2);
    while (version_[static_cast<std::size_t>(stage)] < needed) {
      const auto v = w_.await(kParams);
      version_[static_cast<std::size_t>(stage_of(v))] =
          std::max(version_[static_cast<std::size_t>(stage_of(v))], step_of(v));
    }
  }

  void multi_gpu_cyclic() {
    const int world = w_.topology().world_size();
    const int me = w_.rank();
    const double samples = w_.scenario().training.micro_batch;
    // Worker i starts two time steps after worker i-1: the predecessor's token arrives once it has
    // run the forward of its first two stages.
    const Group* self_chain = world > 1 ? to_prev_ : nullptr;
    const Slice token_slice{token_, 0, 1};
    if (me > 0) {
      CollectiveCall token{CollectiveOp::recv, self_chain, token_slice, {}, prev_, 2,
                           "start token",      0};
      w_.run(token);
    }
    std::deque<std::pair<int, CommHandle>> partials; // lap-one receives not yet passed on
    std::vector<CommHandle> sends, previous;
    for (int step = 0; step < total_steps(); ++step) {
      for (int j = 0; j < n_; ++j) {
        await_params(step, j, me);
        w_.forward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0},
                   params_for(step, j, me));
        if (step == 0 && j == std::min(1, n_ - 1) && me + 1 < world) {
          CollectiveCall token{CollectiveOp::send, to_next_, token_slice, {}, next_, 2,
                               "start token",      0};
          sends.push_back(w_.start(token));
        }
      }
      for (int j = n_ - 1; j >= 0; --j) {
        CommHandle partial;
        if (me > 0 && world > 1)
          partial = w_.start(p2p(CollectiveOp::recv, j, kPartial, step, prev_, *to_prev_,
                                 stage_slice(complete_[step % kRingBuffers], j)));
        w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0},
                    params_for(step, j, me), state_.grads);
        partials.emplace_back(j, partial);
        pass_on(partials, sends, step, false);
      }
      pass_on(partials, sends, step, true);
      w_.step_done(step, samples);
      retire(sends, previous);
    }
    for (auto* list : {&previous, &sends})
      for (auto& h : *list)
        w_.wait(h);
  }

  // Sends are matched when the receiver gets to them, up to a step later in a staggered cycle:
  // waiting at once would stall this stream, so the sends of a step are waited for after the
  // next one (the buffers live two steps).
  void retire(std::vector<CommHandle>& sends, std::vector<CommHandle>& previous) {
    for (auto& h : previous)
      w_.wait(h);
    previous = std::exchange(sends, {});
  }

  // Lap one: once a stage's partial sum from the previous worker has arrived (and this worker's own
  // backward of it is done), send the new partial sum on; the last worker hands the complete sum to
  // its communication stream instead (CDP-v1: only after the N-th micro-batch's whole backward).
  void pass_on(std::deque<std::pair<int, CommHandle>>& partials, std::vector<CommHandle>& sends,
               int step, bool end_of_step) {
    const int world = w_.topology().world_size();
    const bool last = w_.rank() == world - 1;
    while (!partials.empty()) {
      auto& [stage, handle] = partials.front();
      if (!end_of_step && !w_.test(handle))
        return;
      w_.wait(handle);
      // This worker's partial sum: its own gradient plus what the previous worker sent (received
      // into this step's lap-two buffer, free until the step's complete sums arrive).
      const Slice sum = stage_slice(partial_[step % kRingBuffers], stage);
      w_.copy(stage_grads(stage), sum);
      if (w_.rank() > 0 && world > 1)
        w_.accumulate(stage_slice(complete_[step % kRingBuffers], stage), sum);
      if (world == 1 || (last && o_.rule == Rule::v2)) {
        if (world == 1)
          update(stage, step, sum), w_.notify(kParams, encode(step, stage));
        else
          w_.notify(kReduced, stage);
      } else if (last) {
        reduced_after_barrier_.push_back(stage);
      } else {
        sends.push_back(
            w_.start(p2p(CollectiveOp::send, stage, kPartial, step, next_, *to_next_, sum)));
      }
      partials.pop_front();
    }
    if (end_of_step) // CDP-v1's barrier: every stage is released together
      for (int stage : std::exchange(reduced_after_barrier_, {}))
        w_.notify(kReduced, stage);
  }

  void multi_gpu_simultaneous() {
    const double samples = w_.scenario().training.micro_batch;
    const Group& world = w_.topology().world();
    for (int step = 0; step < total_steps(); ++step) {
      for (int j = 0; j < n_; ++j)
        w_.forward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0}, state_.params);
      for (int j = n_ - 1; j >= 0; --j)
        w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, 0}, state_.params,
                    state_.grads);
      all_reduce_and_update(world, step);
      w_.step_done(step, samples);
    }
  }

  void all_reduce_and_update(const Group& world, int step) {
    const std::int64_t total = state_.layout.total();
    CollectiveCall c;
    c.op = CollectiveOp::all_reduce;
    c.group = &world;
    c.data = Slice{state_.grads, 0, total};
    c.name = "all-reduce grads";
    c.step = step;
    w_.run(c);
    w_.optimizer_step(OptimizerStep{Slice{state_.params, 0, total}, Slice{state_.grads, 0, total},
                                    Slice{state_.optimizer_state, 0, total}, 1.0 / n_, step});
  }

  // One device, N micro-batches: micro-batch i runs its op p (forwards 0..N-1, then backwards
  // N-1..0) at time step 2N s + 2i + p; each time step runs the ops due, in micro-batch order.
  // Training goes on past the last measured step (its micro-batches count in no step) until that
  // step ends, so the cycle stays full to the end of the measurement.
  void single_gpu_cyclic() {
    const double samples = w_.scenario().training.micro_batch;
    const Group& world = w_.topology().world();
    const int steps = total_steps();
    const int period = 2 * n_;
    bool done = false;
    for (int k = 0; !done; ++k) {
      for (int i = 0; i < n_ && !done; ++i) {
        const int t = k - 2 * i;
        if (t < 0 || t / period > steps)
          continue;
        const int step = t / period, p = t % period;
        const MicroBatch mb{step, i};
        if (p < n_) {
          w_.forward(stages_[static_cast<std::size_t>(p)], mb, state_.params);
          continue;
        }
        const int stage = period - 1 - p;
        w_.backward(stages_[static_cast<std::size_t>(stage)], mb, state_.params, state_.grads);
        if (i + 1 < n_)
          continue;
        // The N-th micro-batch completed this stage's gradient: CDP-v2 updates it at once,
        // CDP-v1 all stages after its last backward.
        if (o_.rule == Rule::v2 && w_.topology().world_size() == 1)
          update(stage, step, stage_grads(stage));
        if (stage == 0) {
          if (w_.topology().world_size() > 1)
            all_reduce_and_update(world, step);
          else if (o_.rule == Rule::v1)
            for (int j = 0; j < n_; ++j)
              update(j, step, stage_grads(j));
          w_.step_done(step, samples * n_);
          done = step + 1 == steps;
        }
      }
    }
  }

  // The DP counterpart on one device: the N micro-batches through every stage together, so the
  // activations of all of them are held at the end of the forward pass.
  void single_gpu_simultaneous() {
    const double samples = w_.scenario().training.micro_batch;
    const Group& world = w_.topology().world();
    for (int step = 0; step < total_steps(); ++step) {
      for (int j = 0; j < n_; ++j)
        for (int i = 0; i < n_; ++i)
          w_.forward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, i}, state_.params);
      for (int j = n_ - 1; j >= 0; --j)
        for (int i = 0; i < n_; ++i)
          w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{step, i}, state_.params,
                      state_.grads);
      if (w_.topology().world_size() > 1) {
        all_reduce_and_update(world, step);
      } else {
        const std::int64_t total = state_.layout.total();
        w_.optimizer_step(OptimizerStep{Slice{state_.params, 0, total},
                                        Slice{state_.grads, 0, total},
                                        Slice{state_.optimizer_state, 0, total}, 1.0 / n_, step});
      }
      w_.step_done(step, samples * n_);
    }
  }

  Worker& w_;
  Options o_;
  int n_ = 1;
  std::vector<LayerRange> stages_;
  ModelState state_;
  BufferId versions_[2] = {-1, -1}; // multi-GPU cycle: parameter versions by parity
  static constexpr int kRingBuffers = 3;
  BufferId partial_[kRingBuffers] = {-1, -1, -1};  // lap one, by step modulo 3
  BufferId complete_[kRingBuffers] = {-1, -1, -1}; // lap two (and lap one's receives)
  BufferId token_ = -1;
  std::vector<int> version_; // per stage: the last step whose update this worker applied
  int prev_ = -1, next_ = -1;
  const Group* to_prev_ = nullptr;
  const Group* to_next_ = nullptr;
  std::vector<int> reduced_after_barrier_;
};

class Cdp final : public Algorithm {
public:
  Cdp(std::string name, Options o) : name_(std::move(name)), o_(o) {}
  std::string name() const override { return name_; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    if (o_.setting == Setting::zero)
      return make_cdp_zero_program(w, o_.cyclic);
    if (o_.setting == Setting::model_parallel)
      return make_cdp_mp_program(w, o_.cyclic);
    return std::make_unique<CdpProgram>(w, o_);
  }

private:
  std::string name_;
  Options o_;
};

std::unique_ptr<Algorithm> make_cdp(const scenario::AlgorithmSpec& spec, Rule rule) {
  const AlgorithmOptions opts(spec, {"setting", "schedule"});
  const auto setting =
      opts.text("setting", "multi-gpu", {"multi-gpu", "single-gpu", "zero", "model-parallel"});
  const auto schedule = opts.text("schedule", "cyclic", {"cyclic", "simultaneous"});
  if ((setting == "zero" || setting == "model-parallel") && rule == Rule::v1 &&
      schedule == "cyclic")
    throw scenario::ScenarioError(fmt::format(
        "{}: key 'algorithms.{}.setting': the {} setting keeps one version of each stage's "
        "parameters, which is CDP-v2's rule; use cdp-v2",
        spec.options.at("setting").where, spec.name, setting));
  const Setting chosen = setting == "multi-gpu"    ? Setting::multi_gpu
                         : setting == "single-gpu" ? Setting::single_gpu
                         : setting == "zero"       ? Setting::zero
                                                   : Setting::model_parallel;
  return std::make_unique<Cdp>(spec.name, Options{rule, chosen, schedule == "cyclic"});
}

} // namespace

std::unique_ptr<Algorithm> make_cdp_v1(const scenario::AlgorithmSpec& spec) {
  return make_cdp(spec, Rule::v1);
}
std::unique_ptr<Algorithm> make_cdp_v2(const scenario::AlgorithmSpec& spec) {
  return make_cdp(spec, Rule::v2);
}

} // namespace overlapsim
