// Worker::wait_any on the real runtime: three RealWorkers in one process, on threads, over Gloo
// pairs. Rank 0 receives from ranks 1 and 2 and takes the first message to arrive; rank 1 sends
// only once rank 0's wait_any has returned, so a wait_any that waited for both would not return
// before rank 1 gave up waiting (5 s) and sent anyway, which the test reports.
#include "scenario/loader.h"
#include "validate/real_worker.h"

#include <array>
#include <chrono>
#include <fmt/format.h>
#include <future>
#include <gtest/gtest.h>
#include <map>
#include <torch/csrc/distributed/c10d/HashStore.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

namespace overlapsim::real {
namespace {

struct Seen {
  std::size_t first = 9, again = 9; // wait_any's answers
  float first_value = 0, other_value = 0;
  bool rank1_had_sent = true; // whether rank 1 had sent when the first answer came
};

TEST(WaitAny, RealWorkerOnGlooReturnsTheFirstMessageToArrive) {
  const auto s = scenario::load_scenario_text(
      "name: t\ncluster: {nodes: 3, gpus_per_node: 1, gpu: a100-80gb, inter_node: ethernet-10g}\n"
      "model: {preset: mlp, width: 8, depth: 2}\ntraining: {micro_batch: 1, seq_len: 1, "
      "steps: 1}\nalgorithms: [ddp]\n",
      "t.yaml");
  const Topology topology(3, 1);
  const auto store = c10::make_intrusive<c10d::HashStore>();
  const auto device = c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1");
  const auto origin = std::chrono::steady_clock::now();
  std::atomic<bool> aborted{false};
  std::promise<void> returned; // rank 0's first wait_any returned
  auto returned_future = returned.get_future().share();
  std::atomic<bool> rank1_sent{false};
  Seen seen;

  auto rank_main = [&](int rank) {
    // The pairs this rank is in, made in one order on every rank (creating one is collective).
    std::map<int, CommBackendPtr> pairs; // by the other rank
    for (int other : {1, 2})
      if (rank == 0 || rank == other) {
        const Group& g = topology.group({0, other});
        auto o = c10d::ProcessGroupGloo::Options::create(std::chrono::milliseconds(10000));
        o->devices.push_back(device);
        o->threads = 1;
        pairs[other] = c10::make_intrusive<c10d::ProcessGroupGloo>(
            c10::make_intrusive<c10d::PrefixStore>(fmt::format("pair-{}", other), store),
            g.index_of(rank), g.size(), o);
      }
    RealModel model(s);
    Dataset data(s, 8);
    RealContext ctx{s,
                    topology,
                    model,
                    data,
                    OptimizerConfig::from(s.training),
                    [&](const Group& g, StreamKind) { return pairs.at(g.ranks.back()); },
                    origin,
                    std::chrono::milliseconds(10000),
                    &aborted};
    RealWorker w(ctx, rank);
    w.enter(StreamKind::comm);
    const BufferId buf = w.declare({"messages", MemoryCategory::buffers, 2, 4});
    auto message = [&](CollectiveOp op, int from) {
      CollectiveCall c;
      c.op = op;
      c.group = &topology.group({0, from});
      c.peer = rank == 0 ? from : 0;
      c.data = Slice{buf, rank == 0 ? from - 1 : 0, 1};
      c.name = fmt::format("message from {}", from);
      return c;
    };
    if (rank == 0) {
      std::array<CommHandle, 2> from{w.start(message(CollectiveOp::recv, 1)),
                                     w.start(message(CollectiveOp::recv, 2))};
      seen.first = w.wait_any(from);
      seen.rank1_had_sent = rank1_sent.load();
      seen.first_value = w.tensor(Slice{buf, 1, 1}).item<float>();
      seen.again = w.wait_any(from); // the one done answers at once
      returned.set_value();
      w.wait(from[0]);
      seen.other_value = w.tensor(Slice{buf, 0, 1}).item<float>();
      return;
    }
    w.fill(Slice{buf, 0, 1}, static_cast<double>(rank));
    if (rank == 1) {
      returned_future.wait_for(std::chrono::seconds(5));
      rank1_sent.store(true);
    }
    w.run(message(CollectiveOp::send, rank));
  };
  std::array<std::future<void>, 3> ranks;
  for (int r = 0; r < 3; ++r)
    ranks[static_cast<std::size_t>(r)] = std::async(std::launch::async, rank_main, r);
  for (auto& f : ranks)
    f.get();
  EXPECT_EQ(seen.first, 1u);
  EXPECT_FALSE(seen.rank1_had_sent);
  EXPECT_EQ(seen.first_value, 2.0f);
  EXPECT_EQ(seen.again, 1u);
  EXPECT_EQ(seen.other_value, 1.0f);
}

} // namespace
} // namespace overlapsim::real
