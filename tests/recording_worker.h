// A fake Worker that runs an algorithm's two streams without SimGrid or LibTorch and records every
// op each stream issues, so that an algorithm's op sequence is tested directly
// (op_sequence_test.cpp).
//
// The two streams run on two threads, but one at a time: a stream hands over to the other after
// each op it issues (when the other can run) and whenever it awaits a signal nobody has sent yet.
// The interleaving, and so every recorded sequence, is the same on every run. Collectives complete
// at once (there are no other ranks); test() answers true. Both streams blocked, or more than
// `max_ops` ops, is an error run() throws.
#pragma once

#include "algorithms/algorithm.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace overlapsim::testing {

struct RecordedOp {
  StreamKind stream = StreamKind::compute;
  std::string text;
};

// How ops read (slices as `buffer[first:end]`, the declared buffer's name):
//   forward [0,4) mb 0.1                       (layers [0, 4), step 0, micro-batch 1)
//   backward [3,4) mb 0.0
//   optimizer step 0: params[0:50], grads grads[0:50], state optimizer_state[0:50], scale 0.5
//       (", out X" when out is set, ", divisor X" when set, ", estimate" when not committed)
//   outer step 3: params P, anchor A, momentum M (", merge L alpha 0.5" with a local slice)
//   reload master params[0:50], state optimizer_state[0:50]
//   copy A -> B; accumulate A += B; fill A = 1
//   replicator encode piece 0 step 2 (", no exchange" when exchanged is false)
//   all-reduce world grads[0:50] 100 B "name" (run); start ... / wait "name" / test "name" /
//       wait any "a" "b" -> 0 (every collective is done at once: the first handle)
//       (the group: world, or its ranks as {0,2}; then data, " -> out" when out is set, the
//       bytes: data's elements x element bytes; " avg" when averaging)
//   notify 1 = 3; await 1 -> 3; poll 1 -> 3 (or "-> none")
//   step done 0 (4 samples); accumulation step 0: 3 micro-batches
class RecordingWorker final : public Worker {
public:
  RecordingWorker(scenario::Scenario scenario, int rank = 0, std::size_t max_ops = 100000);

  // Builds the algorithm's program on this worker and runs both streams to their end.
  void execute(const Algorithm& algorithm);

  const std::vector<RecordedOp>& log() const { return log_; }
  // One stream's ops, in the order it issued them; `containing`: only those with that text.
  std::vector<std::string> ops(StreamKind stream, const std::string& containing = "") const;

  int rank() const override { return rank_; }
  const Topology& topology() const override { return topology_; }
  const scenario::Scenario& scenario() const override { return scenario_; }
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
  void wait(CommHandle& handle) override;
  bool test(CommHandle& handle) override;
  std::size_t wait_any(std::span<CommHandle> handles) override;
  std::size_t wait_any_or_signal(std::span<CommHandle> handles,
                                 std::span<const int> signals) override;
  void run(const CollectiveCall& call) override;

  void notify(int signal, std::int64_t value = 0) override;
  std::int64_t await(int signal) override;
  std::optional<std::int64_t> poll(int signal) override;

  double now() const override;
  void step_done(int step, double samples) override;
  void record_accumulation(int step, int micro_batches) override;

  // `buffer[first:end]`.
  std::string str(Slice s) const;

private:
  void stream_main(int stream, WorkerProgram& program);
  // Records `text` for the calling stream, then lets the other stream run if it can.
  void record(const std::string& text);
  int calling_stream() const;
  bool runnable(int stream) const;                            // under mutex_
  void hand_over(std::unique_lock<std::mutex>& lock, int me); // under mutex_
  void fail(const std::string& why);                          // under mutex_
  std::string collective(const CollectiveCall& call) const;

  scenario::Scenario scenario_;
  int rank_;
  std::size_t max_ops_;
  Topology topology_;
  std::vector<BufferDecl> buffers_;
  std::vector<RecordedOp> log_;

  mutable std::mutex mutex_;
  std::condition_variable turn_changed_;
  int turn_ = 0; // the stream that may run (0 compute, 1 comm)
  bool done_[2] = {false, false};
  std::vector<int> awaiting_[2]; // the signals a stream is blocked on (any of them wakes it)
  std::map<int, std::deque<std::int64_t>> signals_;
  std::string error_; // set: the run failed; both streams stop
};

} // namespace overlapsim::testing
