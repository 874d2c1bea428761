// The ACCO paper's Table 3 scenarios against the paper's own numbers (issue 12): the speedup of
// ACCO over the authors' DDP baseline, 1 / (1 - dT) of Table 3's time reductions. Inside one node
// the model is uncalibrated; across nodes the paper's network delivered far less than its line
// rate, so the multi-node scenarios are the `-calibrated` variants, whose inter-node bandwidth is
// fitted to the paper's DDP time only: ACCO's time, and so the speedup, is predicted.
#include "test_util.h"

#include "scenario/loader.h"

#include <gtest/gtest.h>

#include <cctype>
#include <string>

namespace overlapsim {
namespace {

double throughput(const scenario::Scenario& s, const std::string& label) {
  for (const auto& a : s.algorithms) {
    if (a.label != label)
      continue;
    const auto result = sim::simulate(s, a);
    return compute_metrics(result.trace, s.training.warmup_steps, s.training.steps)
        .throughput_samples_s;
  }
  ADD_FAILURE() << s.name << " has no algorithm labelled " << label;
  return 1;
}

struct PaperRow {
  const char* scenario;
  double time_reduction; // Table 3's dT
};

void PrintTo(const PaperRow& row, std::ostream* os) {
  *os << row.scenario << ", dT " << row.time_reduction;
}

class AccoTable3 : public ::testing::TestWithParam<PaperRow> {};

TEST_P(AccoTable3, SpeedupOverTheAuthorsDdpWithin15Percent) {
  const auto s = scenario::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/" +
                                         GetParam().scenario);
  const double paper = 1 / (1 - GetParam().time_reduction);
  const double simulated = throughput(s, "acco") / throughput(s, "ddp-paper");
  EXPECT_NEAR(simulated / paper, 1.0, 0.15)
      << s.name << ": simulated " << simulated << "x, paper " << paper << "x";
}

INSTANTIATE_TEST_SUITE_P(
    Paper, AccoTable3,
    ::testing::Values(PaperRow{"acco-table3-gpt-neo-125m-1x8-h100.yaml", 0.0569},
                      PaperRow{"acco-table3-gpt-neo-125m-4x8-a100-calibrated.yaml", 0.2565},
                      PaperRow{"acco-table3-gpt-neo-2.7b-finetune-1x8-a100.yaml", 0.4186},
                      PaperRow{"acco-table3-gpt-neo-2.7b-finetune-2x4-a100-calibrated.yaml",
                               0.8717}),
    // Test names from the scenario file: gpt_neo_125m_1x8_h100, ...
    [](const ::testing::TestParamInfo<PaperRow>& row) {
      std::string name = row.param.scenario;
      name = name.substr(std::string("acco-table3-").size());
      name = name.substr(0, name.size() - std::string(".yaml").size());
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)))
          c = '_';
      return name;
    });

} // namespace
} // namespace overlapsim
