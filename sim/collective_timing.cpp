#include "sim/collective_timing.h"

#include "algorithms/algorithm.h"
#include "comm/ring_shape.h"
#include "sim/sim_runtime.h"

#include <algorithm>
#include <stdexcept>

namespace overlapsim::sim {

namespace {

// A program whose only op is one collective on the world group, started by every rank at t = 0.
class OneCollective final : public Algorithm {
public:
  OneCollective(CollectiveOp op, double size) : op_(op), size_(size) {}
  std::string name() const override {
    return op_ == CollectiveOp::send ? "sendrecv" : to_string(op_);
  }
  // Every rank runs the same collective over the world: one node's GPUs stand for all (rank
  // classes, as `run` folds DDP; issue 63.5b: a 1 GB all-reduce on 131,072 GPUs ran every GPU and
  // did not end). A broadcast or reduce has a root, and all-to-all sends to every rank: those run
  // in full.
  bool node_symmetric() const override {
    return op_ == CollectiveOp::all_reduce || op_ == CollectiveOp::reduce_scatter ||
           op_ == CollectiveOp::all_gather;
  }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class Program final : public WorkerProgram {
    public:
      Program(Worker& worker, CollectiveOp op, double size) : w_(worker), op_(op) {
        const int n = w_.topology().world_size();
        const auto elements = static_cast<std::int64_t>(size);
        // Bytes as elements of one byte: exact sizes, and the shard of all-gather is size / n.
        buffer_ = w_.declare({"data", MemoryCategory::buffers, elements, 1.0});
        call_.op = op;
        call_.group = &w_.topology().world();
        call_.data = Slice{buffer_, 0, op == CollectiveOp::all_gather ? elements / n : elements};
        call_.out = Slice{buffer_, 0, elements};
        call_.peer = 0; // root of broadcast and reduce
        call_.name = to_string(op);
        call_.step = 0;
        if (op == CollectiveOp::send) {
          // nccl-tests' sendrecv_perf: every rank sends `size` to the next rank and receives as
          // much from the previous one, all at once.
          const int r = w_.rank();
          call_.peer = (r + 1) % n;
          call_.name = "sendrecv";
          recv_ = call_;
          recv_.op = CollectiveOp::recv;
          recv_.peer = (r + n - 1) % n;
        }
      }
      void run_compute() override {}
      void run_comm() override {
        if (op_ == CollectiveOp::send) {
          auto sent = w_.start(call_);
          auto received = w_.start(recv_);
          w_.wait(sent);
          w_.wait(received);
        } else {
          w_.run(call_);
        }
        w_.step_done(0, 0);
      }

    private:
      Worker& w_;
      CollectiveOp op_;
      BufferId buffer_ = -1;
      CollectiveCall call_;
      CollectiveCall recv_; // sendrecv's receive
    };
    return std::make_unique<Program>(w, op_, size_);
  }

private:
  CollectiveOp op_;
  double size_;
};

} // namespace

RankClasses collective_rank_classes(const scenario::Scenario& scenario, CollectiveOp op) {
  return choose_rank_classes(scenario, OneCollective(op, 1));
}

CollectiveTiming time_collective(const scenario::Scenario& scenario, CollectiveOp op,
                                 double size_bytes) {
  const OneCollective algorithm(op, size_bytes);
  const auto result = simulate(scenario, algorithm);
  CollectiveTiming t;
  t.op = op;
  t.size_bytes = size_bytes;
  t.workers = scenario.cluster.world_size();
  for (const auto& e : result.trace.events) {
    if (e.category != OpCategory::comm)
      continue;
    t.time_s = std::max(t.time_s, e.end);
    if (e.worker == 0 && e.detail >= 0)
      t.algorithm = result.trace.name_of(e.detail);
  }
  t.algbw_Bps = t.time_s > 0 ? size_bytes / t.time_s : 0;
  t.busbw_Bps = t.algbw_Bps * comm::bus_factor(op, t.workers); // nccl-tests' busbw
  return t;
}

} // namespace overlapsim::sim
