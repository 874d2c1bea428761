// Worker::wait_any in the simulator: a stream takes the first of several receives to arrive, as
// MPI_Waitany does (CDP-v2's relay, algorithms/cdp.cpp). Pinned by hand on three GPUs at 1 GB/s.
#include "algorithms/algorithm.h"
#include "test_util.h"

#include <array>
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <span>

namespace overlapsim {
namespace {

using testing::scenario_from;

constexpr std::int64_t kMB = 250'000; // fp32 elements: 1 MB, 1 ms on the link and in HBM

// Ranks 1 and 2 fill 10 and 4 MB (10 and 4 ms at 1 GB/s of HBM), then send rank 0 1 MB each
// (1 ms). Rank 0 posts both receives at once and marks each return of wait_any with a fill of
// (index + 1) MB, so the trace shows when it returned and which receive it returned.
class TwoSenders final : public Algorithm {
public:
  std::string name() const override { return "two-senders"; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class P final : public WorkerProgram {
    public:
      explicit P(Worker& worker)
          : w_(worker), data_(w_.declare({"data", MemoryCategory::buffers, 20 * kMB, 4})) {}
      void run_compute() override {
        if (w_.rank() == 0) {
          receiver();
          return;
        }
        w_.fill(Slice{data_, 0, (w_.rank() == 1 ? 10 : 4) * kMB}, 0);
        w_.run(message(CollectiveOp::send, w_.rank(), 0));
      }
      void run_comm() override {}

    private:
      void receiver() {
        std::array<CommHandle, 2> from{w_.start(message(CollectiveOp::recv, 1, 0)),
                                       w_.start(message(CollectiveOp::recv, 2, kMB))};
        // An invalid handle counts as done: no wait, index 0 (marked by a 0.5 MB fill at 0).
        std::array<CommHandle, 2> with_none{CommHandle{}, from[0]};
        mark(w_.wait_any(with_none), kMB / 2);
        // Rank 2's message arrives first, at 4 + 1 = 5 ms: index 1 (2 MB, 5 to 7 ms).
        mark(w_.wait_any(from));
        // Asked again, the one already done answers at once, rank 1's still in flight (7-9 ms).
        mark(w_.wait_any(from));
        // Rank 1's arrives at 10 + 1 = 11 ms; a span of one is wait() (1 MB, 11 to 12 ms).
        mark(w_.wait_any(std::span(from.data(), 1)));
      }
      void mark(std::size_t index, std::int64_t elements = -1) {
        w_.fill(
            Slice{data_, 0, elements >= 0 ? elements : static_cast<std::int64_t>(index + 1) * kMB},
            1);
      }
      CollectiveCall message(CollectiveOp op, int sender, std::int64_t offset) const {
        CollectiveCall c;
        c.op = op;
        c.group = &w_.topology().group({0, sender});
        c.peer = op == CollectiveOp::send ? 0 : sender;
        c.data = Slice{data_, 10 * kMB + offset, kMB};
        c.name = fmt::format("message from {}", sender);
        return c;
      }
      Worker& w_;
      BufferId data_;
    };
    return std::make_unique<P>(w);
  }
};

TEST(WaitAny, SimulatorReturnsTheFirstReceiveToArrive) {
  const auto s = scenario_from(
      "name: wait-any\ncluster: {nodes: 3, gpus_per_node: 1, gpu: {name: g, peak_tflops: 100, "
      "memory: 80GB, hbm_bandwidth: 1GB/s}, inter_node: {bandwidth: 1GB/s, latency: 0us}, "
      "collectives: fused}\n"
      "model: {preset: mlp, width: 64, depth: 2}\ntraining: {micro_batch: 1, seq_len: 1}\n"
      "algorithms: [ddp]\n");
  const auto result = sim::simulate(s, TwoSenders());
  std::vector<std::pair<double, double>> marks; // rank 0's fills: (start, end) in ms
  for (const auto& e : result.trace.events)
    if (e.worker == 0 && e.category == OpCategory::copy)
      marks.emplace_back(e.start * 1e3, e.end * 1e3);
  ASSERT_EQ(marks.size(), 4u);
  const std::pair<double, double> expected[] = {{0, 0.5}, {5, 7}, {7, 9}, {11, 12}};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_NEAR(marks[i].first, expected[i].first, 0.01) << "mark " << i;
    EXPECT_NEAR(marks[i].second, expected[i].second, 0.01) << "mark " << i;
  }
}

} // namespace
} // namespace overlapsim
