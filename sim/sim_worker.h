// One simulated GPU: the Worker interface of algorithms/runtime.h on SimGrid.
#pragma once

#include "parallel/pipeline_schedule.h"
#include "parallel/stage_view.h"
#include "runtime/collective_size.h"
#include "runtime/op_label.h"
#include "runtime/replicator_use.h"
#include "runtime/runtime.h"
#include "sim/activation_checkpoints.h"
#include "sim/collective/network.h"
#include "sim/memory_contention.h"
#include "sim/node_type_compute.h"
#include "sim/platform.h"
#include "sim/slowest_of.h"
#include "sim/statistical_fold.h"
#include "sim/stream_exec.h"
#include "sim/table_comm_time.h"
#include "trace/trace.h"

#include <array>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <simgrid/s4u.hpp>
#include <span>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace overlapsim::sim {

// A 3D-parallel job's placement (issue 65): where ranks and layers go, what each stage runs, and
// each data-parallel group's topology (the world its algorithm sees).
struct ParallelPlacement {
  parallel::ParallelLayout layout;
  std::vector<parallel::StageView> stages;
  std::map<std::vector<int>, Topology> data_views; // per DP group (its members)
  // [stage][layer of its view]: the weight-gradient share of the layer's backward, what ZB-H1's
  // W runs (hw/backward_split.h; the rest is B).
  std::vector<std::vector<double>> weight_share;
  // cluster.node_types: what a GPU of each type runs on each stage, [type][stage], and its
  // weight-gradient shares, [type][stage][layer] (its GEMMs' and memory-bound kernels' balance).
  std::vector<std::vector<NodeTypeStage>> type_stages;
  std::vector<std::vector<std::vector<double>>> type_weight_share;

  ParallelPlacement(const scenario::Scenario& s, const Topology& topology);
};

// What every worker of one simulation shares (everything runs in one thread: SimGrid actors are
// cooperative, so no locks).
// Events a block of SimContext::spill holds: 65,536 (6 MiB), few writes and little held back.
inline constexpr std::size_t kEventBlock = std::size_t{1} << 16;

struct SimContext {
  const scenario::Scenario& scenario;
  const Topology& topology;
  const Platform& platform;
  Network& network;
  Trace& trace;
  std::function<void(int, int)> progress; // from worker 0
  // Calls per collective size over the simulated ranks (what `profile` measures, runtime/
  // collective_size.h).
  std::map<CollectiveSize, std::int64_t>& collective_calls;
  std::map<ReplicatorSize, std::int64_t>& replicator_calls; // the same for replicator phases
  MemoryContention& memory; // memory-bound ops of workers sharing a memory system
  const ParallelPlacement* parallel = nullptr; // tensor or pipeline parallelism; null: neither
  const RankClasses* classes = nullptr;        // which ranks run (null: all, as themselves)
  // cluster.node_types: each type's layer times (sim/node_type_compute.h); empty without types.
  std::vector<NodeTypeLayerTimes> node_type_layers = {};
  // Given: full blocks of events go to it as they are recorded and leave the trace (a child
  // streams them to its parent, sim_runtime.h). Empty: the trace keeps every event.
  std::function<void(std::span<const TraceEvent>)> spill = {};

  // Adds an event to the trace (through `spill` once a block is full).
  void record(const TraceEvent& event);
  StatisticalFold* statistical = nullptr; // classes statistical: the stand-ins
};

class SimWorker final : public Worker {
public:
  SimWorker(SimContext& context, int rank);

  int rank() const override { return rank_; }
  // Under 3D parallelism: the data-parallel group's view, and the stage's model.
  const Topology& topology() const override { return view_ ? *view_ : ctx_.topology; }
  const scenario::Scenario& scenario() const override {
    return stage_ ? stage_->scenario : ctx_.scenario;
  }

  BufferId declare(const BufferDecl& decl) override;
  const BufferDecl& buffer(BufferId id) const override;

  void forward(LayerRange layers, MicroBatch mb, BufferId params) override;
  void backward(LayerRange layers, MicroBatch mb, BufferId params, BufferId grads) override;
  void optimizer_step(const OptimizerStep& op) override;
  void outer_step(const OuterStep& op) override;
  void reload_master(Slice params, Slice state) override;
  void copy(Slice from, Slice to) override;
  void accumulate(Slice from, Slice to) override;
  void fill(Slice to, double value) override;
  void replicator_phase(const ReplicatorPhase& op) override;

  CommHandle start(const CollectiveCall& call) override;
  void run(const CollectiveCall& call) override;
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

  // Peak memory by category, activations at their peak.
  MemoryByCategory peak_memory() const;

private:
  // A stream's signals (notify, await, poll). A value already there is taken without SimGrid: a
  // semaphore's release and acquire are a simcall each, a switch to SimGrid's maestro and back
  // (sim/simcall_batch.h), twice per bucket and GPU in DDP. Only a stream that has to wait blocks
  // on the semaphore, released once per waiter.
  struct Channel {
    simgrid::s4u::SemaphorePtr ready;
    std::deque<std::int64_t> values;
    int blocked = 0; // streams waiting in acquire() for a value not yet released to them
    int granted = 0; // values released to a woken stream that has not taken them yet
    std::vector<simgrid::s4u::SemaphorePtr> watchers; // wait_any_or_signal: released by notify
  };
  class State;

  // The jitter factor of an op of `amount` FLOPs at nominal speed (its length sets the sigma where
  // cluster.jitter gives sigma_1s).
  double jitter(double amount);
  // The stream of the calling actor (its name starts with 'c' for compute).
  static StreamKind calling_stream();
  // The factor on the layers' times of the calling stream's current micro-batch; `starts`: a
  // forward from the first layer, which begins one.
  double micro_batch_speed(bool starts);
  // Runs `amount` FLOPs (or FLOP-equivalents of a time-based cost) on this GPU and records it.
  // `alone`, for a memory-bound op: its amount with no other worker of its memory system running
  // one, `amount` being all of them at once (sim/memory_contention.h).
  // `at_ratio`, for an op whose cost follows the micro-batch's sequence length: its amount at
  // another sequence ratio (what a statistical fold's left-out GPUs draw, sim/slowest_of.h).
  void compute(const OpLabel& label, double amount, MicroBatch mb,
               std::optional<double> alone = std::nullopt,
               const std::function<double(double)>& at_ratio = {});
  // FLOP-equivalents per sample of `layers` on sequences `ratio` x seq_len long.
  double layer_cost(LayerRange layers, bool backward, double ratio) const;
  // parallelism.recompute (parallel/stage_view.h's LayerRecompute): runs what `layers`' backward
  // recomputes as one "recompute fwd" op and holds what it rebuilds; returns those bytes, which
  // the backward frees.
  double parallel_recompute(LayerRange layers, MicroBatch mb);
  // Micro-batch `mb`'s sequence length over seq_len (training.seq_len_distribution; 1 without).
  double seq_ratio(MicroBatch mb) const;
  void change_activations(double delta);
  // An element-wise op that moves `bytes` through HBM, on the calling stream.
  void memory_op(MemoryOp op, double bytes);
  // `after_handoff`: the calling stream's first collective since it waited for the other's signal.
  void run_collective(const CollectiveCall& call, double bytes, std::int64_t seq,
                      bool after_handoff);
  // Whether the calling stream had to wait for a signal since its last collective (and forgets).
  bool take_handoff();
  // Whether this stream's next compute op is the first since it had to wait for a signal (once).
  bool take_compute_handoff();
  double bytes_of(const CollectiveCall& call) const;
  // The compute the start of `call` takes from this GPU (hw::GpuSpec's
  // collective_start_cost_by_op), begun by the calling actor; null when none was measured.
  simgrid::s4u::ExecPtr begin_start_cost(const CollectiveCall& call, double bytes);
  std::int64_t next_seq(const CollectiveCall& call);
  static std::tuple<int, int, int> send_key(const CollectiveCall& call);
  Channel& channel(int signal);

  // Pipeline parallelism (issue 65): whether this worker's stage is one of several.
  bool pipelined() const { return stage_ != nullptr && stage_->stages > 1; }
  // Which part of a backward an op runs: all of it, or ZB-H1's input-gradient pass (B, with the
  // recomputation and the TP collectives) or weight-gradient pass (W).
  enum class BackwardPart { whole, input, weight };
  void layers_forward(LayerRange layers, MicroBatch mb, bool starts);
  void layers_backward(LayerRange layers, MicroBatch mb, BackwardPart part = BackwardPart::whole);
  // The tensor-parallel collectives of `layers` (forward or backward) on the TP group: one op of
  // their summed price (parallel/stage_view.h), on the calling stream.
  void tensor_parallel_comm(LayerRange layers, bool backward, MicroBatch mb);

  // The stage runs its schedule's ops (parallel/pipeline_schedule.h) in their order; the
  // algorithm's forward and backward calls say how far it must have got. A point in the schedule:
  // op `op` of schedule_ done up to layer `layer` (a forward, from its chunk's first layer up) or
  // down to it (a backward, from its chunk's last layer down), an op running in as many parts as
  // the algorithm's layer ranges cut it into.
  struct SchedulePoint {
    std::size_t op = 0;
    int layer = 0;
  };
  // Starts step `step`'s schedule, first finishing the one before.
  void begin_schedule(int step);
  // Starts `mb`'s step's schedule if it is a new one; throws for a micro-batch it does not have.
  void check_micro_batch(MicroBatch mb);
  // Runs the schedule up to `point`.
  void run_schedule_to(SchedulePoint point);
  // Runs the schedule to the backward calls' points the algorithm acts on: `latest`, those of its
  // last backward call (a notify, copy or collective after it concerns those layers' gradients);
  // else all of them (an optimizer step, an element-wise op, the step's end, waiting for a
  // signal once the pass is issued: pass_issued). Waiting for a collective needs none: it consumes
  // no gradient. Only on the compute stream, the one that runs the stage's ops.
  void settle(bool latest = false);
  // Whether the algorithm has called the backward that ends the pass (the last of a chunk's): the
  // GPU runs the pass's cool-down before its stream waits for a signal.
  bool pass_issued() const;
  // Runs (the next part of) the op at the cursor, a forward up to layer `bound` or a backward down
  // to it, and advances the cursor once the op is complete.
  void run_schedule_op(const parallel::PipelineOp& op, int bound);
  // A message to or from a neighbouring stage: sends leave at once (Megatron's isend), in order.
  void stage_message(bool send, bool to_next, bool gradient, MicroBatch mb);

  // This GPU's own (cluster.node_types): its roofline, memory bandwidth and handoffs.
  const hw::GpuSpec& gpu() const;
  // The stage as this GPU runs it (its TP collectives, recomputation shares): its type's view.
  const parallel::StageView& own_stage() const { return type_stage_ ? type_stage_->view : *stage_; }
  // Layer `l` (of scenario()'s model) per sample on this GPU, forward or backward (seconds).
  double layer_seconds(int l, bool backward) const;

  SimContext& ctx_;
  int rank_;
  int node_type_ = -1;                         // index into cluster.node_types; -1: cluster.gpu
  const parallel::StageView* stage_ = nullptr; // under 3D parallelism
  // Under 3D parallelism on a node of another GPU type: its stage as that type runs it (times, TP
  // collectives, recomputation); stage_ stays the job's (what the algorithm sees is every GPU's).
  const NodeTypeStage* type_stage_ = nullptr;
  const Topology* view_ = nullptr;      // the data-parallel group's topology
  const Group* tensor_group_ = nullptr; // more than one rank: tensor parallelism
  const Group* to_previous_ = nullptr;  // this rank and the previous stage's
  const Group* to_next_ = nullptr;
  int previous_ = -1, next_ = -1;
  std::vector<parallel::PipelineOp> schedule_; // this stage's ops for one step, in order
  // Where the algorithm's j-th forward and j-th backward of chunk c (the op that completes the
  // weight gradients: B, or ZB-H1's W) are in schedule_: [c][j].
  // The j-th, not micro-batch j's: GPipe runs the backwards last micro-batch first, and a
  // gradient is complete after the last backward of its layers, whichever micro-batch that is.
  std::vector<std::vector<std::size_t>> forward_at_;
  std::vector<std::vector<std::size_t>> backward_at_;
  int schedule_step_ = -1;
  std::size_t cursor_ = 0; // the next op of schedule_ to run, or the one partly run
  int progress_ = -1;      // the partly run op's layer bound so far; -1: none begun
  std::vector<SchedulePoint> latest_, owed_; // see settle()
  double sample_share_ = 1; // of a pipeline's samples this rank reports: 1 / (tensor x pipeline)
  simgrid::s4u::Host* host_;
  std::mt19937_64 rng_;
  // Statistical rank classes: this GPU runs as the slowest of the GPUs left out (sim/slowest_of.h,
  // owned by SimContext::statistical); null otherwise.
  SlowestOf* slowest_ = nullptr;
  TableCommTime table_comm_; // the model's per-layer all-reduce times, when it has a table
  std::vector<BufferDecl> buffers_;
  MemoryByCategory static_memory_{};
  double activations_ = 0;
  double peak_activations_ = 0;
  ActivationCheckpoints checkpoints_;        // used when model.activation_checkpointing is set
  std::array<bool, 2> handed_off_{};         // per stream (compute, comm): see take_handoff()
  std::array<bool, 2> compute_handed_off_{}; // per stream: see take_compute_handoff()
  // Per stream: the category of its last compute op, and whether the micro-batch it is running
  // began right after a backward (hw::ModelSpec's back_to_back_compute_ratio).
  std::array<OpCategory, 2> last_compute_{OpCategory::idle, OpCategory::idle};
  std::array<bool, 2> back_to_back_{};
  std::map<int, Channel> channels_;
  std::array<StreamExec, 2> streams_;         // per stream: its compute ops' one execution
  std::unordered_map<int, std::int64_t> seq_; // per group
  std::unordered_map<int, std::shared_ptr<State>> last_op_; // per group, NCCL stream order
  // Sends to one peer from one stream go one after the other (NCCL runs a stream's operations in
  // order; Gloo's pair is one TCP connection): keyed by (group, peer, stream).
  std::map<std::tuple<int, int, int>, std::shared_ptr<State>> last_send_;
  std::int32_t comm_name_ = -1;
};

} // namespace overlapsim::sim
