#include "recording_worker.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <stdexcept>
#include <thread>
#include <utility>

namespace overlapsim::testing {
namespace {

// The stream the calling thread runs (0 compute, 1 comm); -1 outside the streams.
thread_local int current_stream = -1;

// Thrown into a stream when the other one failed, to unwind it.
struct Stopped {};

struct RecordedComm final : CommState {
  explicit RecordedComm(std::string n) : name(std::move(n)) {}
  std::string name;
};

const std::string& name_of(const CommHandle& handle) {
  return static_cast<const RecordedComm&>(*handle.state).name;
}

} // namespace

RecordingWorker::RecordingWorker(scenario::Scenario scenario, int rank, std::size_t max_ops)
    : scenario_(std::move(scenario)), rank_(rank), max_ops_(max_ops),
      topology_(scenario_.cluster.nodes, scenario_.cluster.gpus_per_node) {}

void RecordingWorker::execute(const Algorithm& algorithm) {
  const auto program = algorithm.program(*this);
  std::thread compute([&] { stream_main(0, *program); });
  std::thread comm([&] { stream_main(1, *program); });
  compute.join();
  comm.join();
  if (!error_.empty())
    throw std::runtime_error(algorithm.name() + ": " + error_);
}

void RecordingWorker::stream_main(int stream, WorkerProgram& program) {
  current_stream = stream;
  {
    std::unique_lock lock(mutex_);
    turn_changed_.wait(lock, [&] { return turn_ == stream || !error_.empty(); });
    if (!error_.empty())
      return;
  }
  try {
    if (stream == 0)
      program.run_compute();
    else
      program.run_comm();
  } catch (const Stopped&) {
    return;
  } catch (const std::exception& e) {
    const std::lock_guard lock(mutex_);
    fail(fmt::format("{} stream threw: {}", stream == 0 ? "compute" : "comm", e.what()));
    return;
  }
  std::unique_lock lock(mutex_);
  done_[stream] = true;
  const int other = 1 - stream;
  if (runnable(other)) {
    turn_ = other;
    turn_changed_.notify_all();
  } else if (!done_[other]) {
    fail(fmt::format("deadlock: the {} stream awaits signal {} that nobody sends",
                     other == 0 ? "compute" : "comm", fmt::join(awaiting_[other], " or ")));
  }
}

bool RecordingWorker::runnable(int stream) const {
  if (done_[stream])
    return false;
  if (awaiting_[stream].empty())
    return true;
  for (const int signal : awaiting_[stream]) {
    const auto it = signals_.find(signal);
    if (it != signals_.end() && !it->second.empty())
      return true;
  }
  return false;
}

void RecordingWorker::hand_over(std::unique_lock<std::mutex>& lock, int me) {
  turn_ = 1 - me;
  turn_changed_.notify_all();
  turn_changed_.wait(lock, [&] { return turn_ == me || !error_.empty(); });
  if (!error_.empty())
    throw Stopped{};
}

void RecordingWorker::fail(const std::string& why) {
  if (error_.empty())
    error_ = why;
  turn_changed_.notify_all();
}

int RecordingWorker::calling_stream() const {
  if (current_stream < 0)
    throw std::logic_error("an op issued outside the two streams");
  return current_stream;
}

void RecordingWorker::record(const std::string& text) {
  const int me = calling_stream();
  std::unique_lock lock(mutex_);
  if (!error_.empty())
    throw Stopped{};
  log_.push_back({static_cast<StreamKind>(me), text});
  if (log_.size() > max_ops_) {
    fail(fmt::format("more than {} ops", max_ops_));
    throw Stopped{};
  }
  if (runnable(1 - me))
    hand_over(lock, me);
}

std::vector<std::string> RecordingWorker::ops(StreamKind stream,
                                              const std::string& containing) const {
  std::vector<std::string> out;
  for (const auto& op : log_)
    if (op.stream == stream && op.text.find(containing) != std::string::npos)
      out.push_back(op.text);
  return out;
}

BufferId RecordingWorker::declare(const BufferDecl& decl) {
  const std::lock_guard lock(mutex_);
  buffers_.push_back(decl);
  return static_cast<BufferId>(buffers_.size()) - 1;
}

const BufferDecl& RecordingWorker::buffer(BufferId id) const {
  const std::lock_guard lock(mutex_);
  return buffers_.at(static_cast<std::size_t>(id));
}

std::string RecordingWorker::str(Slice s) const {
  if (s.buffer < 0)
    return "unset";
  return fmt::format("{}[{}:{}]", buffer(s.buffer).name, s.offset, s.offset + s.count);
}

void RecordingWorker::forward(LayerRange layers, MicroBatch mb, BufferId) {
  record(fmt::format("forward [{},{}) mb {}.{}", layers.first, layers.last, mb.step, mb.index));
}

void RecordingWorker::backward(LayerRange layers, MicroBatch mb, BufferId, BufferId) {
  record(fmt::format("backward [{},{}) mb {}.{}", layers.first, layers.last, mb.step, mb.index));
}

void RecordingWorker::optimizer_step(const OptimizerStep& op) {
  std::string text = fmt::format("optimizer step {}: {}, grads {}, state {}, scale {:g}", op.step,
                                 str(op.params), str(op.grads), str(op.state), op.grad_scale);
  if (op.out.buffer >= 0)
    text += ", out " + str(op.out);
  if (op.divisor.buffer >= 0)
    text += ", divisor " + str(op.divisor);
  if (!op.commit)
    text += ", estimate";
  record(text);
}

void RecordingWorker::outer_step(const OuterStep& op) {
  std::string text = fmt::format("outer step {}: params {}, anchor {}, momentum {}", op.step,
                                 str(op.params), str(op.anchor), str(op.momentum));
  if (op.local.buffer >= 0)
    text += fmt::format(", merge {} alpha {:g}", str(op.local), op.alpha);
  record(text);
}

void RecordingWorker::reload_master(Slice params, Slice state) {
  record(fmt::format("reload master {}, state {}", str(params), str(state)));
}

void RecordingWorker::copy(Slice from, Slice to) {
  record(fmt::format("copy {} -> {}", str(from), str(to)));
}

void RecordingWorker::accumulate(Slice from, Slice to) {
  record(fmt::format("accumulate {} += {}", str(to), str(from)));
}

void RecordingWorker::fill(Slice to, double value) {
  record(fmt::format("fill {} = {:g}", str(to), value));
}

void RecordingWorker::replicator_phase(const ReplicatorPhase& op) {
  record(fmt::format("replicator {} piece {} step {}{}",
                     op.phase == ReplicatorPhase::Kind::encode ? "encode" : "decode", op.piece,
                     op.step, op.exchanged ? "" : ", no exchange"));
}

std::string RecordingWorker::collective(const CollectiveCall& call) const {
  std::string group;
  if (call.group == &topology_.world()) {
    group = "world";
  } else if (call.group != nullptr) {
    group = fmt::format("{{{}}}", fmt::join(call.group->ranks, ","));
  }
  const double bytes = call.data.buffer < 0 ? 0
                                            : static_cast<double>(call.data.count) *
                                                  buffer(call.data.buffer).element_bytes;
  const std::string out = call.out.buffer < 0 ? "" : " -> " + str(call.out);
  return fmt::format("{} {} {}{} {:.0f} B{} \"{}\"", to_string(call.op), group, str(call.data), out,
                     bytes, call.average ? " avg" : "", call.name);
}

CommHandle RecordingWorker::start(const CollectiveCall& call) {
  record("start " + collective(call));
  return CommHandle{std::make_shared<RecordedComm>(call.name)};
}

void RecordingWorker::wait(CommHandle& handle) {
  record(fmt::format("wait \"{}\"", name_of(handle)));
}

bool RecordingWorker::test(CommHandle& handle) {
  record(fmt::format("test \"{}\"", name_of(handle)));
  return true;
}

std::size_t RecordingWorker::wait_any(std::span<CommHandle> handles) {
  // Every collective is done at once: the first handle is.
  std::string names;
  for (const auto& h : handles)
    names += fmt::format(" \"{}\"", h.valid() ? name_of(h) : std::string("none"));
  record(fmt::format("wait any{} -> 0", names));
  return 0;
}

std::size_t RecordingWorker::wait_any_or_signal(std::span<CommHandle> handles,
                                                std::span<const int> signals) {
  if (!handles.empty())
    return wait_any(handles);
  if (signals.empty())
    throw std::logic_error("wait_any_or_signal without a handle or a signal");
  const int me = calling_stream();
  std::size_t found = 0;
  {
    std::unique_lock lock(mutex_);
    auto first = [&]() -> std::optional<std::size_t> {
      for (std::size_t k = 0; k < signals.size(); ++k)
        if (!signals_[signals[k]].empty())
          return k;
      return std::nullopt;
    };
    while (!first()) {
      awaiting_[me].assign(signals.begin(), signals.end());
      if (!runnable(1 - me)) {
        fail(fmt::format("deadlock: the {} stream awaits signal {} that nobody sends",
                         me == 0 ? "compute" : "comm", fmt::join(signals, " or ")));
        throw Stopped{};
      }
      hand_over(lock, me);
    }
    awaiting_[me].clear();
    found = *first();
  }
  record(fmt::format("wait any signal {} -> {}", fmt::join(signals, " "), signals[found]));
  return found;
}

void RecordingWorker::run(const CollectiveCall& call) {
  record(collective(call));
}

void RecordingWorker::notify(int signal, std::int64_t value) {
  {
    const std::lock_guard lock(mutex_);
    signals_[signal].push_back(value);
  }
  record(fmt::format("notify {} = {}", signal, value));
}

std::int64_t RecordingWorker::await(int signal) {
  const int me = calling_stream();
  std::int64_t value = 0;
  {
    std::unique_lock lock(mutex_);
    while (signals_[signal].empty()) {
      awaiting_[me] = {signal};
      if (!runnable(1 - me)) {
        fail(fmt::format("deadlock: the {} stream awaits signal {} that nobody sends",
                         me == 0 ? "compute" : "comm", signal));
        throw Stopped{};
      }
      hand_over(lock, me);
    }
    awaiting_[me].clear();
    value = signals_[signal].front();
    signals_[signal].pop_front();
  }
  record(fmt::format("await {} -> {}", signal, value));
  return value;
}

std::optional<std::int64_t> RecordingWorker::poll(int signal) {
  std::optional<std::int64_t> value;
  {
    const std::lock_guard lock(mutex_);
    auto& queue = signals_[signal];
    if (!queue.empty()) {
      value = queue.front();
      queue.pop_front();
    }
  }
  record(value ? fmt::format("poll {} -> {}", signal, *value)
               : fmt::format("poll {} -> none", signal));
  return value;
}

double RecordingWorker::now() const {
  const std::lock_guard lock(mutex_);
  return static_cast<double>(log_.size()); // one tick per op
}

void RecordingWorker::step_done(int step, double samples) {
  record(fmt::format("step done {} ({:g} samples)", step, samples));
}

void RecordingWorker::record_accumulation(int step, int micro_batches) {
  record(fmt::format("accumulation step {}: {} micro-batches", step, micro_batches));
}

} // namespace overlapsim::testing
