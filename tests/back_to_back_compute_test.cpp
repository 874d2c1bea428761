// model.back_to_back_compute_ratio (hw::ModelSpec): a micro-batch whose forward follows a
// backward on its stream, with no other op between, runs forward and backward at that ratio of the
// layers' times, which the profile measures after a whole step (sim/sim_worker.cpp). Pinned by
// hand on four blocks of 1 ms forward and 2 ms backward.
#include "scenario/calibration.h"
#include "test_util.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <map>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

std::string scenario_text(int grad_accum, const std::string& model_extra = "") {
  return "name: back-to-back\n" + testing::round_cluster(2) + testing::kFourBlocks + model_extra +
         "training: {micro_batch: 1, seq_len: 1, grad_accum: " + std::to_string(grad_accum) +
         ", warmup_steps: 0, steps: 2, optimizer: adamw}\nalgorithms: [ddp]\n";
}

// GPU 0's forward and backward time per (step, micro-batch).
std::map<std::pair<int, int>, std::pair<double, double>> passes(const Trace& t) {
  std::map<std::pair<int, int>, std::pair<double, double>> out;
  for (const auto& e : t.events) {
    if (e.worker != 0 || e.stream != StreamKind::compute)
      continue;
    auto& [forward, backward] = out[{e.step, e.micro_batch}];
    if (e.category == OpCategory::forward)
      forward += e.end - e.start;
    else if (e.category == OpCategory::backward)
      backward += e.end - e.start;
  }
  return out;
}

// Gradient accumulation over two micro-batches: the second follows the first's backward (4 ms of
// forward, 8 ms of backward at 0.8: 3.2 and 6.4 ms); each step's first follows the optimizer step
// (or nothing) and keeps the layers' times.
TEST(BackToBackCompute, AMicroBatchRightAfterABackwardRunsAtTheRatio) {
  auto s = scenario_from(scenario_text(2));
  s.model.spec.back_to_back_compute_ratio = 0.8;
  const auto t = passes(simulate(s, "ddp").trace);
  for (int step = 0; step < 2; ++step) {
    const auto [f0, b0] = t.at({step, 0});
    const auto [f1, b1] = t.at({step, 1});
    EXPECT_NEAR(f0, 0.004, 1e-9) << step;
    EXPECT_NEAR(b0, 0.008, 1e-9) << step;
    EXPECT_NEAR(f1, 0.0032, 1e-9) << step;
    EXPECT_NEAR(b1, 0.0064, 1e-9) << step;
  }
  // Unmeasured (1), the same price either way.
  const auto plain = passes(simulate(scenario_from(scenario_text(2)), "ddp").trace);
  EXPECT_NEAR(plain.at({1, 1}).first, 0.004, 1e-9);
  EXPECT_NEAR(plain.at({1, 1}).second, 0.008, 1e-9);
}

TEST(BackToBackCompute, ComesFromAMeasuredProfileAndIsBounded) {
  scenario::Calibration c;
  c.model = "back-to-back";
  c.layers = {{"block0", 1e-3, 2e-3},
              {"block1", 1e-3, 2e-3},
              {"block2", 1e-3, 2e-3},
              {"block3", 1e-3, 2e-3}};
  c.back_to_back_compute_ratio = 0.85;
  const testing::ScratchDir dir;
  const auto path = dir / "profile.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_DOUBLE_EQ(scenario::read_calibration(path.string()).back_to_back_compute_ratio, 0.85);
  const auto s = scenario_from(scenario_text(1, "  profile: " + path.string() + "\n"));
  EXPECT_DOUBLE_EQ(s.model.spec.back_to_back_compute_ratio, 0.85);
  EXPECT_DOUBLE_EQ(scenario_from(scenario_text(1)).model.spec.back_to_back_compute_ratio, 1.0);
  c.back_to_back_compute_ratio = 5;
  std::ofstream(path) << scenario::calibration_json(c);
  try {
    scenario::read_calibration(path.string());
    ADD_FAILURE() << "a ratio of 5 was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("back_to_back_compute_ratio"), std::string::npos)
        << e.what();
  }
}

} // namespace
} // namespace overlapsim
