// The simulation process boundary: a deadlocked algorithm fails cleanly with a message.
#include "algorithms/algorithm.h"
#include "scenario/loader.h"
#include "sim/sim_runtime.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

// Waits for a signal nobody sends.
class Deadlock final : public Algorithm {
public:
  std::string name() const override { return "deadlock"; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class P final : public WorkerProgram {
    public:
      explicit P(Worker& worker) : w_(worker) {}
      void run_compute() override { w_.await(7); }
      void run_comm() override {}

    private:
      Worker& w_;
    };
    return std::make_unique<P>(w);
  }
};

TEST(SimRuntime, DeadlockedAlgorithmFailsWithItsName) {
  const auto s = scenario::load_scenario_text(R"(name: d
cluster: {nodes: 1, gpus_per_node: 2, gpu: a100-80gb, intra_node: nvlink3}
model: {preset: gpt-neo-125m}
training: {micro_batch: 1, seq_len: 128}
algorithms: [ddp]
)",
                                              "d.yaml");
  try {
    sim::simulate(s, Deadlock());
    FAIL() << "a deadlock must not succeed";
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("simulation of 'deadlock' failed"));
  }
  // The parent process is unaffected: another simulation runs fine afterwards.
  scenario::AlgorithmSpec ddp;
  ddp.name = ddp.label = "ddp";
  EXPECT_FALSE(sim::simulate(s, ddp).trace.events.empty());
}

} // namespace
} // namespace overlapsim
