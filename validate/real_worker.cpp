#include "validate/real_worker.h"

#include "algorithms/model_state.h"
#include "comm/ring_shape.h"
#include "validate/heartbeat.h"
#include "validate/real_replicator.h"
#include "validate/shard_layout.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <exception>
#include <fmt/format.h>
#include <stdexcept>
#include <thread>

namespace overlapsim::real {

namespace {
thread_local StreamKind current_stream = StreamKind::compute;

// Bytes a rank sends in the ring form of each collective (Gloo's algorithms for these sizes):
// comm/ring_shape.h's, on the call's array (all-gather's data is the shard).
double bytes_sent(CollectiveOp op, int n, double bytes) {
  if (n <= 1 || op == CollectiveOp::barrier)
    return 0;
  return comm::ring_bytes_sent(op, n, comm::array_bytes(op, n, bytes));
}
} // namespace

// A started collective: the c10d work, the tensors it owns until it completes, and what to do
// with its result once it has (sum the reduce-scatter's pieces, unpack the all-gather).
class RealWorker::State final : public CommState {
public:
  CollectiveCall call;
  CommBackendPtr group;
  std::vector<c10::intrusive_ptr<c10d::Work>> works; // pieces, completing in order
  std::vector<torch::Tensor> inputs;
  std::vector<std::vector<torch::Tensor>> outputs;
  torch::Tensor scratch;
  std::function<void()> finish;
  std::shared_ptr<std::atomic<double>> completed = std::make_shared<std::atomic<double>>(-1.0);
  StreamMark issued;
  double bytes = 0;
  double received = 0; // a recv's message
  StreamKind stream = StreamKind::comm;
  bool done = false;
  // Gloo's send and receive have no completion time: a thread of normal policy waits on the
  // work and records it, and the program's wait joins that thread instead (Gloo counts
  // completions, so two waits on one work would need two). Without it a message ended when the
  // program got round to waiting: CDP's partial sums 94 ms after their receive was posted, most of
  // it the next stage's backward.
  std::thread waiter;
  std::atomic<bool> waited{false}; // the waiter is done, with the work or with its error
  std::exception_ptr waiter_error;

  State() = default;
  State(const State&) = delete;
  State& operator=(const State&) = delete;
  ~State() override {
    if (waiter.joinable())
      waiter.join();
  }
};

void RealWorker::enter(StreamKind stream) {
  current_stream = stream;
  streams_.enter(stream);
}

RealWorker::RealWorker(RealContext& context, int rank)
    : ctx_(context), rank_(rank), optimizer_(context.optimizer),
      streams_(context.device, context.start) {
  slowdown_ = ctx_.scenario.cluster.slowdown_of(rank);
  trace_.workers = ctx_.topology.world_size();
  trace_.gpus_per_node = ctx_.topology.gpus_per_node();
  trace_.measured = true;
  if (!ctx_.device.is_cuda())
    p2p_issuer_ = std::make_unique<NormalThread>();
  if (ctx_.place != nullptr && ctx_.place->tensor_parallel())
    ctx_.model.set_tensor_reduce([this](torch::Tensor& t, bool max) { tensor_reduce(t, max); });
}

void RealWorker::tensor_reduce(torch::Tensor& t, bool max) {
  const Group& g = *ctx_.place->tensor;
  if (max) { // the loss's stabiliser: no data the simulator prices (one value per token)
    std::vector<torch::Tensor> v{t};
    c10d::AllreduceOptions o;
    o.reduceOp = c10d::ReduceOp::MAX;
    ctx_.group(g, current_stream)->allreduce(v, o)->wait(ctx_.timeout);
    return;
  }
  // Traced as the simulator names the layer's TP collectives' kind (runtime/op_label.h).
  CollectiveCall call;
  call.op = CollectiveOp::all_reduce;
  call.group = &g;
  call.step = tensor_step_;
  call.name = "tensor-parallel all-reduce";
  auto h = start_on(call, t);
  wait(h);
}

void RealWorker::issue_p2p(const std::function<void()>& start) {
  if (p2p_issuer_ && on_idle_thread())
    p2p_issuer_->run(start);
  else
    start();
}

BufferId RealWorker::declare(const BufferDecl& decl) {
  decls_.push_back(decl);
  tensors_.push_back(torch::zeros({decl.elements}, options()));
  static_bytes_ += static_cast<double>(decl.elements) * 4;
  // The model's parameters start from the same seeded values on every rank.
  if (decl.category == MemoryCategory::params && decl.elements == ctx_.model.param_count())
    ctx_.model.init_params(tensors_.back(), ctx_.scenario.seed);
  memory_changed();
  return static_cast<BufferId>(decls_.size()) - 1;
}

const BufferDecl& RealWorker::buffer(BufferId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= decls_.size())
    throw std::logic_error(fmt::format("worker {}: no buffer {}", rank_, id));
  return decls_[static_cast<std::size_t>(id)];
}

torch::Tensor RealWorker::tensor(Slice s) const {
  const auto& t = tensors_.at(static_cast<std::size_t>(s.buffer));
  if (s.offset < 0 || s.count < 0 || s.offset + s.count > t.numel())
    throw std::logic_error(fmt::format("worker {}: slice [{}, +{}) outside buffer '{}' of {}",
                                       rank_, s.offset, s.count, buffer(s.buffer).name, t.numel()));
  return t.narrow(0, s.offset, s.count);
}

double RealWorker::now() const {
  return streams_.host_now();
}

void RealWorker::record(StreamKind stream, const OpLabel& label, StreamMark start, StreamMark end,
                        MicroBatch mb, double bytes, const std::string& detail,
                        const CollectiveCall* call, double received) {
  heartbeat();
  std::lock_guard lock(mutex_);
  if (streams_.on_gpu() && std::getenv("OVERLAPSIM_CUDA_MEMORY_LOG") != nullptr) {
    // Diagnostics: each time the allocator's total grows by 256 MiB, the op that saw it.
    const auto [current, peak] = streams_.device_allocated_bytes();
    if (current > logged_device_bytes_ + 256.0 * 1024 * 1024) {
      fmt::print(stderr, "rank {} {} '{}': {:.2f} GiB allocated on the device (peak {:.2f})\n",
                 rank_, stream == StreamKind::comm ? "comm" : "compute", label.name,
                 current / (1 << 30), peak / (1 << 30));
      logged_device_bytes_ = current;
    }
  }
  if (start.event >= 0 || end.event >= 0)
    pending_timings_.push_back(PendingTiming{trace_.events.size(), start, end});
  if (start_when_ready_ && call == nullptr && start.event < 0) {
    auto& ready = stream_ready_[static_cast<std::size_t>(stream)];
    if (ready >= 0)
      start.host_s = std::min(start.host_s, ready);
    ready = end.host_s;
  }
  TraceEvent e;
  e.start = start.host_s;
  e.end = end.host_s;
  e.worker = rank_;
  e.stream = stream;
  e.category = label.category;
  e.name = trace_.intern(label.name);
  e.detail = detail.empty() ? -1 : trace_.intern(detail);
  e.step = mb.step;
  e.micro_batch = mb.index;
  e.bytes = bytes;
  e.received = received;
  if (call != nullptr && call->group != nullptr) {
    e.group = call->group->id;
    e.group_size = call->group->size();
    e.peer = call->peer;
  }
  trace_.events.push_back(e);
}

void RealWorker::CompletionSignal::notify() {
  { std::lock_guard lock(mutex); } // a waiter between its check and its wait then sees it
  cv.notify_all();
}

void RealWorker::start_ops_when_ready(bool on) {
  std::lock_guard lock(mutex_);
  start_when_ready_ = on;
  stream_ready_ = {-1.0, -1.0};
}

void RealWorker::waited_until(double at) {
  if (!start_when_ready_)
    return;
  std::lock_guard lock(mutex_);
  auto& ready = stream_ready_[static_cast<std::size_t>(current_stream)];
  ready = std::max(ready, at);
}

void RealWorker::memory_changed() {
  std::lock_guard lock(mutex_);
  trace_.memory.push_back(MemorySample{now(), rank_, static_bytes_ + activation_bytes_});
  if (trace_.peak_memory.empty())
    trace_.peak_memory.assign(static_cast<std::size_t>(trace_.workers), MemoryByCategory{});
  auto& peak = trace_.peak_memory[static_cast<std::size_t>(rank_)];
  MemoryByCategory now_bytes{};
  for (std::size_t i = 0; i < decls_.size(); ++i)
    now_bytes[static_cast<std::size_t>(decls_[i].category)] +=
        static_cast<double>(decls_[i].elements) * 4;
  now_bytes[static_cast<std::size_t>(MemoryCategory::activations)] = activation_bytes_;
  for (std::size_t c = 0; c < peak.size(); ++c)
    peak[c] = std::max(peak[c], now_bytes[c]);
}

void RealWorker::resolve_timings() {
  std::lock_guard lock(mutex_);
  for (const auto& p : pending_timings_) {
    auto& e = trace_.events[p.event];
    e.start = streams_.seconds(p.start);
    e.end = std::max(e.start, streams_.seconds(p.end));
  }
  pending_timings_.clear();
  for (const auto& [index, at] : pending_steps_)
    trace_.steps[index].time = streams_.seconds(at);
  pending_steps_.clear();
  for (const auto& [index, loss] : pending_losses_)
    losses_[index].loss = loss.item<double>();
  pending_losses_.clear();
}

const Trace& RealWorker::trace() {
  resolve_timings();
  return trace_;
}

const std::vector<LossRecord>& RealWorker::losses() {
  resolve_timings();
  return losses_;
}

StreamMark RealWorker::finish_op(StreamMark start) {
  // The ACCO paper's straggler: sleep after each op, for (slowdown - 1) times its duration. Every
  // op the simulator runs on the GPU (optimizer steps and copies too) is slowed, as there. Only
  // then does the host need to wait for the device.
  if (slowdown_ > 1.0) {
    streams_.drain();
    const StreamMark end = streams_.mark();
    const double took = streams_.seconds(end) - streams_.seconds(start);
    std::this_thread::sleep_for(std::chrono::duration<double>((slowdown_ - 1) * took));
  }
  const StreamMark end = streams_.mark();
  // On a GPU the host stays at most one op ahead of each stream: it waits for the previous op
  // to finish (this one is queued behind it, so the device never idles for it). Unbounded, a
  // thread enqueues micro-batches as fast as it can launch them: "accumulate while the round
  // runs" (ACCO, DPU) then counts launches instead of the device's work, and memory the host
  // released waits for the device (measured on an H100: 77 GiB and out of memory for an MLP
  // that needs 4).
  auto& previous = last_op_end_[static_cast<std::size_t>(current_stream)];
  if (previous.event >= 0)
    streams_.wait_for(previous);
  previous = end;
  return end;
}

void RealWorker::bind(BufferId params, BufferId grads) {
  if (params != bound_params_) {
    ctx_.model.bind_params(whole(params));
    bound_params_ = params;
  }
  if (grads >= 0 && grads != bound_grads_) {
    ctx_.model.bind_grads(whole(grads));
    bound_grads_ = grads;
  }
}

void RealWorker::forward(LayerRange layers, MicroBatch mb, BufferId params) {
  if (!pipelined()) {
    layers_forward(layers, mb, params, torch::Tensor());
    return;
  }
  // A stage runs whole micro-batches: the schedule may have run this one's forward already, ahead
  // of the algorithm's own order (stage_forward, from backward).
  if (layers.first != 0 || layers.last != ctx_.model.layers())
    throw std::invalid_argument(
        "this algorithm runs the forward of part of its model at a time; a pipeline stage runs "
        "whole micro-batches (parallelism.pipeline > 1 composes with algorithms whose forward "
        "is the stage's, issue 65)");
  if (mb.step == forwarded_step_ && mb.index < forwarded_)
    return;
  stage_forward(mb, params);
}

void RealWorker::stage_forward(MicroBatch mb, BufferId params) {
  if (mb.step != forwarded_step_)
    forwarded_step_ = mb.step, forwarded_ = 0;
  finish_sends(false);
  const int b = ctx_.scenario.training.micro_batch;
  torch::Tensor input;
  if (!ctx_.place->first())
    input = receive(false, false, mb, ctx_.model.input_shape(b));
  layers_forward({0, ctx_.model.layers()}, mb, params, input);
  if (!ctx_.place->last()) {
    const auto& a = activations_.at({mb.step, mb.index});
    send(true, false, mb, a.outputs.back().detach());
  }
  ++forwarded_;
}

void RealWorker::layers_forward(LayerRange layers, MicroBatch mb, BufferId params,
                                torch::Tensor input) {
  const StreamMark start = streams_.mark();
  bind(params, -1);
  tensor_step_ = mb.step;
  auto& a = activations_[{mb.step, mb.index}];
  const int count = ctx_.model.layers();
  if (layers.first == 0) {
    // Disjoint samples on every rank: the k-th micro-batch of rank r takes global samples
    // [(k W + r) B, (k W + r + 1) B), so one rank with W x B samples sees the same data. Under
    // pipeline parallelism r and W are the data-parallel rank and size: every stage of a
    // pipeline reads the same samples (the first its inputs, the last its targets).
    const int b = ctx_.scenario.training.micro_batch;
    const std::int64_t k = micro_batches_started_++;
    const int r = ctx_.place != nullptr ? ctx_.place->data_rank : rank_;
    const int w = ctx_.place != nullptr ? ctx_.place->data_size : ctx_.topology.world_size();
    a.batch = ctx_.data.batch((k * w + r) * b, b);
    a.batch.input = a.batch.input.to(ctx_.device);
    a.batch.target = a.batch.target.to(ctx_.device);
    a.inputs.assign(static_cast<std::size_t>(count), torch::Tensor());
    a.outputs.assign(static_cast<std::size_t>(count), torch::Tensor());
  }
  double kept = 0;
  for (int l = layers.first; l < layers.last; ++l) {
    const auto i = static_cast<std::size_t>(l);
    if (l == 0)
      a.inputs[i] = input.defined() ? input.requires_grad_(true) : a.batch.input;
    else
      a.inputs[i] = a.outputs[i - 1].detach().requires_grad_(true);
    a.outputs[i] = ctx_.model.run_layer(l, a.inputs[i], a.batch);
    kept += static_cast<double>(a.outputs[i].numel()) * 4;
  }
  activation_bytes_ += kept;
  memory_changed();
  if (layers.last == count && ctx_.model.computes_loss()) {
    // On a GPU the loss stays on the device until the end: reading it now would wait for it.
    const auto loss = a.outputs.back().detach();
    std::lock_guard lock(mutex_);
    losses_.push_back(LossRecord{mb.step, mb.index, 0.0, now()});
    if (loss.is_cuda())
      pending_losses_.emplace_back(losses_.size() - 1, loss);
    else
      losses_.back().loss = loss.item<double>();
  }
  record(current_stream, op_label(ctx_.scenario.model.spec, layers, LayerPass::forward), start,
         finish_op(start), mb);
}

void RealWorker::backward(LayerRange layers, MicroBatch mb, BufferId params, BufferId grads) {
  const int count = ctx_.model.layers();
  torch::Tensor output_grad;
  if (pipelined() && layers.last == count) {
    // This micro-batch's backward begins: the schedule's forwards before it first (1F1B's
    // warm-up and one-forward-one-backward), then the gradient from the next stage.
    const int before = std::min(ctx_.scenario.training.grad_accum, mb.index + ctx_.place->ahead);
    if (mb.step != forwarded_step_)
      forwarded_step_ = mb.step, forwarded_ = 0;
    while (forwarded_ < before)
      stage_forward(MicroBatch{mb.step, forwarded_}, params);
    finish_sends(false);
    if (!ctx_.place->last())
      output_grad =
          receive(true, true, mb, ctx_.model.input_shape(ctx_.scenario.training.micro_batch));
  }
  const StreamMark start = streams_.mark();
  bind(params, grads);
  tensor_step_ = mb.step;
  // A step's first micro-batch starts its gradients afresh (see runtime.h).
  if (mb.index == 0 && layers.last == count) {
    whole(grads).zero_();
    if (ctx_.model.tied_role() == TiedRole::copy)
      ctx_.model.tied_copy_grad().zero_();
  }
  const auto it = activations_.find({mb.step, mb.index});
  if (it == activations_.end())
    throw std::logic_error(fmt::format("worker {}: backward of micro-batch ({}, {}) before its "
                                       "forward",
                                       rank_, mb.step, mb.index));
  auto& a = it->second;
  double freed = 0;
  for (int l = layers.last - 1; l >= layers.first; --l) {
    const auto i = static_cast<std::size_t>(l);
    if (l + 1 == count) {
      if (output_grad.defined())
        torch::autograd::backward({a.outputs[i]}, {output_grad});
      else
        torch::autograd::backward({a.outputs[i]});
    } else {
      const auto& grad = a.inputs[i + 1].grad();
      if (!grad.defined())
        throw std::logic_error(
            fmt::format("worker {}: backward of layer {} before layer {}", rank_, l, l + 1));
      torch::autograd::backward({a.outputs[i]}, {grad});
      freed += static_cast<double>(a.outputs[i + 1].numel()) * 4;
      a.inputs[i + 1] = torch::Tensor();
      a.outputs[i + 1] = torch::Tensor();
    }
  }
  torch::Tensor input_grad;
  if (layers.first == 0) {
    if (pipelined() && !ctx_.place->first())
      input_grad = a.inputs[0].grad();
    freed += static_cast<double>(a.outputs[0].numel()) * 4;
    activations_.erase(it);
  }
  activation_bytes_ = std::max(0.0, activation_bytes_ - freed);
  memory_changed();
  record(current_stream, op_label(ctx_.scenario.model.spec, layers, LayerPass::backward), start,
         finish_op(start), mb);
  if (input_grad.defined())
    send(false, true, mb, input_grad);
}

torch::Tensor RealWorker::receive(bool from_next, bool gradient, MicroBatch mb,
                                  const std::vector<std::int64_t>& shape) {
  const auto& p = *ctx_.place;
  CollectiveCall call;
  call.op = CollectiveOp::recv;
  call.group = from_next ? p.to_next : p.to_previous;
  call.peer = from_next ? p.next : p.previous;
  call.tag = gradient ? 2 : 1; // activations forward, their gradients back: FIFO each
  call.step = mb.step;
  // Named as the simulator names it: the analysis knows a pipeline receive by its prefix
  // (runtime/op_label.h) and matches it with its send by name, step and end.
  call.name =
      fmt::format("{}{}>{} micro-batch {}", gradient ? kRecvGradientPrefix : kRecvActivationPrefix,
                  call.peer, rank_, mb.index);
  auto data = torch::empty(shape, options());
  auto handle = start_on(call, data.view({-1}));
  wait(handle);
  return data;
}

void RealWorker::send(bool to_next, bool gradient, MicroBatch mb, torch::Tensor data) {
  const auto& p = *ctx_.place;
  CollectiveCall call;
  call.op = CollectiveOp::send;
  call.group = to_next ? p.to_next : p.to_previous;
  call.peer = to_next ? p.next : p.previous;
  call.tag = gradient ? 2 : 1;
  call.step = mb.step;
  call.name = fmt::format("send {} {}>{} micro-batch {}", gradient ? "gradient" : "activation",
                          rank_, call.peer, mb.index);
  sends_.push_back(start_on(call, data.contiguous().view({-1})));
}

void RealWorker::finish_sends(bool all) {
  while (!sends_.empty()) {
    if (all)
      wait(sends_.front());
    else if (!test(sends_.front()))
      return;
    sends_.pop_front();
  }
}

void RealWorker::optimizer_step(const OptimizerStep& op) {
  if (pipelined()) {
    finish_sends(true); // every message of the step has arrived: its peer's backward is done
    sum_tied_gradient(op);
  }
  optimizer_update(op);
  if (pipelined())
    share_tied_embedding(op);
}

void RealWorker::sum_tied_gradient(const OptimizerStep& op) {
  const TiedRole role = ctx_.model.tied_role();
  if (role == TiedRole::none || !op.commit)
    return;
  const std::int64_t n = ctx_.model.tied_elements();
  if (role == TiedRole::owner && (op.grads.offset != 0 || op.grads.count < n))
    throw std::invalid_argument(
        "under pipeline parallelism the tied word embedding is summed between the first and the "
        "last stage at the optimizer step: an algorithm must step its stage's whole model at once "
        "(DDP does)");
  torch::NoGradGuard no_grad;
  CollectiveCall call;
  call.op = CollectiveOp::all_reduce;
  call.step = op.step;
  torch::Tensor grad;
  if (role == TiedRole::copy) {
    // The algorithm summed the owner's gradient over its data-parallel group; the copy's, which
    // it does not know of, is summed here the same way.
    grad = ctx_.model.tied_copy_grad().view({-1});
    if (ctx_.place->data_size > 1) {
      call.group = ctx_.place->data;
      call.name = "all-reduce tied embedding copy";
      auto h = start_on(call, grad);
      wait(h);
    }
  } else {
    grad = tensor(Slice{op.grads.buffer, 0, n});
  }
  call.group = ctx_.place->embedding;
  call.name = "all-reduce tied embedding";
  auto h = start_on(call, grad);
  wait(h);
}

void RealWorker::share_tied_embedding(const OptimizerStep& op) {
  const TiedRole role = ctx_.model.tied_role();
  if (role == TiedRole::none || !op.commit)
    return;
  torch::NoGradGuard no_grad;
  CollectiveCall call;
  call.op = CollectiveOp::broadcast;
  call.group = ctx_.place->embedding;
  call.peer = call.group->ranks.front(); // the first stage owns it
  call.step = op.step;
  call.name = "broadcast tied embedding";
  auto data = role == TiedRole::copy
                  ? ctx_.model.tied_copy().view({-1})
                  : tensor(Slice{op.out.buffer >= 0 ? op.out.buffer : op.params.buffer, 0,
                                 ctx_.model.tied_elements()});
  auto h = start_on(call, data);
  wait(h);
}

void RealWorker::optimizer_update(const OptimizerStep& op) {
  const StreamMark start = streams_.mark();
  torch::NoGradGuard no_grad;
  torch::Tensor grad = tensor(op.grads);
  if (op.divisor.buffer >= 0)
    grad = grad / tensor(op.divisor).sum().item<double>();
  else
    grad = grad * op.grad_scale;
  optimizer_.step(op.state, tensor(op.params), grad,
                  tensor(op.out.buffer >= 0 ? op.out : op.params), op.commit);
  record(current_stream, op_label(op), start, finish_op(start), {op.step, -1});
}

void RealWorker::outer_step(const OuterStep& op) {
  const StreamMark start = streams_.mark();
  torch::NoGradGuard no_grad;
  torch::Tensor params = tensor(op.params);
  torch::Tensor anchor = tensor(op.anchor);
  apply_outer_step(params, anchor, tensor(op.momentum), op.lr, op.mu);
  if (op.local.buffer >= 0) {
    torch::Tensor local = tensor(op.local);
    merge_fragment(local, anchor, op.alpha);
    params = local;
  }
  // The inner optimizer's master copy continues from the new parameters, not its own.
  optimizer_.reload(op.inner_state, params);
  record(current_stream, op_label(op), start, finish_op(start), {op.step, -1});
}

void RealWorker::reload_master(Slice params, Slice state) {
  const StreamMark start = streams_.mark();
  optimizer_.reload(state, tensor(params));
  record(current_stream, op_label(MemoryOp::reload_master), start, finish_op(start), {-1, -1});
}

void RealWorker::replicator_phase(const ReplicatorPhase& op) {
  const StreamMark start = streams_.mark();
  auto view = [&](Slice sl) { return sl.buffer >= 0 ? tensor(sl) : torch::Tensor(); };
  const auto digest = run_replicator_phase(
      op, {view(op.grads), view(op.params), view(op.momentum), view(op.values), view(op.indices)});
  record(current_stream, op_label(op), start, finish_op(start), {op.step, -1}, 0,
         digest ? fmt::format("indices {:016x}", *digest) : std::string());
}

void RealWorker::copy(Slice from, Slice to) {
  const StreamMark start = streams_.mark();
  torch::NoGradGuard no_grad;
  tensor(to).copy_(tensor(from));
  record(current_stream, op_label(MemoryOp::copy), start, finish_op(start), {-1, -1});
}

void RealWorker::accumulate(Slice from, Slice to) {
  const StreamMark start = streams_.mark();
  torch::NoGradGuard no_grad;
  tensor(to).add_(tensor(from));
  record(current_stream, op_label(MemoryOp::accumulate), start, finish_op(start), {-1, -1});
}

void RealWorker::fill(Slice to, double value) {
  const StreamMark start = streams_.mark();
  torch::NoGradGuard no_grad;
  tensor(to).fill_(value);
  record(current_stream, op_label(MemoryOp::fill), start, finish_op(start), {-1, -1});
}

// NCCL's own reduce-scatter and all-gather, one call each (validate/shard_layout.h).
void RealWorker::start_nccl_reduce_scatter(State& s, torch::Tensor data, torch::Tensor out, int me,
                                           int n) {
  const std::int64_t total = data.numel(), largest = padded_shard(total, n);
  if (out.numel() != shard(0, total, me, n).count)
    throw std::logic_error(fmt::format("worker {}: '{}' writes {} elements, its shard has {}",
                                       rank_, s.call.name, out.numel(),
                                       shard(0, total, me, n).count));
  torch::Tensor input = pad_shards(data, n);
  torch::Tensor output = out.numel() == largest ? out : torch::empty({largest}, options());
  s.inputs = {input, output};
  s.works.push_back(s.group->_reduce_scatter_base(output, input));
  if (!output.is_same(out))
    s.finish = [out, output]() mutable { out.copy_(output.narrow(0, 0, out.numel())); };
}

void RealWorker::start_nccl_all_gather(State& s, torch::Tensor data, torch::Tensor out, int me,
                                       int n) {
  const std::int64_t total = out.numel(), largest = padded_shard(total, n);
  if (data.numel() != shard(0, total, me, n).count)
    throw std::logic_error(fmt::format("worker {}: '{}' gathers {} elements as shard {} of {}",
                                       rank_, s.call.name, data.numel(), me, total));
  torch::Tensor input = data;
  if (data.numel() != largest) {
    input = torch::zeros({largest}, options());
    input.narrow(0, 0, data.numel()).copy_(data);
  }
  torch::Tensor output = largest * n == total ? out : torch::empty({largest * n}, options());
  s.inputs = {input, output};
  s.works.push_back(s.group->_allgather_base(output, input));
  if (!output.is_same(out))
    s.finish = [out, output, n]() mutable { unpad_shards(output, out, n); };
}

CommHandle RealWorker::start(const CollectiveCall& call) {
  return start_on(call, call.data.buffer >= 0 ? tensor(call.data) : torch::zeros({0}, options()));
}

CommHandle RealWorker::start_on(const CollectiveCall& call, torch::Tensor data) {
  if (call.group == nullptr)
    throw std::logic_error(
        fmt::format("worker {}: collective '{}' without a group", rank_, call.name));
  const Group& g = *call.group;
  const int me = g.index_of(rank_);
  if (me < 0)
    throw std::logic_error(
        fmt::format("rank {} runs '{}' on a group it is not in", rank_, call.name));
  auto s = std::make_shared<State>();
  s->call = call;
  s->stream = current_stream;
  s->group = ctx_.group(g, current_stream);
  s->issued = streams_.mark(); // on a GPU the collective starts after what the stream issued
  const int n = g.size();
  s->bytes = static_cast<double>(data.numel()) * 4;
  auto peer_index = [&] {
    const int p = g.index_of(call.peer);
    if (p < 0)
      throw std::logic_error(fmt::format("worker {}: '{}' names peer {} outside its group", rank_,
                                         call.name, call.peer));
    return p;
  };
  switch (call.op) {
  case CollectiveOp::all_reduce:
    s->inputs = {data};
    s->works.push_back(s->group->allreduce(s->inputs));
    break;
  case CollectiveOp::broadcast: {
    s->inputs = {data};
    c10d::BroadcastOptions o;
    o.rootRank = peer_index();
    s->works.push_back(s->group->broadcast(s->inputs, o));
    break;
  }
  case CollectiveOp::reduce: {
    s->inputs = {data};
    c10d::ReduceOptions o;
    o.rootRank = peer_index();
    s->works.push_back(s->group->reduce(s->inputs, o));
    break;
  }
  case CollectiveOp::reduce_scatter: {
    if (streams_.on_gpu()) { // NCCL's own reduce-scatter, one call
      start_nccl_reduce_scatter(*s, data, tensor(call.out), me, n);
      break;
    }
    // Gloo in LibTorch 1.13 has no reduce-scatter: an all-to-all moves exactly its volume (each
    // rank receives every peer's copy of its shard), then the copies are summed here. It runs in
    // pieces, one after the other on the group's thread, as NCCL's ring runs in chunks, each what
    // the link moves in about 20 ms (validate/collective_pieces.h).
    auto out = tensor(call.out);
    const std::int64_t mine = shard(0, data.numel(), me, n).count;
    if (out.numel() != mine)
      throw std::logic_error(fmt::format("worker {}: '{}' writes {} elements, its shard has {}",
                                         rank_, call.name, out.numel(), mine));
    const std::int64_t largest = shard(0, data.numel(), 0, n).count;
    const std::int64_t piece = ctx_.gloo_piece_elements;
    std::vector<std::function<void()>> finishers;
    for (std::int64_t a = 0; a < largest; a += piece) {
      std::vector<std::int64_t> in_split, out_split;
      std::vector<torch::Tensor> parts;
      for (int j = 0; j < n; ++j) {
        const Slice sj = shard(0, data.numel(), j, n);
        const std::int64_t len = std::clamp<std::int64_t>(sj.count - a, 0, piece);
        in_split.push_back(len);
        parts.push_back(data.narrow(0, sj.offset + std::min(a, sj.count), len));
      }
      const std::int64_t len_mine = in_split[static_cast<std::size_t>(me)];
      out_split.assign(static_cast<std::size_t>(n), len_mine);
      auto input = torch::cat(parts);
      auto output = torch::empty({n * len_mine}, options());
      s->inputs.push_back(input);
      s->inputs.push_back(output);
      s->works.push_back(s->group->alltoall_base(output, input, out_split, in_split));
      if (len_mine > 0)
        finishers.push_back([out, output, a, n, len_mine]() mutable {
          out.narrow(0, a, len_mine).copy_(output.view({n, len_mine}).sum(0));
        });
    }
    s->finish = [finishers]() {
      for (const auto& f : finishers)
        f();
    };
    break;
  }
  case CollectiveOp::all_gather: {
    if (streams_.on_gpu()) { // NCCL's own all-gather, one call
      start_nccl_all_gather(*s, data, tensor(call.out), me, n);
      break;
    }
    // Gloo's list all-gather wants equal sizes: every shard's piece is padded to the largest.
    // In pieces, like reduce-scatter.
    auto out = tensor(call.out);
    const std::int64_t largest = shard(0, out.numel(), 0, n).count;
    if (data.numel() != shard(0, out.numel(), me, n).count)
      throw std::logic_error(fmt::format("worker {}: '{}' gathers {} elements as shard {} of {}",
                                         rank_, call.name, data.numel(), me, out.numel()));
    std::vector<std::function<void()>> finishers;
    for (std::int64_t a = 0; a < largest; a += ctx_.gloo_piece_elements) {
      const std::int64_t piece = std::min(ctx_.gloo_piece_elements, largest - a);
      auto padded = torch::zeros({piece}, options());
      const std::int64_t have = std::clamp<std::int64_t>(data.numel() - a, 0, piece);
      if (have > 0)
        padded.narrow(0, 0, have).copy_(data.narrow(0, a, have));
      std::vector<torch::Tensor> inputs = {padded};
      std::vector<std::vector<torch::Tensor>> outputs(1);
      for (int j = 0; j < n; ++j)
        outputs[0].push_back(torch::empty({piece}, options()));
      s->works.push_back(s->group->allgather(outputs, inputs));
      s->inputs.push_back(padded);
      s->outputs.push_back(outputs[0]);
      finishers.push_back([out, gathered = outputs[0], a, n]() mutable {
        for (int j = 0; j < n; ++j) {
          const Slice part = shard(0, out.numel(), j, n);
          const std::int64_t len = std::clamp<std::int64_t>(
              part.count - a, 0, gathered[static_cast<std::size_t>(j)].numel());
          if (len > 0)
            out.narrow(0, part.offset + a, len)
                .copy_(gathered[static_cast<std::size_t>(j)].narrow(0, 0, len));
        }
      });
    }
    s->finish = [finishers]() {
      for (const auto& f : finishers)
        f();
    };
    break;
  }
  case CollectiveOp::all_to_all: {
    auto out = call.out.buffer >= 0 ? tensor(call.out) : data;
    s->scratch = torch::empty_like(data);
    s->inputs = {data};
    std::vector<std::int64_t> none;
    s->works.push_back(s->group->alltoall_base(s->scratch, s->inputs[0], none, none));
    // The scratch tensor, not the state: the state owns this function (a cycle would leak it).
    s->finish = [scratch = s->scratch, out]() mutable { out.copy_(scratch); };
    break;
  }
  case CollectiveOp::send:
    s->inputs = {data};
    issue_p2p([&] { s->works.push_back(s->group->send(s->inputs, peer_index(), call.tag)); });
    break;
  case CollectiveOp::recv:
    s->inputs = {data};
    s->received = s->bytes;
    s->bytes = 0;
    issue_p2p([&] { s->works.push_back(s->group->recv(s->inputs, peer_index(), call.tag)); });
    break;
  case CollectiveOp::barrier:
    s->works.push_back(s->group->barrier());
    break;
  }
  s->bytes = bytes_sent(call.op, n, s->bytes);
  // Gloo's send and receive works have no future: c10d::Work::getFuture throws, and the c10::Error
  // it builds symbolizes a backtrace over LibTorch's symbol tables, 1-2 ms of CPU a message on a
  // 2-core machine (perf: a fifth of a profile's CPU time in _dl_addr) beside the transfer it
  // times. Ask only works that have one.
  const bool has_future = streams_.on_gpu() || !is_point_to_point(call.op);
  if (has_future) { // the completion time, taken by c10d's thread the moment the work finishes
    auto completed = s->completed;
    auto& ctx = ctx_;
    s->works.back()->getFuture()->addCallback(
        [completed, &ctx, completions = completions_](c10::ivalue::Future&) {
          completed->store(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.start).count());
          completions->notify();
        });
  } else {
    // Work without a future (Gloo's send/recv): its waiter thread takes the completion time (the
    // thread inherits the issuing thread's policy: issue_p2p's normal thread, or the caller's).
    State* state = s.get();
    auto& ctx = ctx_;
    issue_p2p([state, &ctx, this] {
      state->waiter = std::thread([state, &ctx, completions = completions_] {
        try {
          state->works.back()->wait(ctx.timeout);
          state->completed->store(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - ctx.start).count());
        } catch (...) {
          state->waiter_error = std::current_exception();
        }
        state->waited.store(true);
        completions->notify();
      });
    });
  }
  ++seq_[g.id];
  ++in_flight_;
  return CommHandle{s};
}

void RealWorker::wait(CommHandle& handle) {
  if (!handle.valid())
    return;
  auto& s = static_cast<State&>(*handle.state);
  if (s.done)
    return;
  try {
    if (!streams_.on_gpu()) {
      // Woken by the completion or after a slice (validate/thread_policy.h, kCommWaitSlice),
      // whichever comes first; the blocking wait below then returns at once, or reports the
      // timeout. The last work's completion holds for the others (one group's works run in
      // order).
      const auto deadline = std::chrono::steady_clock::now() + ctx_.timeout;
      const auto done = [&] {
        return s.waiter.joinable() ? s.waited.load() : s.completed->load() >= 0;
      };
      std::unique_lock lock(completions_->mutex);
      while (!done() && std::chrono::steady_clock::now() < deadline)
        completions_->cv.wait_for(lock, kCommWaitSlice);
    }
    if (s.waiter.joinable()) {
      s.waiter.join();
      if (s.waiter_error)
        std::rethrow_exception(s.waiter_error);
    } else {
      for (auto& work : s.works)
        work->wait(ctx_.timeout);
    }
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("rank {}: '{}' failed: {}", rank_,
                                         s.call.name.empty() ? to_string(s.call.op) : s.call.name,
                                         e.what()));
  }
  if (s.finish)
    s.finish();
  if (s.call.average && s.call.op == CollectiveOp::all_reduce) {
    // Gloo's all-reduce sums; the call asked for the mean (NCCL's ncclAvg).
    torch::NoGradGuard no_grad;
    s.inputs.front().div_(static_cast<double>(s.call.group->size()));
  }
  s.done = true;
  --in_flight_;
  const OpLabel label = op_label(s.call);
  if (streams_.on_gpu()) {
    // NCCL runs the collective on its stream, which waited for this stream at the start; the
    // work's wait() made this stream wait for it: the two marks bracket it on the device.
    record(StreamKind::comm, label, s.issued, streams_.mark(), {s.call.step, -1}, s.bytes, "nccl",
           &s.call, s.received);
    return;
  }
  // The work's completion time, or now when this thread then did part of the collective itself
  // (the sums and copies of Gloo's stand-in reduce-scatter and all-gather, the mean's division):
  // the data is ready only after them, and leaving them out hid up to a millisecond a step
  // between the op and its consumer.
  double end = s.completed->load();
  if (end < 0 || s.finish || (s.call.average && s.call.op == CollectiveOp::all_reduce))
    end = now();
  double begin = s.issued.host_s;
  // Ops on one process group run one after the other (one Gloo thread, like one NCCL stream):
  // this one started when it was issued or when the previous one ended, whichever is later. Not
  // a message: Gloo's send and receive run on the calling thread beside the group's other ops
  // (moved past a receive that ended later, CDP's partial-gradient sends began after their
  // receives had ended).
  if (s.call.op != CollectiveOp::send && s.call.op != CollectiveOp::recv) {
    std::lock_guard lock(mutex_);
    auto& busy = group_busy_until_[s.group.get()];
    begin = std::min(end, std::max(begin, busy));
    busy = std::max(busy, end);
  }
  record(StreamKind::comm, label, StreamMark{begin}, StreamMark{end}, {s.call.step, -1}, s.bytes,
         "gloo", &s.call, s.received);
  waited_until(end);
}

bool RealWorker::test(CommHandle& handle) {
  if (!handle.valid())
    return true;
  auto& s = static_cast<State&>(*handle.state);
  if (!s.done && (s.waiter.joinable() ? s.waited.load() : s.works.back()->isCompleted()))
    wait(handle);
  return s.done;
}

std::size_t RealWorker::wait_any(std::span<CommHandle> handles) {
  if (handles.empty())
    throw std::logic_error(fmt::format("worker {}: wait_any without a handle", rank_));
  // c10d has no wait-any (a Work waits for itself; Gloo's send and receive have no future to
  // chain): each handle is asked as test() asks it, and between rounds the thread sleeps on the
  // completion signal that every collective's callback or waiter thread raises, or a slice
  // (validate/thread_policy.h, kCommWaitSlice), as wait() does. The first found done is waited
  // for, which records it.
  const auto first_done = [&]() -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < handles.size(); ++i) {
      if (!handles[i].valid())
        return i;
      const auto& s = static_cast<const State&>(*handles[i].state);
      if (s.done || (s.waiter.joinable() ? s.waited.load() : s.works.back()->isCompleted()))
        return i;
    }
    return std::nullopt;
  };
  const auto deadline = std::chrono::steady_clock::now() + ctx_.timeout;
  std::optional<std::size_t> found;
  {
    std::unique_lock lock(completions_->mutex);
    while (!(found = first_done()) && std::chrono::steady_clock::now() < deadline &&
           !(ctx_.aborted != nullptr && ctx_.aborted->load()))
      completions_->cv.wait_for(lock, kCommWaitSlice);
  }
  // None done in time: the first one's wait reports its timeout (or its failure).
  const std::size_t index = found.value_or(0);
  wait(handles[index]);
  return index;
}

std::size_t RealWorker::wait_any_or_signal(std::span<CommHandle> handles,
                                           std::span<const int> signals) {
  if (handles.empty() && signals.empty())
    throw std::logic_error(fmt::format("worker {}: wait_any_or_signal without a handle", rank_));
  // As wait_any, asking the signal queues too in every round (a notify wakes the waits on its
  // own condition variable, so a signal is seen within one slice).
  const auto first_ready = [&]() -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < handles.size(); ++i) {
      if (!handles[i].valid())
        return i;
      const auto& s = static_cast<const State&>(*handles[i].state);
      if (s.done || (s.waiter.joinable() ? s.waited.load() : s.works.back()->isCompleted()))
        return i;
    }
    std::lock_guard lock(mutex_);
    for (std::size_t k = 0; k < signals.size(); ++k)
      if (const auto it = signals_.find(signals[k]); it != signals_.end() && !it->second.empty())
        return handles.size() + k;
    return std::nullopt;
  };
  const auto deadline = std::chrono::steady_clock::now() + ctx_.timeout;
  std::optional<std::size_t> found;
  {
    std::unique_lock lock(completions_->mutex);
    while (!(found = first_ready()) && std::chrono::steady_clock::now() < deadline &&
           !(ctx_.aborted != nullptr && ctx_.aborted->load()))
      completions_->cv.wait_for(lock, kCommWaitSlice);
  }
  if (!found && handles.empty())
    throw std::runtime_error(fmt::format("rank {}: no signal {} in time", rank_, signals[0]));
  const std::size_t index = found.value_or(0);
  if (index < handles.size())
    wait(handles[index]);
  return index;
}

void RealWorker::notify(int signal, std::int64_t value) {
  // What this stream issued before the signal happens before what the other stream issues after
  // hearing it. On a GPU that is an event on this stream, which the receiver's stream waits for
  // on the device: draining this stream on the host instead left the device idle while the host
  // launched the next op (DDP's backward ran 14% slower than profiled on an H100).
  const StreamMark at = streams_.mark();
  {
    std::lock_guard lock(mutex_);
    signals_[signal].emplace_back(value, at);
  }
  signalled_.notify_all();
}

std::int64_t RealWorker::await(int signal) {
  std::pair<std::int64_t, StreamMark> v;
  {
    std::unique_lock lock(mutex_);
    auto& q = signals_[signal];
    const auto ready = [&] { return !q.empty() || ctx_.aborted->load(); };
    // With collectives in flight a CPU thread waits in slices, as in wait() (their data may wait
    // for Gloo's loop to get the core).
    while (!ready()) {
      if (!streams_.on_gpu() && in_flight_.load() > 0)
        signalled_.wait_for(lock, kCommWaitSlice, ready);
      else
        signalled_.wait(lock, ready);
    }
    if (q.empty())
      throw std::runtime_error(fmt::format("rank {}: stopped: the other stream failed", rank_));
    v = q.front();
    q.pop_front();
  }
  streams_.order_after(v.second);
  if (v.second.event < 0)
    waited_until(v.second.host_s);
  return v.first;
}

std::optional<std::int64_t> RealWorker::poll(int signal) {
  // "Has it happened yet?" is asked where this stream's device work is (ACCO and DPU ask after
  // each micro-batch whether the round is done), so on a GPU the host first lets its stream
  // finish, then asks whether the sender's stream got to the signal: both in device time. Asked
  // from the host alone, one op ahead of the device, ACCO accumulated 2 micro-batches per round
  // where the device's timing gives 1.
  streams_.drain();
  std::lock_guard lock(mutex_);
  auto& q = signals_[signal];
  if (q.empty() || !streams_.reached(q.front().second))
    return std::nullopt;
  const auto v = q.front().first;
  q.pop_front();
  return v;
}

void RealWorker::abort() {
  ctx_.aborted->store(true);
  signalled_.notify_all();
}

void RealWorker::step_done(int step, double samples) {
  const StreamMark at = streams_.mark(); // on a GPU: when the stream gets there
  std::lock_guard lock(mutex_);
  if (at.event >= 0)
    pending_steps_.emplace_back(trace_.steps.size(), at);
  // A pipeline's ranks train the same samples: each reports its share (ParallelPlace).
  trace_.steps.push_back(StepMark{
      at.host_s, rank_, step, samples * (ctx_.place != nullptr ? ctx_.place->sample_share : 1)});
}

void RealWorker::record_accumulation(int step, int micro_batches) {
  std::lock_guard lock(mutex_);
  trace_.accumulations.push_back(AccumulationMark{rank_, step, micro_batches});
}

} // namespace overlapsim::real
