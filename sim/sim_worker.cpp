#include "sim/sim_worker.h"

#include "sim/gpu_draws.h"
#include "sim/stream_exec.h"

#include "hw/backward_split.h"
#include "hw/compute_cost.h"
#include "hw/transformer_ops.h"

#include "algorithms/model_state.h"
#include "algorithms/replicator_cost.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <random>
#include <stdexcept>
#include <utility>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

// A started collective: done once this rank's part has finished.
class SimWorker::State final : public CommState {
public:
  State() : done_sem(sg4::Semaphore::create(0)) {}
  void wait() {
    if (!done) {
      done_sem->acquire();
      done_sem->release(); // let any other waiter through too
    }
  }
  void finish() {
    done = true;
    done_sem->release();
    for (const auto& w : watchers)
      w->release();
  }
  bool done = false;
  sg4::SemaphorePtr done_sem;
  // wait_any's semaphores, released by the first of its handles to finish: actors run one at a
  // time in SimGrid, so the list needs no lock.
  std::vector<sg4::SemaphorePtr> watchers;
};

namespace {
const parallel::StageView* stage_of(const SimContext& context, int rank) {
  if (!context.parallel)
    return nullptr;
  const auto& p = *context.parallel;
  return &p.stages[static_cast<std::size_t>(p.layout.coordinates(rank).pipeline)];
}
} // namespace

void SimContext::record(const TraceEvent& event) {
  trace.events.push_back(event);
  if (spill && trace.events.size() >= kEventBlock) {
    spill(trace.events);
    trace.events.clear(); // its capacity stays for the next block
  }
}

ParallelPlacement::ParallelPlacement(const scenario::Scenario& s, const Topology& topology)
    : layout(parallel::ParallelLayout::of(s)), stages(parallel::stage_views(s, layout)) {
  for (int r = 0; r < topology.world_size(); ++r)
    if (auto members = layout.data_group(r); !data_views.contains(members))
      data_views.emplace(members, topology.view(members));
  // From the op lists of a transformer at the rank's tensor-parallel shard; half for other models.
  const auto& dims = s.model.transformer;
  const int t = layout.tensor();
  const hw::TensorParallel tp{t, s.parallelism.sequence_parallel && t > 1};
  const double b = s.training.micro_batch, seq = s.training.seq_len;
  const auto shares_on = [&](const hw::GpuSpec& gpu) {
    std::vector<std::vector<double>> out;
    const double block =
        dims ? hw::weight_gradient_share(hw::block_ops(*dims, b, seq, tp), gpu) : 0;
    for (const auto& view : stages) {
      auto& shares = out.emplace_back();
      for (const auto& layer : view.scenario.model.spec.layers)
        shares.push_back(!dims ? hw::kDefaultWeightGradientShare
                         : layer.name == "embedding"
                             ? hw::weight_gradient_share(hw::embedding_ops(*dims, b, seq, tp), gpu)
                         : layer.name == "head"
                             ? hw::weight_gradient_share(hw::head_ops(*dims, b, seq, tp), gpu)
                             : block);
    }
    return out;
  };
  weight_share = shares_on(s.cluster.gpu);
  if (s.cluster.node_types.empty())
    return;
  type_stages = node_type_stages(s, layout);
  for (const auto& type : s.cluster.node_types)
    type_weight_share.push_back(shares_on(type.gpu));
}

SimWorker::SimWorker(SimContext& context, int rank)
    : ctx_(context), rank_(rank), stage_(stage_of(context, rank)),
      host_(context.platform.gpus[static_cast<std::size_t>(rank)]),
      rng_(jitter_generator(context.scenario.seed, rank)), table_comm_(scenario().model.spec),
      checkpoints_(scenario().model.spec, scenario().model.checkpointing) {
  node_type_ = ctx_.scenario.cluster.node_type_of(rank / ctx_.scenario.cluster.gpus_per_node);
  if (ctx_.statistical)
    slowest_ = ctx_.statistical->of(rank);
  if (!ctx_.parallel)
    return;
  if (node_type_ >= 0)
    type_stage_ = &ctx_.parallel->type_stages[static_cast<std::size_t>(node_type_)]
                                             [static_cast<std::size_t>(stage_->stage)];
  // The pipeline's receive buffers (parallel/memory.h), allocated for the whole run.
  static_memory_[static_cast<std::size_t>(MemoryCategory::buffers)] += stage_->p2p_buffer_bytes;
  const auto& layout = ctx_.parallel->layout;
  view_ = &ctx_.parallel->data_views.at(layout.data_group(rank));
  if (layout.tensor() > 1)
    tensor_group_ = &ctx_.topology.group(layout.tensor_group(rank));
  sample_share_ = 1.0 / (layout.tensor() * layout.pipeline());
  if (!pipelined())
    return;
  const auto c = layout.coordinates(rank);
  const auto pair = [&](int peer) {
    return &ctx_.topology.group({std::min(peer, rank), std::max(peer, rank)});
  };
  // Interleaved 1F1B wraps: the last stage's chunk c feeds the first stage's chunk c + 1.
  const int p = stage_->stages, v = static_cast<int>(stage_->chunks.size());
  if (!stage_->first() || v > 1) {
    previous_ = layout.rank_of({c.tensor, c.data, (c.pipeline + p - 1) % p});
    to_previous_ = pair(previous_);
  }
  if (!stage_->last() || v > 1) {
    next_ = layout.rank_of({c.tensor, c.data, (c.pipeline + 1) % p});
    to_next_ = pair(next_);
  }
  // The stage's op order (one source for the simulator, the evaluator and the memory model), and
  // where in it the algorithm's j-th forward and j-th backward of each chunk end.
  const int m = ctx_.scenario.training.grad_accum;
  schedule_ = parallel::pipeline_schedule(
      parallel::parse_pipeline_schedule(scenario::to_string(ctx_.scenario.parallelism.schedule)), p,
      m, v)[static_cast<std::size_t>(stage_->stage)];
  forward_at_.resize(static_cast<std::size_t>(v));
  backward_at_.resize(static_cast<std::size_t>(v));
  using Kind = parallel::PipelineOp::Kind;
  const bool split = std::any_of(schedule_.begin(), schedule_.end(),
                                 [](const auto& op) { return op.kind == Kind::backward_weight; });
  for (std::size_t i = 0; i < schedule_.size(); ++i) {
    const auto& op = schedule_[i];
    if (op.kind == Kind::forward)
      forward_at_[static_cast<std::size_t>(op.chunk)].push_back(i);
    if (op.kind == (split ? Kind::backward_weight : Kind::backward))
      backward_at_[static_cast<std::size_t>(op.chunk)].push_back(i);
  }
}

BufferId SimWorker::declare(const BufferDecl& decl) {
  buffers_.push_back(decl);
  const std::int64_t resident = decl.resident >= 0 ? decl.resident : decl.elements;
  static_memory_[static_cast<std::size_t>(decl.category)] +=
      static_cast<double>(resident) * decl.element_bytes;
  return static_cast<BufferId>(buffers_.size()) - 1;
}

const BufferDecl& SimWorker::buffer(BufferId id) const {
  if (id < 0 || static_cast<std::size_t>(id) >= buffers_.size())
    throw std::logic_error(fmt::format("worker {}: no buffer {}", rank_, id));
  return buffers_[static_cast<std::size_t>(id)];
}

const hw::GpuSpec& SimWorker::gpu() const {
  return node_type_ < 0
             ? scenario().cluster.gpu
             : ctx_.scenario.cluster.node_types[static_cast<std::size_t>(node_type_)].gpu;
}

double SimWorker::jitter(double amount) {
  return draw_jitter(scenario().cluster.jitter, amount / ctx_.platform.nominal_speed, rng_);
}

double SimWorker::seq_ratio(MicroBatch mb) const {
  return seq_ratio_of(scenario(), rank_, mb);
}

double SimWorker::layer_seconds(int l, bool backward) const {
  const auto own = [&](const NodeTypeLayerTimes& times) {
    return (backward ? times.backward : times.forward)[static_cast<std::size_t>(l)];
  };
  if (type_stage_)
    return own(type_stage_->times);
  if (node_type_ >= 0)
    return own(ctx_.node_type_layers[static_cast<std::size_t>(node_type_)]);
  const auto& s = scenario();
  return hw::layer_seconds_per_sample(s.model.spec.layers[static_cast<std::size_t>(l)],
                                      s.cluster.gpu, s.model.dtype == scenario::Dtype::fp32,
                                      backward);
}

double SimWorker::layer_cost(LayerRange layers, bool backward, double ratio) const {
  const auto& model = (stage_ ? own_stage().scenario : scenario()).model.spec.layers;
  const double speed = ctx_.platform.nominal_speed;
  double amount = 0;
  for (int l = layers.first; l < layers.last; ++l) {
    const auto& layer = model[static_cast<std::size_t>(l)];
    // The layer's time (hw/compute_cost.h, shared with the planners), turned into the FLOPs that
    // take that long on a nominal GPU, so stragglers and jitter scale it like any other op.
    const double base = layer_seconds(l, backward) * speed;
    // A sequence of ratio r x seq_len: the attention part scales with r^2, the rest with r (the
    // backward, or a measured time, in the forward FLOPs' proportions).
    const double q = layer.seq_quadratic_share;
    amount += base * ((1 - q) * ratio + q * ratio * ratio);
  }
  return amount;
}

void SimWorker::compute(const OpLabel& label, double amount, MicroBatch mb,
                        std::optional<double> alone,
                        const std::function<double(double)>& at_ratio) {
  const double start = sg4::Engine::get_clock();
  const StreamKind stream = calling_stream();
  double scale = 1;
  if (!slowest_)
    scale = jitter(amount);
  else if (amount > 0)
    // Statistical rank classes: as long as the slowest of the GPUs it stands for
    // (sim/slowest_of.h), at this GPU's own speed.
    scale = slowest_->op_seconds(stream == StreamKind::comm ? 1 : 0, start, amount, mb, at_ratio) *
            ctx_.platform.nominal_speed / scenario().cluster.slowdown_of(rank_) / amount;
  const double flops = amount * scale;
  // The first op after waiting for the other stream's signal takes longer (hw::GpuSpec's
  // compute_handoff_wait_s): the woken thread's, not the device's, so not slowed by sharing.
  if (take_compute_handoff() && gpu().compute_handoff_wait_s > 0)
    sg4::this_actor::sleep_for(gpu().compute_handoff_wait_s);
  if (flops > 0) {
    auto& slows_comm = ctx_.network.compute_interference();
    slows_comm.compute_begin(rank_);
    // Both streams computing share the GPU: the communication stream gets comm_stream_share of it
    // (SimGrid shares a host's speed by the executions' priorities, 1 for the compute stream).
    const double share = gpu().comm_stream_share;
    const auto execute = [&](double f) {
      if (stream == StreamKind::comm && share != 0.5)
        streams_[static_cast<std::size_t>(stream)].run(host_, f, share / (1 - share));
      else
        streams_[static_cast<std::size_t>(stream)].run(host_, f);
    };
    auto& memory = ctx_.memory;
    if (alone && memory.enabled()) {
      // At the alone price, then the progress lost beside the other workers' memory-bound ops
      // made up (sim/memory_contention.h).
      memory.begin(rank_);
      const double since = memory.others_busy(rank_);
      const double began = sg4::Engine::get_clock();
      const double alone_flops = std::min(flops, *alone * scale);
      execute(alone_flops);
      const double took = sg4::Engine::get_clock() - began;
      const double overlapped = memory.others_busy(rank_) - since;
      if (took > 0 && overlapped > 0 && flops > alone_flops)
        execute((flops - alone_flops) * std::min(1.0, overlapped / took));
      memory.end(rank_);
    } else {
      execute(flops);
    }
    slows_comm.compute_end(rank_);
    if (slowest_)
      slowest_->op_ended(stream == StreamKind::comm ? 1 : 0, sg4::Engine::get_clock());
  }
  TraceEvent e;
  e.start = start;
  e.end = sg4::Engine::get_clock();
  e.worker = rank_;
  e.stream = stream;
  e.category = label.category;
  e.name = ctx_.trace.intern(label.name);
  e.step = mb.step;
  e.micro_batch = mb.index;
  e.flops = flops;
  ctx_.record(e);
  last_compute_[static_cast<std::size_t>(stream)] = label.category;
}

StreamKind SimWorker::calling_stream() {
  return sg4::this_actor::get_name()[0] == 'c' ? StreamKind::compute : StreamKind::comm;
}

double SimWorker::micro_batch_speed(bool starts) {
  const auto s = static_cast<std::size_t>(calling_stream());
  // Back to back: the forward follows a backward with no other op between (an optimizer step or
  // a model-sized copy in between leaves the caches as the profile's whole step does).
  if (starts)
    back_to_back_[s] = last_compute_[s] == OpCategory::backward;
  return back_to_back_[s] ? scenario().model.spec.back_to_back_compute_ratio : 1.0;
}

void SimWorker::change_activations(double delta) {
  activations_ = std::max(0.0, activations_ + delta);
  peak_activations_ = std::max(peak_activations_, activations_);
  double total = activations_;
  for (double b : static_memory_)
    total += b;
  ctx_.trace.memory.push_back(MemorySample{sg4::Engine::get_clock(), rank_, total});
}

void SimWorker::forward(LayerRange layers, MicroBatch mb, BufferId) {
  if (!pipelined()) {
    layers_forward(layers, mb, layers.first == 0);
    return;
  }
  // The schedule runs the stage's forwards in its order, up to the j-th forward of the chunks
  // that hold `layers` (an algorithm that forwards part of the model at a time, FSDP's units,
  // runs a chunk's forward in parts).
  check_micro_batch(mb);
  // A step of several passes of the schedule (ACCO's two rounds, each one pass: algorithms/
  // acco.cpp): a forward of the first micro-batch whose op the schedule ran already begins the
  // step's next pass. (Later micro-batches' forwards may have run ahead of the algorithm's calls:
  // interleaved 1F1B runs a chunk-1 forward after chunk 0's of later micro-batches.)
  for (std::size_t c = 0; c < stage_->chunks.size() && mb.index == 0; ++c)
    if (layers.first >= stage_->chunks[c].first && layers.first < stage_->chunks[c].last &&
        forward_at_[c].front() < cursor_) {
      begin_schedule(mb.step);
      break;
    }
  for (std::size_t c = 0; c < stage_->chunks.size(); ++c) {
    const LayerRange chunk = stage_->chunks[c];
    if (layers.first < chunk.last && layers.last > chunk.first)
      run_schedule_to(
          {forward_at_[c][static_cast<std::size_t>(mb.index)], std::min(layers.last, chunk.last)});
  }
}

void SimWorker::check_micro_batch(MicroBatch mb) {
  if (mb.step != schedule_step_)
    begin_schedule(mb.step);
  if (mb.index < 0 || static_cast<std::size_t>(mb.index) >= forward_at_.front().size())
    throw std::invalid_argument(fmt::format(
        "micro-batch {} of a step on a pipeline of training.grad_accum = {} micro-batches: a "
        "pipeline stage runs its schedule's micro-batches only (issue 65)",
        mb.index, forward_at_.front().size()));
}

void SimWorker::begin_schedule(int step) {
  if (schedule_step_ >= 0)
    run_schedule_to({schedule_.size(), 0}); // the previous step's ops, all of them
  schedule_step_ = step;
  cursor_ = 0;
  progress_ = -1;
  latest_.clear();
  owed_.clear();
}

void SimWorker::run_schedule_to(SchedulePoint point) {
  using Kind = parallel::PipelineOp::Kind;
  while (cursor_ < schedule_.size() && cursor_ <= point.op) {
    const auto& op = schedule_[cursor_];
    const LayerRange chunk = stage_->chunks[static_cast<std::size_t>(op.chunk)];
    const bool forward = op.kind == Kind::forward;
    if (cursor_ < point.op) { // the whole op
      run_schedule_op(op, forward ? chunk.last : chunk.first);
      continue;
    }
    // The op `point` names: up to (a forward) or down to (a backward) its layer.
    const int bound =
        forward ? std::min(chunk.last, point.layer) : std::max(chunk.first, point.layer);
    if (progress_ >= 0 && (forward ? progress_ >= bound : progress_ <= bound))
      return;
    run_schedule_op(op, bound);
    return;
  }
}

void SimWorker::settle(bool latest) {
  if (!pipelined() || calling_stream() != StreamKind::compute)
    return;
  for (const auto& point : latest ? latest_ : owed_)
    run_schedule_to(point);
  latest_.clear();
}

bool SimWorker::pass_issued() const {
  for (const auto& point : owed_)
    for (const auto& at : backward_at_)
      if (!at.empty() && point.op == at.back())
        return true;
  return false;
}

void SimWorker::run_schedule_op(const parallel::PipelineOp& op, int bound) {
  using Kind = parallel::PipelineOp::Kind;
  const LayerRange chunk = stage_->chunks[static_cast<std::size_t>(op.chunk)];
  const MicroBatch mb{schedule_step_, op.micro_batch};
  // The op's virtual stage c p + s: the first receives no activation, the last no gradient.
  const int p = stage_->stages;
  const int virtual_stage = op.chunk * p + stage_->stage;
  const bool first = virtual_stage == 0;
  const bool last = virtual_stage + 1 == p * static_cast<int>(stage_->chunks.size());
  const bool begins = progress_ < 0;
  if (op.kind == Kind::forward) {
    const int from = begins ? chunk.first : progress_;
    if (begins && !first)
      stage_message(false, false, false, mb);
    if (bound > from)
      layers_forward({from, bound}, mb, begins);
    progress_ = bound;
    if (bound < chunk.last)
      return;
    if (!last)
      stage_message(true, true, false, mb);
  } else {
    const int top = begins ? chunk.last : progress_;
    const bool weight = op.kind == Kind::backward_weight;
    if (begins && !weight && !last)
      stage_message(false, true, true, mb);
    if (bound < top)
      layers_backward({bound, top}, mb,
                      op.kind == Kind::backward         ? BackwardPart::whole
                      : op.kind == Kind::backward_input ? BackwardPart::input
                                                        : BackwardPart::weight);
    progress_ = bound;
    if (bound > chunk.first)
      return;
    // The input gradient goes back to the previous virtual stage once the chunk's is complete.
    if (!weight && !first)
      stage_message(true, false, true, mb);
  }
  progress_ = -1;
  ++cursor_;
}

void SimWorker::layers_forward(LayerRange layers, MicroBatch mb, bool starts) {
  const auto& model = scenario().model.spec;
  const double samples = scenario().training.micro_batch;
  double act = 0;
  if (scenario().model.checkpointing.enabled())
    act = checkpoints_.forward(layers, mb) * samples;
  else
    for (int l = layers.first; l < layers.last; ++l)
      act += model.layers[static_cast<std::size_t>(l)].activation_bytes_per_sample * samples;
  change_activations(act);
  const double speed = micro_batch_speed(starts);
  // A micro-batch of the same (step, index) as the previous can follow it (ACCO's two rounds of a
  // step number theirs from 0 each): the fold's order statistics count it as a new one.
  if (slowest_ && starts)
    slowest_->micro_batch_starts(calling_stream() == StreamKind::comm ? 1 : 0);
  const auto at = [&](double r) { return layer_cost(layers, false, r) * samples * speed; };
  compute(op_label(model, layers, LayerPass::forward), at(seq_ratio(mb)), mb, std::nullopt, at);
  tensor_parallel_comm(layers, false, mb);
}

void SimWorker::backward(LayerRange layers, MicroBatch mb, BufferId, BufferId) {
  if (!pipelined()) {
    layers_backward(layers, mb);
    return;
  }
  // The schedule runs the backward when its turn comes; the algorithm's next act on these layers'
  // gradients (settle) waits for it. The j-th backward of a chunk's layers is the schedule's
  // j-th: the layers' gradients are complete after the last one.
  check_micro_batch(mb);
  latest_.clear();
  for (std::size_t c = stage_->chunks.size(); c-- > 0;) {
    const LayerRange chunk = stage_->chunks[c];
    if (layers.first >= chunk.last || layers.last <= chunk.first)
      continue;
    const SchedulePoint point{backward_at_[c][static_cast<std::size_t>(mb.index)],
                              std::max(layers.first, chunk.first)};
    latest_.push_back(point);
    owed_.push_back(point);
  }
  std::sort(owed_.begin(), owed_.end(), [](const SchedulePoint& a, const SchedulePoint& b) {
    return a.op != b.op ? a.op < b.op : a.layer > b.layer;
  });
}

void SimWorker::layers_backward(LayerRange layers, MicroBatch mb, BackwardPart part) {
  const auto& model = scenario().model.spec;
  const double samples = scenario().training.micro_batch;
  const double speed = micro_batch_speed(false);
  // ZB-H1's W: the weight-gradient share of each layer's backward (ParallelPlacement's
  // weight_share); B: the rest.
  const auto share = [&](LayerRange range) {
    if (part == BackwardPart::whole)
      return 1.0;
    const auto& shares =
        (node_type_ < 0 ? ctx_.parallel->weight_share
                        : ctx_.parallel->type_weight_share[static_cast<std::size_t>(
                              node_type_)])[static_cast<std::size_t>(stage_->stage)];
    double all = 0, weight = 0;
    for (int l = range.first; l < range.last; ++l) {
      const double t = layer_cost({l, l + 1}, true, seq_ratio(mb));
      all += t;
      weight += t * shares[static_cast<std::size_t>(l)];
    }
    if (all <= 0)
      return 0.0;
    return part == BackwardPart::weight ? weight / all : 1 - weight / all;
  };
  const auto pass = [&](LayerRange range) {
    OpLabel label = op_label(model, range, LayerPass::backward);
    if (part != BackwardPart::whole)
      label.name = fmt::format("{} ({})", label.name,
                               part == BackwardPart::input ? "input grad" : "weight grad");
    const double of_part = share(range);
    const auto at = [&](double r) {
      return layer_cost(range, true, r) * of_part * samples * speed;
    };
    compute(label, at(seq_ratio(mb)), mb, std::nullopt, at);
  };
  if (part == BackwardPart::weight) { // no recomputation, no activation freed, no TP collective
    pass(layers);
    return;
  }
  if (scenario().model.checkpointing.enabled()) {
    // Each checkpointed segment's forward re-runs on this stream right before its backward.
    for (const auto& p : checkpoints_.backward(layers, mb)) {
      if (p.recompute.last > p.recompute.first) {
        change_activations(p.recomputed_bytes * samples);
        const auto at = [&](double r) {
          return layer_cost(p.recompute, false, r) * samples * speed;
        };
        compute(op_label(model, p.recompute, LayerPass::recompute), at(seq_ratio(mb)), mb,
                std::nullopt, at);
      }
      pass(p.backward);
      change_activations(-p.freed_bytes * samples);
    }
    tensor_parallel_comm(layers, true, mb);
    return;
  }
  const double rebuilt = parallel_recompute(layers, mb);
  pass(layers);
  double act = 0;
  for (int l = layers.first; l < layers.last; ++l)
    act += model.layers[static_cast<std::size_t>(l)].activation_bytes_per_sample * samples;
  change_activations(-act - rebuilt);
  tensor_parallel_comm(layers, true, mb);
}

double SimWorker::parallel_recompute(LayerRange layers, MicroBatch mb) {
  if (!stage_)
    return 0;
  const auto& s = scenario();
  const double r = seq_ratio(mb), samples = s.training.micro_batch;
  const double speed = ctx_.platform.nominal_speed * micro_batch_speed(false);
  double bytes = 0;
  for (int l = layers.first; l < layers.last; ++l)
    if (const auto& again = own_stage().recompute[static_cast<std::size_t>(l)]; again.any())
      bytes = std::max(bytes, again.bytes); // one layer's rebuilt tensors at a time
  // What the recomputation costs at sequence ratio `ratio` (a statistical fold's other GPUs draw
  // their own).
  const auto at = [&](double ratio) {
    double amount = 0;
    for (int l = layers.first; l < layers.last; ++l) {
      const auto& again = own_stage().recompute[static_cast<std::size_t>(l)];
      if (!again.any())
        continue;
      const double forward = layer_seconds(l, false); // on this GPU (cluster.node_types)
      amount += forward * (again.linear_share * ratio + again.quadratic_share * ratio * ratio);
    }
    return amount * samples * speed;
  };
  const double amount = at(r);
  if (amount <= 0)
    return 0;
  change_activations(bytes);
  compute(op_label(s.model.spec, layers, LayerPass::recompute), amount, mb, std::nullopt, at);
  return bytes;
}

void SimWorker::optimizer_step(const OptimizerStep& op) {
  settle();
  const auto& s = scenario();
  // The step streams the parameters, gradients and optimizer state through HBM once.
  const double bytes = static_cast<double>(op.params.count) *
                       optimizer_bytes_touched_per_param(s.training.optimizer, s.model.dtype);
  const double params = static_cast<double>(op.params.count);
  const double measured = s.model.spec.measured_optimizer_seconds(params);
  // An estimate (ACCO's, uncommitted) at its own measured share of a step.
  const double ratio = op.commit ? 1.0 : s.model.spec.optimizer_estimate_ratio;
  const double seconds = (measured > 0 ? measured : bytes / gpu().hbm_bandwidth_Bps) * ratio;
  const double alone =
      measured > 0 ? s.model.spec.measured_optimizer_alone_seconds(params) * ratio : seconds;
  compute(op_label(op), seconds * ctx_.platform.nominal_speed, MicroBatch{op.step, -1},
          alone * ctx_.platform.nominal_speed);
  ++ctx_.collective_calls[CollectiveSize{op.commit ? kOptimizerStep : kOptimizerEstimate, 1,
                                         static_cast<double>(op.params.count)}];
}

void SimWorker::outer_step(const OuterStep& op) {
  settle();
  // Element-wise and memory-bound: the parameters, the anchor and the momentum are each read and
  // written once.
  // Streaming DiLoCo's merge reads and writes the local parameters as well.
  const double local_bytes = op.local.buffer >= 0 ? buffer(op.local.buffer).element_bytes : 0.0;
  const double step_bytes = buffer(op.params.buffer).element_bytes +
                            buffer(op.anchor.buffer).element_bytes +
                            buffer(op.momentum.buffer).element_bytes;
  const double count = static_cast<double>(op.params.count);
  // Measured (profile, issue 30.3): the outer step per parameter, a merge's extra stream in
  // proportion to its bytes; else the bytes through HBM.
  const auto& spec = scenario().model.spec;
  const double measured = spec.outer_step_time_per_param_s;
  const double streams = (step_bytes + local_bytes) / step_bytes;
  const double seconds = measured > 0
                             ? measured * count * streams
                             : count * 2 * (step_bytes + local_bytes) / gpu().hbm_bandwidth_Bps;
  // Alone where measured: the price of the part that no other worker's memory-bound op overlaps
  // (sim/memory_contention.h).
  const double alone = measured > 0 && spec.outer_step_alone_time_per_param_s > 0
                           ? spec.outer_step_alone_time_per_param_s * count * streams
                           : seconds;
  compute(op_label(op), seconds * ctx_.platform.nominal_speed, MicroBatch{op.step, -1},
          alone * ctx_.platform.nominal_speed);
}

void SimWorker::reload_master(Slice params, Slice) {
  settle();
  // The 16-bit parameters read, the fp32 master written; fp32 training has no master copy
  // (model_state.h: K counts it only for 16-bit models), except where the profile measured one:
  // the real runtime's optimizer keeps an fp32 master of fp32 parameters too and copies into it
  // (issue 30.3: every op the real runtime executes priced; 7-60 us a layer on a CPU).
  const auto dtype = scenario().model.dtype;
  if (dtype == scenario::Dtype::fp32 &&
      !scenario().model.spec.memory_ops.contains(op_label(MemoryOp::reload_master).name))
    return;
  memory_op(MemoryOp::reload_master,
            static_cast<double>(params.count) * (scenario::dtype_bytes(dtype) + 4.0));
}

void SimWorker::memory_op(MemoryOp op, double bytes) {
  // Its own measured price where the profile has one, else the memory bandwidth.
  const auto& measured = scenario().model.spec.memory_ops;
  const auto it = measured.find(op_label(op).name);
  const double seconds = it != measured.end() ? it->second.fixed_s + it->second.per_byte_s * bytes
                                              : bytes / gpu().hbm_bandwidth_Bps;
  // Alone, where measured (hw::ModelSpec::MemoryOpPrice): the fixed cost is the call's own.
  const double alone = it != measured.end() && it->second.alone_per_byte_s > 0
                           ? it->second.fixed_s + it->second.alone_per_byte_s * bytes
                           : seconds;
  compute(op_label(op), seconds * ctx_.platform.nominal_speed, MicroBatch{-1, -1},
          alone * ctx_.platform.nominal_speed);
}

void SimWorker::copy(Slice from, Slice to) {
  settle(true);
  // Read one, write the other.
  memory_op(MemoryOp::copy, static_cast<double>(to.count) * (buffer(from.buffer).element_bytes +
                                                             buffer(to.buffer).element_bytes));
}

void SimWorker::accumulate(Slice from, Slice to) {
  settle();
  // Read both, write one.
  memory_op(MemoryOp::accumulate,
            static_cast<double>(to.count) *
                (buffer(from.buffer).element_bytes + 2 * buffer(to.buffer).element_bytes));
}

void SimWorker::fill(Slice to, double) {
  settle();
  memory_op(MemoryOp::fill, static_cast<double>(to.count) * buffer(to.buffer).element_bytes);
}

void SimWorker::replicator_phase(const ReplicatorPhase& op) {
  settle();
  const auto use = replicator_use(op);
  ++ctx_.replicator_calls[{use, op.params.count}];
  // Measured as a whole where the profile timed this use (issue 30.3), under the real runtime's
  // name for it.
  const auto& measured = scenario().model.spec.replicator_phases;
  if (const auto it = measured.find(price_name(use)); it != measured.end()) {
    compute(op_label(op),
            (it->second.fixed_s +
             it->second.per_element_s * priced_elements(op.config, op.params.count)) *
                ctx_.platform.nominal_speed,
            MicroBatch{op.step, -1});
    return;
  }
  const double p = scenario::dtype_bytes(scenario().model.dtype);
  const auto category = [&](const hw::KernelOp& k) {
    return k.name == "decoupled momentum" || k.name == "demo-sgd update" ? OpCategory::optimizer
                                                                         : OpCategory::compress;
  };
  for (const auto& k : replicator_kernels(op, p))
    compute(OpLabel{category(k), k.name}, hw::kernel_time_s(gpu(), k) * ctx_.platform.nominal_speed,
            MicroBatch{op.step, -1});
}

void SimWorker::tensor_parallel_comm(LayerRange layers, bool backward, MicroBatch mb) {
  if (!tensor_group_)
    return;
  parallel::LayerTensorComm sum;
  for (int l = layers.first; l < layers.last; ++l) {
    const auto& c = own_stage().tensor_comm[static_cast<std::size_t>(l)];
    sum.forward_s += c.forward_s, sum.backward_s += c.backward_s;
    sum.forward_bytes += c.forward_bytes, sum.backward_bytes += c.backward_bytes;
    sum.forward_calls += c.forward_calls, sum.backward_calls += c.backward_calls;
    sum.overlapped = sum.overlapped || c.overlapped;
  }
  const double seconds = backward ? sum.backward_s : sum.forward_s;
  if (seconds <= 0)
    return;
  // The TP ranks meet and the collectives' summed price passes (Network::run_fixed): the group
  // sits inside a node, where nothing else contends for its links.
  CollectiveCall call;
  call.op = CollectiveOp::all_reduce;
  call.group = tensor_group_;
  call.step = mb.step;
  call.name = fmt::format("tensor-parallel {} x{}{} ({})", backward ? "backward" : "forward",
                          backward ? sum.backward_calls : sum.forward_calls,
                          sum.overlapped ? " overlapped" : "",
                          op_label(scenario().model.spec, layers, LayerPass::forward).name);
  const double start = sg4::Engine::get_clock();
  const std::int64_t seq = seq_[tensor_group_->id]++;
  const auto outcome = ctx_.network.run_fixed(
      rank_, call, seconds, backward ? sum.backward_bytes : sum.forward_bytes, seq);
  if (slowest_) // each replica's TP ranks waited for each other (sim/statistical_fold.h)
    ctx_.statistical->tensor_synced(rank_, seq, static_cast<int>(calling_stream()),
                                    sg4::Engine::get_clock());
  TraceEvent e;
  e.start = start;
  e.end = sg4::Engine::get_clock();
  e.worker = rank_;
  e.stream = calling_stream();
  e.category = OpCategory::comm;
  e.name = ctx_.trace.intern(call.name);
  e.detail = ctx_.trace.intern("tensor-parallel");
  e.step = mb.step;
  e.bytes = outcome.bytes_sent;
  e.group = tensor_group_->id;
  e.group_size = tensor_group_->size();
  ctx_.record(e);
}

void SimWorker::stage_message(bool send, bool to_next, bool gradient, MicroBatch mb) {
  CollectiveCall call;
  call.op = send ? CollectiveOp::send : CollectiveOp::recv;
  call.group = to_next ? to_next_ : to_previous_;
  call.peer = to_next ? next_ : previous_;
  call.tag = gradient ? 2 : 1; // activations forward, their gradients back: FIFO each
  call.step = mb.step;
  // The exchange's name says which GPUs it joins: the analysis matches a receive with its send by
  // name, step and end (trace/analysis.cpp), and replicas of a stage send at the same instants.
  const int from = send ? rank_ : call.peer, to = send ? call.peer : rank_;
  if (send)
    call.name = fmt::format("send {} {}>{} micro-batch {}", gradient ? "gradient" : "activation",
                            from, to, mb.index);
  else // the prefix the metrics know a pipeline receive by (runtime/op_label.h)
    call.name =
        fmt::format("{}{}>{} micro-batch {}",
                    gradient ? kRecvGradientPrefix : kRecvActivationPrefix, from, to, mb.index);
  const double bytes = stage_->message_bytes;
  const int stream = static_cast<int>(calling_stream());
  if (!send) {
    const double posted = sg4::Engine::get_clock();
    run_collective(call, bytes, -1, false);
    if (slowest_) // each replica's stage waited for its own neighbour (sim/statistical_fold.h)
      ctx_.statistical->received(call.peer, rank_, call.tag, stream, posted,
                                 sg4::Engine::get_clock());
    return;
  }
  if (slowest_)
    ctx_.statistical->sent(rank_, call.peer, call.tag, stream, sg4::Engine::get_clock());
  auto state = std::make_shared<State>();
  auto previous = std::exchange(last_send_[send_key(call)], state);
  sg4::Actor::create(fmt::format("x{}", rank_), host_, [this, call, bytes, previous, state] {
    if (previous)
      previous->wait();
    run_collective(call, bytes, -1, false);
    state->finish();
  });
}

void SimWorker::run_collective(const CollectiveCall& call, double bytes, std::int64_t seq,
                               bool after_handoff) {
  const double start = sg4::Engine::get_clock();
  // The first collective after waiting for the other stream's signal starts later (hw::GpuSpec's
  // collective_handoff_wait_s); its peers wait for it like for any late member.
  if (after_handoff && gpu().collective_handoff_wait_s > 0)
    sg4::this_actor::sleep_for(gpu().collective_handoff_wait_s);
  // The network slows this GPU's compute while the call moves its data (sim/comm_interference.h).
  const auto table = call.data.buffer < 0
                         ? std::nullopt
                         : table_comm_.seconds(call, buffer(call.data.buffer).elements);
  auto outcome = table ? ctx_.network.run_fixed(rank_, call, *table, bytes, seq)
                       : ctx_.network.run(rank_, call, bytes, seq);
  ctx_.network.classify(rank_, call, outcome);
  TraceEvent e;
  e.start = start;
  e.end = sg4::Engine::get_clock();
  e.worker = rank_;
  e.stream = StreamKind::comm;
  const OpLabel label = op_label(call);
  e.category = label.category;
  e.name = ctx_.trace.intern(label.name);
  e.detail = ctx_.trace.intern(outcome.algorithm);
  e.step = call.step;
  e.bytes = outcome.bytes_sent;
  e.inter_node_bytes = outcome.inter_node_bytes;
  e.wan_bytes = outcome.wan_bytes;
  if (call.op == CollectiveOp::recv)
    e.received = bytes; // the message, which the matching send moved
  e.group = call.group->id;
  e.group_size = call.group->size();
  e.peer = call.peer;
  ctx_.record(e);
  if (const auto size = profiled_size(call, bytes))
    ++ctx_.collective_calls[*size];
}

double SimWorker::bytes_of(const CollectiveCall& call) const {
  if (call.group == nullptr)
    throw std::logic_error(
        fmt::format("worker {}: collective '{}' without a group", rank_, call.name));
  return call.data.buffer < 0
             ? 0.0
             : static_cast<double>(call.data.count) * buffer(call.data.buffer).element_bytes;
}

std::int64_t SimWorker::next_seq(const CollectiveCall& call) {
  // Point-to-point ops involve two ranks only: they take no place in the group's numbering, which
  // every member must agree on.
  const bool p2p = is_point_to_point(call.op);
  return p2p ? -1 : seq_[call.group->id]++;
}

std::tuple<int, int, int> SimWorker::send_key(const CollectiveCall& call) {
  const bool compute = sg4::this_actor::get_name()[0] == 'c';
  return {call.group->id, call.peer, compute ? 0 : 1};
}

sg4::ExecPtr SimWorker::begin_start_cost(const CollectiveCall& call, double bytes) {
  const auto& spec = gpu();
  const std::string op = calibration_op_name(call.op);
  const double seconds = spec.collective_start_seconds(op, bytes);
  if (seconds <= 0)
    return nullptr;
  // It takes `share` of a compute stream's speed (priority 1 beside share / (1 - share)), so an
  // op shorter than the start's work loses that share of its speed, a longer one the whole cost.
  // Beside the transfer, which begins with the first piece: the call's time is the link's, and
  // the stream that issued it goes on (the issuing thread's own part is the least of it).
  const double share = spec.collective_start_share(op);
  auto exec = sg4::this_actor::exec_init(seconds * ctx_.platform.nominal_speed);
  exec->set_priority(share / (1 - share));
  exec->start();
  return exec;
}

CommHandle SimWorker::start(const CollectiveCall& call) {
  settle(true);
  const double bytes = bytes_of(call);
  const std::int64_t seq = next_seq(call);
  const bool p2p = is_point_to_point(call.op);
  // Point-to-point ops match by tag and need no ordering with the group's collectives; sends to
  // one peer from one stream queue behind each other.
  auto state = std::make_shared<State>();
  std::shared_ptr<State> previous;
  if (!p2p) {
    previous = std::exchange(last_op_[call.group->id], state);
  } else if (call.op == CollectiveOp::send) {
    previous = std::exchange(last_send_[send_key(call)], state);
  }
  // Collectives on one group run in the order they were started, as on one NCCL communicator; a
  // helper actor waits for the previous one so that the caller returns at once.
  const bool after_handoff = take_handoff();
  sg4::Actor::create(fmt::format("x{}", rank_), host_,
                     [this, call, bytes, seq, previous, state, after_handoff] {
                       // The start's work runs from the call, even behind a previous one.
                       const auto starting = begin_start_cost(call, bytes);
                       if (previous)
                         previous->wait();
                       run_collective(call, bytes, seq, after_handoff);
                       if (starting)
                         starting->wait();
                       state->finish();
                     });
  return CommHandle{state};
}

void SimWorker::run(const CollectiveCall& call) {
  settle(true);
  const double bytes = bytes_of(call);
  const std::int64_t seq = next_seq(call);
  const bool p2p = is_point_to_point(call.op);
  if (!p2p || call.op == CollectiveOp::send) {
    auto& last = p2p ? last_send_[send_key(call)] : last_op_[call.group->id];
    if (last) {
      last->wait();
      last.reset();
    }
  }
  const auto starting = begin_start_cost(call, bytes);
  run_collective(call, bytes, seq, take_handoff()); // on the calling actor: no helper needed
  if (starting)
    starting->wait();
}

void SimWorker::wait(CommHandle& handle) {
  if (!handle.valid())
    return;
  static_cast<State&>(*handle.state).wait();
}

bool SimWorker::test(CommHandle& handle) {
  return !handle.valid() || static_cast<State&>(*handle.state).done;
}

std::size_t SimWorker::wait_any(std::span<CommHandle> handles) {
  if (handles.empty())
    throw std::logic_error(fmt::format("worker {}: wait_any without a handle", rank_));
  const auto first_done = [&]() -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < handles.size(); ++i)
      if (test(handles[i]))
        return i;
    return std::nullopt;
  };
  auto found = first_done();
  if (!found) {
    // One semaphore that every handle's finish releases: the stream wakes at the first.
    const auto woken = sg4::Semaphore::create(0);
    for (auto& h : handles)
      static_cast<State&>(*h.state).watchers.push_back(woken);
    woken->acquire();
    for (auto& h : handles)
      std::erase(static_cast<State&>(*h.state).watchers, woken);
    found = first_done();
  }
  wait(handles[*found]);
  return *found;
}

std::size_t SimWorker::wait_any_or_signal(std::span<CommHandle> handles,
                                          std::span<const int> signals) {
  if (handles.empty() && signals.empty())
    throw std::logic_error(fmt::format("worker {}: wait_any_or_signal without a handle", rank_));
  const auto first_ready = [&]() -> std::optional<std::size_t> {
    for (std::size_t i = 0; i < handles.size(); ++i)
      if (test(handles[i]))
        return i;
    for (std::size_t k = 0; k < signals.size(); ++k) {
      const auto& c = channel(signals[k]);
      if (c.values.size() > static_cast<std::size_t>(c.granted))
        return handles.size() + k;
    }
    return std::nullopt;
  };
  auto found = first_ready();
  if (!found) {
    // As wait_any's semaphore, released by a handle's finish or a signal's notify.
    const auto woken = sg4::Semaphore::create(0);
    for (auto& h : handles)
      static_cast<State&>(*h.state).watchers.push_back(woken);
    for (const int s : signals)
      channel(s).watchers.push_back(woken);
    woken->acquire();
    for (auto& h : handles)
      std::erase(static_cast<State&>(*h.state).watchers, woken);
    for (const int s : signals)
      std::erase(channel(s).watchers, woken);
    found = first_ready();
  }
  if (*found < handles.size())
    wait(handles[*found]);
  return *found;
}

SimWorker::Channel& SimWorker::channel(int signal) {
  auto& c = channels_[signal];
  if (!c.ready)
    c.ready = sg4::Semaphore::create(0);
  return c;
}

void SimWorker::notify(int signal, std::int64_t value) {
  settle(true);
  auto& c = channel(signal);
  c.values.push_back(value);
  if (c.blocked > 0) { // a stream waits for it: wake it (Channel)
    --c.blocked;
    ++c.granted;
    c.ready->release();
  }
  for (const auto& w : c.watchers) // wait_any_or_signal: the value stays for poll or await
    w->release();
}

bool SimWorker::take_handoff() {
  return std::exchange(handed_off_[sg4::this_actor::get_name()[0] == 'c' ? 0 : 1], false);
}

bool SimWorker::take_compute_handoff() {
  return std::exchange(compute_handed_off_[sg4::this_actor::get_name()[0] == 'c' ? 0 : 1], false);
}

std::int64_t SimWorker::await(int signal) {
  // A pass issued to its last backward runs before the stream idles: ACCO's compute stream waits
  // for its round after the pass's last backward call, and the pipeline's cool-down overlaps that
  // round (the stage's backwards, run lazily, would otherwise wait for it).
  if (pass_issued())
    settle();
  auto& c = channel(signal);
  // A stream that had to wait for the other one's signal starts its next collective late
  // (hw::GpuSpec's collective_handoff_wait_s); one whose signal was there already does not.
  // Likewise its next compute op takes longer (compute_handoff_wait_s); each kind's first op after
  // the wait takes its own, whatever the other kind ran in between (ACCO fills the counts, then
  // all-reduces them: both were slow in a run).
  if (c.values.empty()) {
    const int stream = sg4::this_actor::get_name()[0] == 'c' ? 0 : 1;
    handed_off_[stream] = true;
    compute_handed_off_[stream] = true;
  }
  if (c.values.size() <= static_cast<std::size_t>(c.granted)) { // none for this stream yet
    ++c.blocked;
    c.ready->acquire();
    --c.granted;
  }
  const auto v = c.values.front();
  c.values.pop_front();
  return v;
}

std::optional<std::int64_t> SimWorker::poll(int signal) {
  auto& c = channel(signal);
  if (c.values.size() <= static_cast<std::size_t>(c.granted))
    return std::nullopt;
  const auto v = c.values.front();
  c.values.pop_front();
  return v;
}

double SimWorker::now() const {
  return sg4::Engine::get_clock();
}

void SimWorker::step_done(int step, double samples) {
  settle();
  // A pipeline's tensor x pipeline ranks train the same samples: each reports its share, so that
  // the job's samples are counted once (throughput sums the ranks').
  ctx_.trace.steps.push_back(
      StepMark{sg4::Engine::get_clock(), rank_, step, samples * sample_share_});
  if (rank_ == ctx_.platform.classes.representative(0) && ctx_.progress)
    ctx_.progress(step + 1, scenario().training.warmup_steps + scenario().training.steps);
}

void SimWorker::record_accumulation(int step, int micro_batches) {
  ctx_.trace.accumulations.push_back(AccumulationMark{rank_, step, micro_batches});
}

MemoryByCategory SimWorker::peak_memory() const {
  auto m = static_memory_;
  m[static_cast<std::size_t>(MemoryCategory::activations)] += peak_activations_;
  return m;
}

} // namespace overlapsim::sim
