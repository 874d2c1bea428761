// Workers sharing a memory system (hw::ModelSpec::memory_shared_by, sim/memory_contention.h): a
// memory-bound op runs at its alone price and makes up, after it, (contended - alone) x the share
// of its time another worker of its memory system ran one. Pinned by hand on DDP's optimizer step
// (kFourBlocks: 100M parameters; measured 10 ms with both workers stepping, 5 ms alone) and a
// measured copy.
#include "test_util.h"

#include <gtest/gtest.h>
#include <map>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

scenario::Scenario ddp(const std::string& cluster_extra = "") {
  auto s = scenario_from("name: shared-memory\n" + testing::round_cluster(2, 1, cluster_extra) +
                         testing::kFourBlocks +
                         "training: {micro_batch: 1, seq_len: 1, warmup_steps: 0, steps: 2, "
                         "optimizer: adamw}\nalgorithms: [ddp]\n");
  s.model.spec.optimizer_points = {{1e8, 0.010}};
  s.model.spec.optimizer_alone_points = {{1e8, 0.005}};
  return s;
}

// Each worker's optimizer step durations, in order.
std::map<int, std::vector<double>> steps(const Trace& t) {
  std::map<int, std::vector<double>> out;
  for (const auto& e : t.events)
    if (e.category == OpCategory::optimizer)
      out[e.worker].push_back(e.end - e.start);
  return out;
}

TEST(MemoryContention, WorkersSteppingAtOnceTakeTheContendedPrice) {
  auto s = ddp();
  s.model.spec.memory_shared_by = 2;
  for (const auto& [worker, d] : steps(simulate(s, "ddp").trace))
    for (const double seconds : d)
      EXPECT_NEAR(seconds, 0.010, 1e-9) << worker;
}

TEST(MemoryContention, AStepBesideASlowerWorkersIsMadeUpForTheOverlapOnly) {
  // GPU 1 at a third of the speed: its step's 5 ms alone take 15 ms, and it begins 0.8 ms after
  // GPU 0's (the last bucket's copy before it, 0.4 ms at full speed, takes 1.2 ms). GPU 0's step
  // runs 5 ms, all of them beside GPU 1's copy and step (each memory-bound), and makes up 5 ms:
  // 10 ms. GPU 1's overlapped GPU 0's 10 - 0.8 = 9.2 of its 15 ms: it makes up 5 x 9.2 / 15 ms
  // of work, 9.2 ms at a third of the speed: 24.2 ms.
  auto s = ddp("  stragglers: [{gpu: 1, slowdown: 3}]\n");
  s.model.spec.memory_shared_by = 2;
  const auto d = steps(simulate(s, "ddp").trace);
  ASSERT_EQ(d.at(0).size(), 2u);
  for (int step = 0; step < 2; ++step) {
    EXPECT_NEAR(d.at(0)[step], 0.010, 1e-9);
    EXPECT_NEAR(d.at(1)[step], 0.0242, 1e-9);
  }
  // Each with memory of its own: the listed (contended) price, 10 and 30 ms.
  s.model.spec.memory_shared_by = 1;
  const auto own = steps(simulate(s, "ddp").trace);
  EXPECT_NEAR(own.at(0)[0], 0.010, 1e-9);
  EXPECT_NEAR(own.at(1)[0], 0.030, 1e-9);
}

// DiLoCo's outer step (outer_step_alone_time_per_param_s). Three workers of one node (each
// simulated: no rank classes stand one for the others), memory shared by two:
// ranks 0 and 1 share a memory system and rank 2 has one of its own. All three begin their outer
// steps together after the parameters' all-reduce; 0 and 1 run theirs beside each other, 4 ms
// alone and 6 ms made up: 10 ms, the price at once; rank 2 has none beside it: 4 ms.
TEST(MemoryContention, OuterStepsBesideAnotherTakeTheContendedPriceAloneTheAlonePrice) {
  auto s = scenario_from("name: outer\n" + testing::round_cluster(1, 3) + testing::kFourBlocks +
                         "training: {micro_batch: 1, seq_len: 1, warmup_steps: 0, steps: 4, "
                         "optimizer: adamw}\nalgorithms: [ddp]\n");
  s.model.spec.memory_shared_by = 2;
  s.model.spec.outer_step_time_per_param_s = 1e-10;       // 100M parameters: 10 ms
  s.model.spec.outer_step_alone_time_per_param_s = 4e-11; // 4 ms
  const auto outer_steps = [&] {
    const auto r = simulate(s, "diloco", {{"H", "2"}});
    std::map<int, std::vector<double>> out;
    for (const auto& e : r.trace.events)
      if (r.trace.name_of(e.name) == "outer step")
        out[e.worker].push_back(e.end - e.start);
    return out;
  };
  const auto d = outer_steps();
  ASSERT_EQ(d.size(), 3u);
  for (const auto& [worker, seconds] : d) {
    ASSERT_EQ(seconds.size(), 2u) << worker; // steps 2 and 4
    for (const double t : seconds)
      EXPECT_NEAR(t, worker == 2 ? 0.004 : 0.010, 1e-9) << worker;
  }
  // Without an alone price, every outer step at the listed one.
  s.model.spec.outer_step_alone_time_per_param_s = 0;
  for (const auto& [worker, seconds] : outer_steps())
    for (const double t : seconds)
      EXPECT_NEAR(t, 0.010, 1e-9) << worker;
}

TEST(MemoryContention, WithoutAnAlonePriceNothingChanges) {
  auto s = ddp("  stragglers: [{gpu: 1, slowdown: 3}]\n");
  s.model.spec.optimizer_alone_points.clear();
  s.model.spec.memory_shared_by = 2;
  const auto d = steps(simulate(s, "ddp").trace);
  EXPECT_NEAR(d.at(0)[0], 0.010, 1e-9);
  EXPECT_NEAR(d.at(1)[0], 0.030, 1e-9);
}

} // namespace
} // namespace overlapsim
