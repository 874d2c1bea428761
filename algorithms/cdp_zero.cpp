#include "algorithms/cdp_zero.h"

#include "algorithms/cdp.h"
#include "algorithms/model_state.h"

#include <algorithm>
#include <fmt/format.h>
#include <map>

namespace overlapsim {

namespace {

class CdpZeroProgram final : public WorkerProgram {
public:
  CdpZeroProgram(Worker& w, bool cyclic) : w_(w), cyclic_(cyclic) {
    const auto& s = w.scenario();
    n_ = w.topology().world_size();
    stages_ = split_stages(s.model.spec, n_);
    layout_ = param_layout(s.model.spec);
    const double p = scenario::dtype_bytes(s.model.dtype);
    const double k = optimizer_state_bytes_per_param(s.training.optimizer, s.model.dtype);
    std::int64_t largest = 0;
    for (const auto& r : stages_)
      largest = std::max(largest, layout_.layers(0, r).count);
    const int me = w.topology().world().index_of(w.rank());
    if (cyclic) {
      // A worker holds the states of the stage it computes and, at most, of the one it has
      // already received for its next op: two stage bundles.
      params_ = w.declare({"stage_params", MemoryCategory::params, 2 * largest, p});
      grads_ = w.declare({"stage_grads", MemoryCategory::grads, 2 * largest, p});
      state_ =
          w.declare({"stage_optimizer_state", MemoryCategory::optimizer_state, 2 * largest, k});
      bundle_bytes_per_param_ = 2 * p + k;
      bundle_ = w.declare({"bundle", MemoryCategory::buffers, 0, 1}); // sizes per message below
    } else {
      // ZeRO-DP: a 1/N shard of every stage's states, plus one gathered stage of parameters.
      std::int64_t shard_total = 0;
      for (const auto& r : stages_)
        shard_total += shard(0, layout_.layers(0, r).count, me, n_).count;
      params_ = w.declare({"params_shard", MemoryCategory::params, shard_total, p});
      grads_ = w.declare({"grads_shard", MemoryCategory::grads, shard_total, p});
      state_ =
          w.declare({"optimizer_state_shard", MemoryCategory::optimizer_state, shard_total, k});
      gathered_ = w.declare({"gathered_stage", MemoryCategory::buffers, largest, p});
      gathered_grads_ = w.declare({"gathered_stage_grads", MemoryCategory::buffers, largest, p});
    }
  }

  void run_compute() override { cyclic_ ? cyclic_schedule() : simultaneous(); }
  void run_comm() override {}

private:
  int total_steps() const {
    return w_.scenario().training.warmup_steps + w_.scenario().training.steps;
  }
  std::int64_t stage_params(int j) const {
    return layout_.layers(0, stages_[static_cast<std::size_t>(j)]).count;
  }

  // Time step of worker i's op p of step s (forwards p < N, backwards after), and the stage it
  // uses.
  std::int64_t time_of(int i, int s, int p) const { return 2LL * n_ * s + 2LL * i + p; }
  int stage_of(int p) const { return p < n_ ? p : 2 * n_ - 1 - p; }

  // Every use of stage j in time order: who holds its states before and after each op.
  struct Use {
    std::int64_t time;
    int worker;
  };
  const std::vector<Use>& uses(int j) {
    auto& list = uses_[j];
    if (list.empty()) {
      for (int s = 0; s < total_steps(); ++s)
        for (int i = 0; i < n_; ++i) {
          list.push_back({time_of(i, s, j), i});              // forward of stage j
          list.push_back({time_of(i, s, 2 * n_ - 1 - j), i}); // backward of stage j
        }
      std::sort(list.begin(), list.end(),
                [](const Use& a, const Use& b) { return a.time < b.time; });
    }
    return list;
  }

  CollectiveCall bundle_call(CollectiveOp op, int j, int peer, int step) {
    CollectiveCall c;
    c.op = op;
    c.group = &w_.topology().group({std::min(peer, w_.rank()), std::max(peer, w_.rank())});
    // The message is the stage's model states; expressed in bytes of the 1-byte bundle buffer.
    c.data =
        Slice{bundle_, 0, static_cast<std::int64_t>(stage_params(j) * bundle_bytes_per_param_)};
    c.peer = peer;
    c.tag = j;
    c.step = step;
    c.name = fmt::format("{} stage {} states", op == CollectiveOp::send ? "send" : "recv", j);
    return c;
  }

  void cyclic_schedule() {
    const int me = w_.rank();
    const double samples = w_.scenario().training.micro_batch;
    std::vector<CommHandle> sends;
    for (int s = 0; s < total_steps(); ++s) {
      for (int p = 0; p < 2 * n_; ++p) {
        const int j = stage_of(p);
        const auto& list = uses(j);
        const std::int64_t now = time_of(me, s, p);
        const auto at = std::lower_bound(list.begin(), list.end(), now,
                                         [](const Use& u, std::int64_t t) { return u.time < t; });
        // The states come from the previous user of the stage (at the start they sit on worker 0).
        if (at != list.begin() && (at - 1)->worker != me)
          w_.run(bundle_call(CollectiveOp::recv, j, (at - 1)->worker, s));
        const LayerRange layers = stages_[static_cast<std::size_t>(j)];
        if (p < n_) {
          w_.forward(layers, MicroBatch{s, 0}, params_);
        } else {
          w_.backward(layers, MicroBatch{s, 0}, params_, grads_);
          if (me == n_ - 1) { // the last micro-batch completed the stage's gradient
            const std::int64_t count = stage_params(j);
            w_.optimizer_step(OptimizerStep{.params = Slice{params_, 0, count},
                                            .grads = Slice{grads_, 0, count},
                                            .state = Slice{state_, 0, count},
                                            .grad_scale = 1.0 / n_,
                                            .step = s});
          }
        }
        if (at + 1 != list.end() && (at + 1)->worker != me)
          sends.push_back(w_.start(bundle_call(CollectiveOp::send, j, (at + 1)->worker, s)));
      }
      w_.step_done(s, samples);
    }
    for (auto& h : sends)
      w_.wait(h);
  }

  void simultaneous() {
    const int me = w_.topology().world().index_of(w_.rank());
    const Group& world = w_.topology().world();
    const double samples = w_.scenario().training.micro_batch;
    std::vector<Slice> shards; // this worker's shard of each stage, in the shard buffers
    std::int64_t offset = 0;
    for (int j = 0; j < n_; ++j) {
      const auto count = shard(0, stage_params(j), me, n_).count;
      shards.push_back(Slice{params_, offset, count});
      offset += count;
    }
    auto gather = [&](int j, int s) {
      CollectiveCall c;
      c.op = CollectiveOp::all_gather;
      c.group = &world;
      c.data = shards[static_cast<std::size_t>(j)];
      c.out = Slice{gathered_, 0, stage_params(j)};
      c.name = fmt::format("all-gather stage {} params", j);
      c.step = s;
      w_.run(c);
    };
    for (int s = 0; s < total_steps(); ++s) {
      for (int j = 0; j < n_; ++j) {
        gather(j, s);
        w_.forward(stages_[static_cast<std::size_t>(j)], MicroBatch{s, 0}, gathered_);
      }
      for (int j = n_ - 1; j >= 0; --j) {
        gather(j, s);
        w_.backward(stages_[static_cast<std::size_t>(j)], MicroBatch{s, 0}, gathered_,
                    gathered_grads_);
        CollectiveCall c;
        c.op = CollectiveOp::reduce_scatter;
        c.group = &world;
        c.data = Slice{gathered_grads_, 0, stage_params(j)};
        c.out = Slice{grads_, shards[static_cast<std::size_t>(j)].offset,
                      shards[static_cast<std::size_t>(j)].count};
        c.name = fmt::format("reduce-scatter stage {} grads", j);
        c.step = s;
        w_.run(c);
      }
      w_.optimizer_step(OptimizerStep{.params = Slice{params_, 0, offset},
                                      .grads = Slice{grads_, 0, offset},
                                      .state = Slice{state_, 0, offset},
                                      .grad_scale = 1.0 / n_,
                                      .step = s});
      w_.step_done(s, samples);
    }
  }

  Worker& w_;
  bool cyclic_;
  int n_ = 1;
  std::vector<LayerRange> stages_;
  ParamLayout layout_;
  BufferId params_ = -1, grads_ = -1, state_ = -1, bundle_ = -1, gathered_ = -1,
           gathered_grads_ = -1;
  double bundle_bytes_per_param_ = 0;
  std::map<int, std::vector<Use>> uses_;
};

} // namespace

std::unique_ptr<WorkerProgram> make_cdp_zero_program(Worker& worker, bool cyclic) {
  return std::make_unique<CdpZeroProgram>(worker, cyclic);
}

} // namespace overlapsim
