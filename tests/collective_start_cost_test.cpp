// hw::GpuSpec's collective_start_cost_by_op: the start of a collective takes compute from its
// worker (on a CPU worker the issuing thread's copies, Gloo's thread and the TCP stack), at its
// measured share of the speed while its work lasts (sim/sim_worker.cpp, begin_start_cost). Pinned
// by hand on a fill beside an all-gather's start, with the cost read from a profile.
#include "algorithms/algorithm.h"
#include "scenario/calibration.h"
#include "test_util.h"

#include <fstream>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;

// At time 0 the compute stream fills `fill_elements` fp32 values (at 1 GB/s, 4 ns each) while the
// communication stream starts an all-gather of 1,000 elements between the two GPUs and waits.
class FillBesideStart final : public Algorithm {
public:
  explicit FillBesideStart(std::int64_t fill_elements) : fill_(fill_elements) {}
  std::string name() const override { return "fill-beside-start"; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class P final : public WorkerProgram {
    public:
      P(Worker& worker, std::int64_t fill)
          : w_(worker), fill_(fill), a_(w_.declare({"a", MemoryCategory::buffers, fill, 4})),
            b_(w_.declare({"b", MemoryCategory::buffers, 2000, 4})),
            pair_(w_.topology().group({0, 1})) {}
      void run_compute() override { w_.fill(Slice{a_, 0, fill_}, 0); }
      void run_comm() override {
        CollectiveCall c;
        c.op = CollectiveOp::all_gather;
        c.group = &pair_;
        c.data = Slice{b_, w_.rank() * 1000, 1000};
        c.out = Slice{b_, 0, 2000};
        c.name = "gather";
        CommHandle h = w_.start(c);
        w_.wait(h);
      }

    private:
      Worker& w_;
      std::int64_t fill_;
      BufferId a_, b_;
      const Group& pair_;
    };
    return std::make_unique<P>(w, fill_);
  }

private:
  std::int64_t fill_;
};

// A scenario whose profile gives the all-gather's start `fixed_s` + 1 ns per byte (4 us for the
// 1,000 elements) at `share`, or no start cost.
scenario::Scenario scenario_with(const testing::ScratchDir& dir, std::optional<double> fixed_s,
                                 double share) {
  const std::string text =
      "name: start\ncluster: {nodes: 1, gpus_per_node: 2, gpu: {name: g, peak_tflops: 100, "
      "memory: 80GB, hbm_bandwidth: 1GB/s}, intra_node: {bandwidth: 100GB/s, latency: 1us}}\n"
      "model: {preset: mlp, width: 64, depth: 2}\n"
      "training: {micro_batch: 1, seq_len: 1}\nalgorithms: [ddp]\n";
  auto s = scenario_from(text);
  scenario::Calibration c;
  c.model = s.model.spec.name;
  for (const auto& layer : s.model.spec.layers)
    c.layers.push_back({layer.name, 1e-6, 2e-6});
  if (fixed_s)
    c.collective_start_costs["all_gather"] = {*fixed_s, 1e-9, share};
  const auto path = dir / "profile.json";
  std::ofstream(path) << scenario::calibration_json(c);
  auto with = text;
  with.replace(with.find("depth: 2}"), 9, "depth: 2, profile: " + path.string() + "}");
  return scenario_from(with);
}

// When rank 0's fill ends.
double fill_end(const scenario::Scenario& s, std::int64_t elements) {
  const auto result = sim::simulate(s, FillBesideStart(elements));
  for (const auto& e : result.trace.events)
    if (e.worker == 0 && e.stream == StreamKind::compute)
      return e.end;
  return -1;
}

// A 10 ms fill beside a start of 1.996 + 0.004 = 2 ms at share 0.5: both at half the speed until
// the start's work is done (4 ms; the fill did 2 of its 10 ms), then the fill alone: 12 ms. At
// share 0.8 the start is done at 2.5 ms, the fill did 0.5: 12 ms again. A long op loses the whole
// cost, whatever the share. Without a start cost the fill takes its 10 ms.
TEST(CollectiveStartCost, AnOpLongerThanTheStartsWorkLosesItAll) {
  const testing::ScratchDir dir;
  EXPECT_NEAR(fill_end(scenario_with(dir, std::nullopt, 0.5), 2'500'000), 0.010, 1e-9);
  EXPECT_NEAR(fill_end(scenario_with(dir, 1.996e-3, 0.5), 2'500'000), 0.012, 1e-9);
  EXPECT_NEAR(fill_end(scenario_with(dir, 1.996e-3, 0.8), 2'500'000), 0.012, 1e-9);
}

// A 1 ms fill beside the same 2 ms start: at share 0.5 both run at half the speed and the fill ends
// at 2 ms, having lost 1 ms (its own time x 0.5 / 0.5); at share 0.8 the start's work ends at
// 2.5 ms with the fill at 0.5 ms, which ends 0.5 ms later: 3 ms.
TEST(CollectiveStartCost, AShorterOpLosesTheStartsShareOfItsSpeed) {
  const testing::ScratchDir dir;
  EXPECT_NEAR(fill_end(scenario_with(dir, 1.996e-3, 0.5), 250'000), 0.002, 1e-9);
  EXPECT_NEAR(fill_end(scenario_with(dir, 1.996e-3, 0.8), 250'000), 0.003, 1e-9);
}

TEST(CollectiveStartCost, TheProfilesCostSurvivesItsFile) {
  const testing::ScratchDir dir;
  scenario::Calibration c;
  c.model = "mlp";
  c.layers.push_back({"fc0", 1e-6, 2e-6});
  c.collective_start_costs["reduce_scatter"] = {5e-4, 8e-11, 0.6};
  const auto path = dir / "profile.json";
  std::ofstream(path) << scenario::calibration_json(c);
  const auto back = scenario::read_calibration(path.string());
  ASSERT_EQ(back.collective_start_costs.count("reduce_scatter"), 1u);
  const auto& cost = back.collective_start_costs.at("reduce_scatter");
  EXPECT_EQ(cost.fixed_s, 5e-4);
  EXPECT_EQ(cost.per_byte_s, 8e-11);
  EXPECT_EQ(cost.share, 0.6);
  // A share outside [0.01, 0.99] or an unknown collective is an error naming the key.
  c.collective_start_costs["reduce_scatter"].share = 1.0;
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_THROW(scenario::read_calibration(path.string()), std::runtime_error);
  c.collective_start_costs.clear();
  c.collective_start_costs["gather"] = {5e-4, 0, 0.5};
  std::ofstream(path) << scenario::calibration_json(c);
  try {
    scenario::read_calibration(path.string());
    FAIL() << "an unknown collective was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("collective_start_costs.gather"), std::string::npos);
  }
}

} // namespace
} // namespace overlapsim
