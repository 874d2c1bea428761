// cluster.gpu.comm_stream_share: when both streams of a GPU compute (ACCO's update beside the next
// forward), the communication stream gets that share of the GPU's speed (sim/sim_worker.cpp).
// Pinned by hand on two element-wise fills of 10 ms each, started together.
#include "algorithms/algorithm.h"
#include "scenario/calibration.h"
#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;

// Each stream fills 2.5M fp32 values (10 MB: 10 ms at 1 GB/s) at time 0.
class TwoFills final : public Algorithm {
public:
  std::string name() const override { return "two-fills"; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class P final : public WorkerProgram {
    public:
      explicit P(Worker& worker)
          : w_(worker), a_(w_.declare({"a", MemoryCategory::buffers, 2'500'000, 4})),
            b_(w_.declare({"b", MemoryCategory::buffers, 2'500'000, 4})) {}
      void run_compute() override { w_.fill(Slice{a_, 0, 2'500'000}, 0); }
      void run_comm() override { w_.fill(Slice{b_, 0, 2'500'000}, 0); }

    private:
      Worker& w_;
      BufferId a_, b_;
    };
    return std::make_unique<P>(w);
  }
};

std::string scenario_text(const std::string& gpu_extra) {
  return "name: share\ncluster: {nodes: 1, gpus_per_node: 1, gpu: {name: g, peak_tflops: 100, "
         "memory: 80GB, hbm_bandwidth: 1GB/s" +
         gpu_extra +
         "}}\nmodel: {preset: mlp, width: 64, depth: 2}\ntraining: {micro_batch: 1, seq_len: 1}\n"
         "algorithms: [ddp]\n";
}

// When each stream's fill ends: {compute, comm}.
std::pair<double, double> fill_ends(const std::string& gpu_extra) {
  const auto result = sim::simulate(scenario_from(scenario_text(gpu_extra)), TwoFills());
  std::pair<double, double> ends{-1, -1};
  for (const auto& e : result.trace.events)
    (e.stream == StreamKind::compute ? ends.first : ends.second) = e.end;
  return ends;
}

// At 0.8 the communication stream's fill runs at 0.8 of the GPU: done at 12.5 ms, while the
// compute stream's did 0.2 x 12.5 = 2.5 ms of its 10, the other 7.5 ms at full speed: 20 ms. At the
// default 0.5 both end at 20 ms; at 0.2 the other way round.
TEST(CommStreamShare, TheCommunicationStreamGetsItsShareWhileBothCompute) {
  const auto [compute_even, comm_even] = fill_ends("");
  EXPECT_NEAR(compute_even, 0.020, 1e-9);
  EXPECT_NEAR(comm_even, 0.020, 1e-9);
  const auto [compute_80, comm_80] = fill_ends(", comm_stream_share: 0.8");
  EXPECT_NEAR(comm_80, 0.0125, 1e-9);
  EXPECT_NEAR(compute_80, 0.020, 1e-9);
  const auto [compute_20, comm_20] = fill_ends(", comm_stream_share: 0.2");
  EXPECT_NEAR(compute_20, 0.0125, 1e-9);
  EXPECT_NEAR(comm_20, 0.020, 1e-9);
}

TEST(CommStreamShare, KeyAndProfileSetIt) {
  EXPECT_EQ(scenario_from(scenario_text("")).cluster.gpu.comm_stream_share, 0.5);
  EXPECT_EQ(scenario_from(scenario_text(", comm_stream_share: 0.7")).cluster.gpu.comm_stream_share,
            0.7);
  EXPECT_THROW(scenario_from(scenario_text(", comm_stream_share: 0.99")), std::runtime_error);
  EXPECT_THROW(scenario_from(scenario_text(", comm_stream_share: 0")), std::runtime_error);
  // A profile's measured share reaches the GPU, and survives the file's round trip.
  const testing::ScratchDir dir;
  const auto s = scenario_from(scenario_text(""));
  scenario::Calibration c;
  c.model = s.model.spec.name;
  for (const auto& layer : s.model.spec.layers)
    c.layers.push_back({layer.name, 1e-6, 2e-6});
  c.comm_stream_share = 0.85;
  const auto path = dir / "profile.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(scenario::read_calibration(path.string()).comm_stream_share, 0.85);
  auto text = scenario_text("");
  text.replace(text.find("depth: 2}"), 9, "depth: 2, profile: " + path.string() + "}");
  EXPECT_EQ(scenario_from(text).cluster.gpu.comm_stream_share, 0.85);
  c.comm_stream_share = 1.5;
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_THROW(scenario::read_calibration(path.string()), std::runtime_error);
}

} // namespace
} // namespace overlapsim
