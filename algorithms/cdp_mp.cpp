#include "algorithms/cdp_mp.h"

#include "algorithms/cdp.h"
#include "algorithms/model_state.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim {

namespace {

enum Signal : int { kStepGrads = 0, kParams = 1 };
enum Tag : int { kActivations = 10, kActivationGrads = 11, kPartialGrads = 12, kFreshParams = 13 };

class CdpMpProgram final : public WorkerProgram {
public:
  CdpMpProgram(Worker& w, bool cyclic) : w_(w), cyclic_(cyclic) {
    const int world = w.topology().world_size();
    // The pyramid has N(N+1)/2 GPUs, DP + MP N^2.
    for (n_ = 1; (cyclic ? n_ * (n_ + 1) / 2 : n_ * n_) < world; ++n_) {
    }
    if ((cyclic ? n_ * (n_ + 1) / 2 : n_ * n_) != world)
      throw std::invalid_argument(fmt::format(
          "the model-parallel setting needs {} GPUs for some N (N stages); the cluster has {}",
          cyclic ? "N(N+1)/2" : "N^2", world));
    if (cyclic) {
      // The pyramid, by stage: stage j holds ranks [first(j), first(j) + N - j).
      int r = w.rank();
      for (stage_ = 0; r >= replicas(stage_); ++stage_)
        r -= replicas(stage_);
      replica_ = r;
    } else {
      // DP + MP: micro-batch i's pipeline is ranks [iN, iN + N), stage j at iN + j.
      stage_ = w.rank() % n_;
      replica_ = w.rank() / n_;
    }
    const auto& s = w.scenario();
    stages_ = split_stages(s.model.spec, n_);
    const ParamLayout layout = param_layout(s.model.spec);
    const Slice mine = layout.layers(0, stages_[static_cast<std::size_t>(stage_)]);
    count_ = mine.count;
    const double p = scenario::dtype_bytes(s.model.dtype);
    params_ = w.declare({"stage_params", MemoryCategory::params, count_, p});
    grads_ = w.declare({"stage_grads", MemoryCategory::grads, count_, p});
    state_ = w.declare({"stage_optimizer_state", MemoryCategory::optimizer_state, count_,
                        optimizer_state_bytes_per_param(s.training.optimizer, s.model.dtype)});
    const auto& layers = s.model.spec.layers;
    auto boundary = [&](int stage) { // bytes a micro-batch sends from `stage` to the next one
      const int last = stages_[static_cast<std::size_t>(stage)].last - 1;
      return static_cast<std::int64_t>(
          layers[static_cast<std::size_t>(last)].output_bytes_per_sample * s.training.micro_batch);
    };
    in_bytes_ = stage_ > 0 ? boundary(stage_ - 1) : 0;
    out_bytes_ = stage_ + 1 < n_ ? boundary(stage_) : 0;
    io_ = w.declare({"stage_io", MemoryCategory::buffers, std::max(in_bytes_, out_bytes_), 1});
  }

  void run_compute() override {
    const auto& t = w_.scenario().training;
    for (int s = 0; s < t.warmup_steps + t.steps; ++s) {
      double samples = 0;
      for (int i = 0; i < n_; ++i) {
        const int m = s * n_ + i; // micro-batches counted across steps
        if (cyclic_ ? m % replicas(stage_) != replica_ : i != replica_)
          continue;
        if (cyclic_)
          await_params(s, i);
        const MicroBatch mb{s, i};
        if (stage_ > 0)
          w_.run(p2p(CollectiveOp::recv, neighbour(stage_ - 1, m), kActivations, in_bytes_, s));
        w_.forward(stages_[static_cast<std::size_t>(stage_)], mb, params_);
        if (stage_ + 1 < n_) {
          sends_.push_back(w_.start(
              p2p(CollectiveOp::send, neighbour(stage_ + 1, m), kActivations, out_bytes_, s)));
          w_.run(
              p2p(CollectiveOp::recv, neighbour(stage_ + 1, m), kActivationGrads, out_bytes_, s));
        }
        w_.backward(stages_[static_cast<std::size_t>(stage_)], mb, params_, grads_);
        if (stage_ > 0)
          sends_.push_back(w_.start(
              p2p(CollectiveOp::send, neighbour(stage_ - 1, m), kActivationGrads, in_bytes_, s)));
        if (stage_ == 0)
          samples += t.micro_batch;
      }
      if (cyclic_) {
        w_.notify(kStepGrads, s);
      } else {
        // DP + MP: the stage's N replicas all-reduce their gradients at the end of the step.
        std::vector<int> ranks;
        for (int k = 0; k < n_; ++k)
          ranks.push_back(k * n_ + stage_);
        CollectiveCall c;
        c.op = CollectiveOp::all_reduce;
        c.group = &w_.topology().group(ranks);
        c.data = Slice{grads_, 0, count_};
        c.name = fmt::format("all-reduce stage {} grads", stage_);
        c.step = s;
        w_.run(c);
        update(s);
      }
      w_.step_done(s, samples);
    }
    for (auto& h : sends_)
      w_.wait(h);
  }

  void run_comm() override {
    if (!cyclic_)
      return;
    const auto& t = w_.scenario().training;
    const int g = replicas(stage_);
    for (int s = 0; s < t.warmup_steps + t.steps; ++s) {
      w_.await(kStepGrads);
      // The replica that ran the step's last micro-batch gathers the partial gradients, updates
      // the stage and sends the fresh parameters to the other replicas.
      const int owner = (s * n_ + n_ - 1) % g;
      if (replica_ == owner) {
        for (int r = 0; r < g; ++r)
          if (r != owner)
            w_.run(p2p(CollectiveOp::recv, first(stage_) + r, kPartialGrads, count_bytes(), s));
        update(s);
        std::vector<CommHandle> fresh;
        for (int r = 0; r < g; ++r)
          if (r != owner)
            fresh.push_back(w_.start(
                p2p(CollectiveOp::send, first(stage_) + r, kFreshParams, count_bytes(), s)));
        for (auto& h : fresh)
          w_.wait(h);
      } else {
        w_.run(p2p(CollectiveOp::send, first(stage_) + owner, kPartialGrads, count_bytes(), s));
        w_.run(p2p(CollectiveOp::recv, first(stage_) + owner, kFreshParams, count_bytes(), s));
      }
      w_.notify(kParams, s);
    }
  }

private:
  int replicas(int stage) const { return cyclic_ ? n_ - stage : n_; }
  int first(int stage) const { // rank of the stage's replica 0 (pyramid layout)
    int r = 0;
    for (int k = 0; k < stage; ++k)
      r += replicas(k);
    return r;
  }
  // The GPU of `stage` that serves micro-batch m (pyramid), or the same pipeline's (DP + MP).
  int neighbour(int stage, int m) const {
    return cyclic_ ? first(stage) + m % replicas(stage) : replica_ * n_ + stage;
  }
  std::int64_t count_bytes() const {
    return static_cast<std::int64_t>(static_cast<double>(count_) *
                                     scenario::dtype_bytes(w_.scenario().model.dtype));
  }

  CollectiveCall p2p(CollectiveOp op, int peer, int tag, std::int64_t bytes, int step) const {
    CollectiveCall c;
    c.op = op;
    c.group = &w_.topology().group({std::min(peer, w_.rank()), std::max(peer, w_.rank())});
    c.data = Slice{io_, 0, bytes};
    c.peer = peer;
    c.tag = tag;
    c.step = step;
    static const char* kWhat[] = {"activations", "activation grads", "partial grads",
                                  "fresh params"};
    c.name = fmt::format("{} {}", op == CollectiveOp::send ? "send" : "recv", kWhat[tag - 10]);
    return c;
  }

  // CDP-v2's rule: micro-batch i uses stage j's update from the previous step when i + j >= N - 1,
  // the one before otherwise (cdp.h).
  void await_params(int step, int i) {
    const int needed = step - (i + stage_ >= n_ - 1 ? 1 : 2);
    while (version_ < needed)
      version_ = static_cast<int>(w_.await(kParams));
  }

  void update(int step) {
    w_.optimizer_step(OptimizerStep{.params = Slice{params_, 0, count_},
                                    .grads = Slice{grads_, 0, count_},
                                    .state = Slice{state_, 0, count_},
                                    .grad_scale = 1.0 / n_,
                                    .step = step});
  }

  Worker& w_;
  bool cyclic_;
  int n_ = 1;
  int stage_ = 0;
  int replica_ = 0;
  std::vector<LayerRange> stages_;
  std::int64_t count_ = 0;
  std::int64_t in_bytes_ = 0, out_bytes_ = 0;
  BufferId params_ = -1, grads_ = -1, state_ = -1, io_ = -1;
  int version_ = -1;
  std::vector<CommHandle> sends_;
};

} // namespace

std::unique_ptr<WorkerProgram> make_cdp_mp_program(Worker& worker, bool cyclic) {
  return std::make_unique<CdpMpProgram>(worker, cyclic);
}

} // namespace overlapsim
