// The Worker interface: everything an algorithm may do, written once and executed by two backends,
// SimWorker (sim/, SimGrid time) and RealWorker (validate/, LibTorch + c10d).
//
// An algorithm is the program of one worker's two streams (WorkerProgram): a compute stream and a
// communication stream that run concurrently, like ACCO's two CUDA streams. Each call below blocks
// the calling stream until the op is done, except start(), which launches a collective and returns
// a handle to wait on or test. The two streams of a worker synchronise through signals
// (notify/await), which carry a 64-bit value (a bucket index, a count).
#pragma once

#include "comm/collective_op.h"
#include "runtime/replicator_config.h"
#include "runtime/topology.h"
#include "scenario/scenario.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>

namespace overlapsim {

enum class StreamKind : std::uint8_t { compute = 0, comm = 1 };
enum class OpCategory : std::uint8_t { forward, backward, optimizer, comm, compress, idle, copy };
inline constexpr int kOpCategories = 7;
enum class MemoryCategory : std::uint8_t { params, grads, optimizer_state, buffers, activations };
inline constexpr int kMemoryCategories = 5;

const char* to_string(OpCategory category);
const char* to_string(MemoryCategory category);

// Buffers are flat arrays the algorithm declares; in simulation only their size matters (they are
// the memory model), for real they are tensors. Collectives and optimizer steps act on slices.
using BufferId = int;
struct BufferDecl {
  std::string name;
  MemoryCategory category = MemoryCategory::buffers;
  std::int64_t elements = 0;
  double element_bytes = 2;
  // Elements the memory model counts, when fewer than `elements` live at once (-1: all). FSDP's
  // unsharded flat parameters are addressed as a whole but allocated one wrap unit at a time and
  // freed after use (PyTorch resizes their storage to 0), so only the working set is resident.
  std::int64_t resident = -1;
};
struct Slice {
  BufferId buffer = -1;
  std::int64_t offset = 0; // elements
  std::int64_t count = 0;  // elements
};

struct LayerRange {
  int first = 0; // [first, last) in model layer order (input to output)
  int last = 0;
};

struct MicroBatch {
  int step = 0;  // optimizer step it contributes to
  int index = 0; // its position among the worker's micro-batches of that step
};

// One collective (or point-to-point) call. `data` is the input (and, for all-reduce, broadcast and
// recv, the output); `out` is the output of reduce-scatter (this rank's shard) and all-gather (the
// full array). Sizes follow NCCL: reduce-scatter's data is the full array, all-gather's data the
// shard. `peer` is the root (broadcast, reduce) or the other rank (send, recv).
struct CollectiveCall {
  CollectiveOp op = CollectiveOp::all_reduce;
  const Group* group = nullptr;
  Slice data;
  Slice out;
  int peer = -1;
  int tag = 0;      // send/recv: messages match by (group, tag, source, destination), FIFO
  std::string name; // trace label, e.g. "all-reduce bucket 3"
  int step = -1;
  bool average = false; // all-reduce: the sum divided by the group size (NCCL's ncclAvg); costs
                        // the same as the sum in simulation
};

// Opaque handle to a started collective; each runtime stores its own state behind it.
class CommState {
public:
  virtual ~CommState() = default;
};
struct CommHandle {
  std::shared_ptr<CommState> state;
  bool valid() const { return state != nullptr; }
};

// What one optimizer step updates: a slice of parameters from the matching gradient slice, with the
// optimizer state of the same elements (sharded optimizers pass their shard).
//
// The optimizer keeps the master copy of the parameters it updates with their state (the fp32 copy
// that K counts in mixed precision): it is initialised from `params` on the first step of a state
// slice, and every step writes the updated parameters to `out` (`params` when `out` is unset).
// Built with designated initialisers (OptimizerStep{.params = ..., .grads = ...}), as are the other
// op structs: several fields share a type, so positions would be easy to swap.
struct OptimizerStep {
  Slice params;
  Slice grads;
  Slice state; // the optimizer state of the same elements, in the (possibly sharded) state buffer
  double grad_scale = 1.0; // e.g. 1/N to average a summed gradient
  int step = 0;
  Slice out;          // where the updated parameters go; unset (buffer -1): `params`
  bool commit = true; // false: write Opt(master, grads) to `out` but keep master and state
                      // (ACCO's estimate theta~(t+1), Algorithm 1 line 27)
  Slice divisor;      // set: divide the gradients by the sum of these elements (a summed
                      // micro-batch count, Algorithm 1 lines 27 and 36) instead of grad_scale
};

// One phase of a decoupled-momentum replicator step (DeMo; FlexDeMo, DeToNATION Algorithm 1) on
// one piece of the model: a contiguous run of elements (the whole model in DeMo, one wrap unit's
// shard in FlexDeMo). With s = grad_scale, beta = config.decay, k selected of the piece's E:
//   encode (demo, random, striding):
//     m <- beta m + s g                                  (decoupled momentum, never synchronised)
//     demo:            q <- top_k per chunk x chunk block of DCT-II(m): values + block indices
//     random/striding: q <- m[idx], idx = replicator_indices(config, step, piece, E)
//     m <- m - decode(q)                                 (what is sent leaves the momentum)
//   encode (diloco): nothing (its gradient is all-reduced in place on exchanging steps).
//   decode: Q <- demo: IDCT of every worker's (index, value) pairs, a coefficient sent by several
//                      workers taking their mean (DeToNATION's scatter_reduce "mean");
//                random/striding: zeros with the averaged values at idx;
//                diloco: s g (averaged across the group on exchanging steps, local otherwise);
//                no exchange this step (a group of one): Q <- m, m <- 0.
//           theta <- theta - lr sign(Q)                  (DeMo-SGD; sign false: lr Q)
// The simulator prices each phase as memory-bound kernels (replicator_cost.h); the real runtime
// computes it on tensors.
struct ReplicatorPhase {
  enum class Kind : std::uint8_t { encode, decode };
  Kind phase = Kind::encode;
  ReplicatorConfig config;
  Slice grads; // the piece's gradient (a sum; times grad_scale)
  double grad_scale = 1.0;
  Slice params;   // the piece's parameters (the shard in FlexDeMo)
  Slice momentum; // the decoupled momentum of the same elements (unset for diloco)
  // demo: the exchange region, group_size consecutive blocks of `selected` values (worker-major);
  // encode writes this worker's block. random/striding: the `selected` values.
  Slice values;
  Slice indices; // demo: the block indices alongside `values` (exact in fp32 below 2^24)
  int group_size = 1;
  int member = 0;        // this worker's block in `values` and `indices` (demo)
  bool exchanged = true; // false: nothing was exchanged this step
  double lr = 0;
  int piece = 0;
  int step = 0;
};

// DiLoCo's outer step (Douillard et al. 2023, Algorithm 1, with the outer optimizer Nesterov
// momentum as torch.optim.SGD(nesterov=True)). `params` holds the workers' average of their
// parameters after the inner steps and `anchor` the parameters at the start of the period (the
// same on every worker), so Delta = anchor - params is the averaged pseudo-gradient:
//   momentum = mu momentum + Delta;  anchor -= lr (Delta + mu momentum);  params = anchor.
// The inner optimizer's master copy of `inner_state`'s elements restarts from the new parameters.
// Streaming DiLoCo (Douillard et al. 2025, Sec. 2.3) sets `local`: the worker's own parameters,
// which have moved on while `params` (a snapshot) was being averaged; after the outer step they
// are merged with the new global parameters, local = alpha local + (1 - alpha) anchor, and the
// inner optimizer restarts from `local` instead.
struct OuterStep {
  Slice params;
  Slice anchor;
  Slice momentum;
  Slice inner_state; // the inner optimizer's state slice of the same elements
  double lr = 0.7;
  double mu = 0.9;
  int step = 0;
  Slice local; // unset (buffer -1): no merge
  double alpha = 0;
};

class Worker {
public:
  virtual ~Worker() = default;

  virtual int rank() const = 0;
  virtual const Topology& topology() const = 0;
  virtual const scenario::Scenario& scenario() const = 0;

  // Memory: every buffer the algorithm keeps; activations are tracked by forward/backward.
  virtual BufferId declare(const BufferDecl& decl) = 0;
  virtual const BufferDecl& buffer(BufferId id) const = 0;

  // Compute, on the calling stream. forward() of the layers [first, last) of micro-batch `mb`
  // with the parameters in `params`; backward() adds the gradients of those layers to `grads`, the
  // micro-batch with index 0 of a step starting them afresh: its first backward call (the one that
  // contains the output layer) zeroes the whole buffer, since tied weights (an LM head sharing the
  // embedding) put gradients outside the range being run.
  virtual void forward(LayerRange layers, MicroBatch mb, BufferId params) = 0;
  virtual void backward(LayerRange layers, MicroBatch mb, BufferId params, BufferId grads) = 0;
  virtual void optimizer_step(const OptimizerStep& op) = 0;
  virtual void outer_step(const OuterStep& op) = 0;
  // The optimizer's master copy of `state`'s elements becomes `params` (moments and step counts
  // stay): what an algorithm calls after writing parameters the optimizer updates by other means
  // (local SGD's average), or the next step continues from the master and undoes the write.
  // Without a master copy (fp32 training, K without it) the simulator charges nothing.
  virtual void reload_master(Slice params, Slice state) = 0;

  // Element-wise data movement on the calling stream (device memory bandwidth in simulation):
  // to = from, to += from, to = value. Slices of one call have the same count (fill: `to` only).
  virtual void copy(Slice from, Slice to) = 0;
  virtual void accumulate(Slice from, Slice to) = 0;
  virtual void fill(Slice to, double value) = 0;
  // A replicator phase on the calling stream (see ReplicatorPhase).
  virtual void replicator_phase(const ReplicatorPhase& op) = 0;

  // Communication. start() returns at once; wait() blocks the calling stream until done.
  virtual CommHandle start(const CollectiveCall& call) = 0;
  virtual void wait(CommHandle& handle) = 0;
  virtual bool test(CommHandle& handle) = 0;
  // Blocks the calling stream until the first of `handles` is done, waits for it as wait() does
  // and returns its index; when several are done already, the lowest index. An invalid handle,
  // or one waited for already, counts as done (as test() answers). Lets a stream take messages
  // from several peers in the order they arrive (MPI_Waitany): CDP-v2 relays each complete sum
  // as it comes (algorithms/cdp.cpp). `handles` must not be empty.
  virtual std::size_t wait_any(std::span<CommHandle> handles) = 0;
  // As wait_any, but also returns once a value of one of `signals` is there for this stream to
  // take (await would not block): then handles.size() plus that signal's index, the value left
  // in place for poll or await. `handles` may be empty when `signals` is not. Lets one stream
  // serve its peers' messages and the other stream's hand-overs in the order they come: CDP-v2's
  // communication stream runs its precomputed link schedule with it (algorithms/cdp_link_order.h).
  virtual std::size_t wait_any_or_signal(std::span<CommHandle> handles,
                                         std::span<const int> signals) = 0;
  // start + wait; a runtime may run it on the calling stream without a helper.
  virtual void run(const CollectiveCall& call) {
    auto h = start(call);
    wait(h);
  }

  // Signals between this worker's two streams (FIFO per id).
  virtual void notify(int signal, std::int64_t value = 0) = 0;
  virtual std::int64_t await(int signal) = 0;
  virtual std::optional<std::int64_t> poll(int signal) = 0;

  virtual double now() const = 0; // seconds since the run started

  // Marks the end of an optimizer step on this worker and how many samples it consumed, for the
  // steady-state metrics (throughput counts samples, so algorithms that accumulate a variable
  // number of micro-batches per step are measured fairly).
  virtual void step_done(int step, double samples) = 0;

  // Reported by algorithms that accumulate a variable number of micro-batches (ACCO, DPU).
  virtual void record_accumulation(int step, int micro_batches) = 0;
};

} // namespace overlapsim
