// RealWorker: the Worker interface of algorithms/runtime.h on real tensors. Buffers are fp32
// tensors, forward/backward run the real model layer by layer with autograd, optimizer steps
// update real parameters, and collectives go through c10d process groups (Gloo on CPU, NCCL on
// GPU). The two streams are two threads of one process, each issuing to a CUDA stream of its own
// on a GPU (validate/device_streams.h); every op lands in a Trace with the simulator's schema,
// timed by the wall clock on a CPU and by CUDA events on a GPU.
#pragma once

#include "runtime/op_label.h"
#include "runtime/runtime.h"
#include "trace/trace.h"
#include "validate/real_model.h"
#include "validate/real_optimizer.h"

#include "validate/c10d_compat.h"
#include "validate/collective_pieces.h"
#include "validate/device_streams.h"
#include "validate/optimizer_store.h"
#include "validate/parallel_place.h"
#include "validate/thread_policy.h"
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

namespace overlapsim::real {

// A process group for (group, stream): each stream gets its own so that the two threads' calls
// never interleave in a group's sequence (ranks must issue a group's collectives in one order).
using GroupFn = std::function<CommBackendPtr(const Group&, StreamKind)>;

struct LossRecord {
  int step = 0;
  int micro_batch = 0;
  double loss = 0;
  double time = 0;
};

struct RealContext {
  const scenario::Scenario& scenario;
  const Topology& topology;
  RealModel& model;
  const Dataset& data;
  OptimizerConfig optimizer;
  GroupFn group;
  std::chrono::steady_clock::time_point start; // time 0 of the trace, one instant on every rank
                                               // (validate/clock_origin.h)
  std::chrono::milliseconds timeout{60000};    // for one collective
  std::atomic<bool>* aborted = nullptr;        // set when either stream failed
  torch::Device device = torch::kCPU;          // cuda:<local rank> with the NCCL backend
  // Gloo's reduce-scatter and all-gather run in pieces of this many elements per shard, the same
  // on every rank (validate/collective_pieces.h).
  std::int64_t gloo_piece_elements = kMinPieceBytes / 4;
  // Under pipeline parallelism (issue 65.9): the worker's place, and the topology its algorithm
  // sees (its data-parallel group's view, runtime/topology.h). `model` is then its stage's and
  // `scenario` the stage's view (parallel/stage_view.h).
  const ParallelPlace* place = nullptr;
  const Topology* data_view = nullptr;
};

class RealWorker final : public Worker {
public:
  RealWorker(RealContext& context, int rank);

  // The stream the calling thread runs: each thread calls it before it runs its program.
  void enter(StreamKind stream);

  int rank() const override { return rank_; }
  const Topology& topology() const override {
    return ctx_.data_view != nullptr ? *ctx_.data_view : ctx_.topology;
  }
  const scenario::Scenario& scenario() const override { return ctx_.scenario; }
  bool on_cpu() const { return !ctx_.device.is_cuda(); }

  BufferId declare(const BufferDecl& decl) override;
  const BufferDecl& buffer(BufferId id) const override;

  void forward(LayerRange layers, MicroBatch mb, BufferId params) override;
  void backward(LayerRange layers, MicroBatch mb, BufferId params, BufferId grads) override;
  void optimizer_step(const OptimizerStep& op) override;
  void outer_step(const OuterStep& op) override;
  void reload_master(Slice params, Slice state) override;
  void replicator_phase(const ReplicatorPhase& op) override;
  void copy(Slice from, Slice to) override;
  void accumulate(Slice from, Slice to) override;
  void fill(Slice to, double value) override;

  CommHandle start(const CollectiveCall& call) override;
  void wait(CommHandle& handle) override;
  bool test(CommHandle& handle) override;
  std::size_t wait_any(std::span<CommHandle> handles) override;
  std::size_t wait_any_or_signal(std::span<CommHandle> handles,
                                 std::span<const int> signals) override;

  void notify(int signal, std::int64_t value) override;
  std::int64_t await(int signal) override;
  std::optional<std::int64_t> poll(int signal) override;

  double now() const override;
  void step_done(int step, double samples) override;
  void record_accumulation(int step, int micro_batches) override;

  // Wakes every await() so that a failed run ends instead of hanging.
  void abort();

  // On a CPU, times each compute op from when its stream could have begun it, as a CUDA event
  // recorded on a stream does: the end of the stream's previous op or the moment what it waited
  // for happened (a collective's data ready, the other stream's signal), whichever is later. The
  // time its thread then lost to other threads of its core (an idle thread yields to every other:
  // validate/thread_policy.h) counts as the op's, as a kernel slowed by another stream's kernels
  // lasts longer on a GPU; timed from when the thread got to it, FSDP's forward beside the next
  // unit's all-gather ran after it and left the all-gather's time idle. The runs do this; the
  // profile, whose threads wait on more than the Worker interface sees, only where its threads
  // meet through it alone (the hand-off probe); `false` goes back to the threads' own times.
  void start_ops_when_ready(bool on = true);

  torch::Tensor tensor(Slice s) const;
  torch::Tensor whole(BufferId id) const { return tensors_.at(static_cast<std::size_t>(id)); }
  // Both resolve the device's timings first (waiting for the ops still running on a GPU): call
  // them when the streams are idle or from the stream whose ops are read.
  const Trace& trace();
  const std::vector<LossRecord>& losses();

private:
  struct Activations {
    Batch batch;
    std::vector<torch::Tensor> inputs;  // per layer: the leaf fed to it
    std::vector<torch::Tensor> outputs; // per layer
    torch::Tensor output_grad;          // a pipeline stage's output: its gradient, received
  };
  class State;

  // A collective on `data` (the call's own slice, or a tensor of the worker's: a pipeline message).
  CommHandle start_on(const CollectiveCall& call, torch::Tensor data);
  bool pipelined() const { return ctx_.place != nullptr && ctx_.place->pipelined(); }
  // Pipeline parallelism, as the simulator's worker runs it inside forward and backward (issue
  // 65): a stage runs whole micro-batches, receiving its input from the previous stage and sending
  // its output to the next, and before micro-batch i's backward the forwards the schedule runs
  // before it (ParallelPlace::ahead); the gradients go back the same way.
  void stage_forward(MicroBatch mb, BufferId params);
  void layers_forward(LayerRange layers, MicroBatch mb, BufferId params, torch::Tensor input);
  // A message to or from a neighbouring stage: `gradient` false an activation (forward), true
  // its gradient (backward). A receive blocks; a send returns and is waited for later.
  torch::Tensor receive(bool from_next, bool gradient, MicroBatch mb,
                        const std::vector<std::int64_t>& shape);
  void send(bool to_next, bool gradient, MicroBatch mb, torch::Tensor data);
  void finish_sends(bool all);
  // The tied word embedding between the first and the last stage, around a step's optimizer
  // step: the copy's gradient summed over its data-parallel group and into the owner's; then the
  // owner's updated embedding sent to the copy (TiedRole).
  void sum_tied_gradient(const OptimizerStep& op);
  void optimizer_update(const OptimizerStep& op);
  // Tensor parallelism: the model's all-reduces on the TP group (RealModel::TensorReduce).
  void tensor_reduce(torch::Tensor& t, bool max);
  int tensor_step_ = -1; // the step of the micro-batch the compute stream runs
  void share_tied_embedding(const OptimizerStep& op);

  // An op from `start` to `end` on its stream; on a GPU its times are resolved later.
  void record(StreamKind stream, const OpLabel& label, StreamMark start, StreamMark end,
              MicroBatch mb, double bytes = 0, const std::string& detail = {},
              const CollectiveCall* call = nullptr, double received = 0);
  void resolve_timings();
  void bind(BufferId params, BufferId grads);
  // Ends a compute op begun at `start`: applies the straggler's slowdown and returns the end.
  StreamMark finish_op(StreamMark start);
  void start_nccl_reduce_scatter(State& s, torch::Tensor data, torch::Tensor out, int me, int n);
  void start_nccl_all_gather(State& s, torch::Tensor data, torch::Tensor out, int me, int n);
  torch::TensorOptions options() const { return torch::TensorOptions().device(ctx_.device); }
  void memory_changed();
  // Runs a point-to-point send's or receive's start: on p2p_issuer_ from an idle thread.
  void issue_p2p(const std::function<void()>& start);

  RealContext& ctx_;
  int rank_;
  double slowdown_ = 1.0;
  std::vector<BufferDecl> decls_;
  std::vector<torch::Tensor> tensors_;
  BufferId bound_params_ = -1, bound_grads_ = -1;
  std::map<std::pair<int, int>, Activations> activations_; // by (step, index)
  std::int64_t micro_batches_started_ = 0;
  int forwarded_step_ = -1, forwarded_ = 0; // pipeline: forwards run of that step
  std::deque<CommHandle> sends_;            // pipeline messages sent, not yet waited for
  OptimizerStore optimizer_;
  std::map<int, std::int64_t> seq_; // per group: collectives started
  std::atomic<int> in_flight_{0};   // collectives started and not yet waited for
  // Wakes a CPU wait() when one of this worker's collectives completes.
  struct CompletionSignal {
    std::mutex mutex;
    std::condition_variable cv;
    void notify();
  };
  std::shared_ptr<CompletionSignal> completions_ = std::make_shared<CompletionSignal>();

  std::mutex mutex_; // trace, signals and completion times: touched by both streams
  std::condition_variable signalled_;
  // Per signal: the values sent and where the sender's stream was (on a GPU, an event).
  std::map<int, std::deque<std::pair<std::int64_t, StreamMark>>> signals_;
  std::map<const void*, double> group_busy_until_; // per process group: last completion
  Trace trace_;
  std::vector<LossRecord> losses_;
  DeviceStreams streams_;
  // On a CPU: issues the compute thread's point-to-point sends and receives (an idle thread must
  // not hold Gloo's pair lock: validate/thread_policy.h). Made here, on a thread of normal policy.
  std::unique_ptr<NormalThread> p2p_issuer_;
  struct PendingTiming {
    std::size_t event;
    StreamMark start, end;
  };
  std::vector<PendingTiming> pending_timings_; // GPU: events whose times are CUDA events
  std::vector<std::pair<std::size_t, torch::Tensor>> pending_losses_; // GPU: losses on the device
  std::vector<std::pair<std::size_t, StreamMark>> pending_steps_;     // GPU: step ends
  double static_bytes_ = 0;
  double activation_bytes_ = 0;
  double logged_device_bytes_ = 0;          // OVERLAPSIM_CUDA_MEMORY_LOG
  std::array<StreamMark, 2> last_op_end_{}; // per stream: its previous op's end (GPU)
  // start_ops_when_ready: per stream, when it could begin its next op (-1: no op or wait yet).
  bool start_when_ready_ = false;
  std::array<double, 2> stream_ready_{-1.0, -1.0};
  // The calling thread's stream waited for something that happened at `at` (host seconds).
  void waited_until(double at);
};

} // namespace overlapsim::real
