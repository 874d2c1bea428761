// Time to target (issue 13): supplied loss curves, the samples at which they reach
// training.target_loss, and the wall-clock time at each algorithm's simulated throughput.
#include "test_util.h"

#include "cli/run_command.h"
#include "scenario/loss_curve.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace overlapsim {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::Not;

std::string parse_error(const std::string& text) {
  try {
    scenario::parse_loss_curves(text, "curves.csv");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(LossCurve, SamplesToReachInterpolatesBetweenTheBracketingPoints) {
  const std::vector<scenario::LossPoint> curve = {{0, 6}, {100, 4}, {200, 2}, {300, 2.5}};
  EXPECT_DOUBLE_EQ(*scenario::samples_to_reach(curve, 3), 150); // 100 + 100 (4 - 3) / (4 - 2)
  EXPECT_DOUBLE_EQ(*scenario::samples_to_reach(curve, 4), 100);
  EXPECT_DOUBLE_EQ(*scenario::samples_to_reach(curve, 7), 0);       // already there
  EXPECT_FALSE(scenario::samples_to_reach(curve, 1.5).has_value()); // never
}

TEST(LossCurve, ReadsValidatesLossCsvAndNamesFileLineAndColumnOfErrors) {
  // validate's loss.csv, as written: extra columns are ignored.
  const auto curves = scenario::parse_loss_curves("algorithm,step,samples,loss,wall_time_s\n"
                                                  "ddp,0,64,5.5,0.1\nddp,1,128,5.0,0.2\n"
                                                  "dreamddp,0,64,5.6,0.05\n",
                                                  "loss.csv");
  ASSERT_EQ(curves.size(), 2u);
  EXPECT_EQ(curves.at("ddp").size(), 2u);
  EXPECT_DOUBLE_EQ(curves.at("ddp")[1].samples, 128);
  EXPECT_DOUBLE_EQ(curves.at("dreamddp")[0].loss, 5.6);

  EXPECT_THAT(parse_error("algorithm,samples\nddp,1\n"),
              AllOf(HasSubstr("curves.csv:1"), HasSubstr("'loss'")));
  EXPECT_THAT(parse_error("algorithm,samples,loss\nddp,10,2\nddp,10,1\n"),
              AllOf(HasSubstr("curves.csv:3"), HasSubstr("'samples'"), HasSubstr("increase")));
  EXPECT_THAT(parse_error("algorithm,samples,loss\nddp,10,low\n"),
              AllOf(HasSubstr("curves.csv:2"), HasSubstr("'loss'"), HasSubstr("'low'")));
  EXPECT_THAT(parse_error("algorithm,samples,loss\nddp,10\n"),
              AllOf(HasSubstr("curves.csv:2"), HasSubstr("expected 3")));
}

class TimeToTarget : public ::testing::Test {
protected:
  void SetUp() override {
    std::ofstream(dir_ / "curves.csv") << "algorithm,samples,loss\n"
                                          "local-sgd,0,6\nlocal-sgd,100,4\nlocal-sgd,200,2\n"
                                          "plsgd-enp,0,6\nplsgd-enp,100,5\n";
  }

  // The four-layer cluster of local_sgd_test.cpp (FLSGD 25.14 ms per step with H = 2) with a
  // target and the curves above, given relative to the scenario file.
  fs::path scenario(const std::string& training_extra) {
    std::ofstream(dir_ / "s.yaml")
        << R"(name: ttt
)" + testing::round_cluster(2) +
               testing::kFourBlocks +
               R"(training: {micro_batch: 1, seq_len: 1, warmup_steps: 2, steps: 4, optimizer: adamw)"
        << training_extra << R"(}
algorithms: [{name: local-sgd, H: 2}, {name: plsgd-enp, H: 2}, {name: dreamddp, H: 2}]
)";
    return dir_ / "s.yaml";
  }
  testing::ScratchDir dir_;
};

// FLSGD reaches loss 3 at 150 samples; at 2 samples per 25.14 ms step that is 1.8855 s.
// PLSGD-ENP's curve never gets there (lowest 5); DreamDDP has no curve.
TEST_F(TimeToTarget, SuppliedCurvesGiveSamplesAndWallClockTime) {
  const auto s =
      scenario::load_scenario(scenario(", target_loss: 3, loss_curve: curves.csv").string());
  EXPECT_EQ(s.training.loss_curve, (dir_ / "curves.csv").lexically_normal().string());
  const auto rows = cli::simulate_rows(s, false);
  ASSERT_EQ(rows.size(), 3u);
  const auto& flsgd = rows[0].extra.at("time_to_target");
  EXPECT_DOUBLE_EQ(flsgd.at("target_loss").get<double>(), 3);
  EXPECT_EQ(flsgd.at("curve"), "supplied");
  EXPECT_DOUBLE_EQ(flsgd.at("samples").get<double>(), 150);
  EXPECT_NEAR(rows[0].metrics.iteration_time_s, 0.02514, 1e-5);
  EXPECT_NEAR(flsgd.at("time_s").get<double>(), 150 / 2.0 * 0.02514, 1e-3);

  const auto& plsgd = rows[1].extra.at("time_to_target");
  EXPECT_TRUE(plsgd.at("samples").is_null());
  EXPECT_TRUE(plsgd.at("time_s").is_null());
  EXPECT_DOUBLE_EQ(plsgd.at("lowest_loss").get<double>(), 5);

  const auto& dream = rows[2].extra.at("time_to_target");
  EXPECT_TRUE(dream.at("curve").is_null());
  EXPECT_TRUE(dream.at("time_s").is_null());

  // No target, no entry.
  const auto plain = cli::simulate_rows(scenario::load_scenario(scenario("").string()), false);
  EXPECT_FALSE(plain[0].extra.contains("time_to_target"));
}

TEST_F(TimeToTarget, BadCurvesFailNamingTheScenarioKeyAndTheCurveFile) {
  auto error = [&](const std::string& extra) {
    try {
      scenario::load_scenario(scenario(extra).string());
    } catch (const scenario::ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(", loss_curve: missing.csv"),
              AllOf(HasSubstr("s.yaml:12"), HasSubstr("loss_curve"), HasSubstr("cannot open")));
  std::ofstream(dir_ / "other.csv") << "algorithm,samples,loss\nddp,1,2\n";
  EXPECT_THAT(error(", loss_curve: other.csv"),
              AllOf(HasSubstr("s.yaml:12"), HasSubstr("ddp"), HasSubstr("local-sgd")));
  std::ofstream(dir_ / "bad.csv") << "algorithm,samples,loss\nlocal-sgd,1,x\n";
  EXPECT_THAT(error(", loss_curve: bad.csv"),
              AllOf(HasSubstr("bad.csv:2"), HasSubstr("'loss'"), HasSubstr("training.loss_curve")));
  EXPECT_THAT(error(", target_loss: -1"), AllOf(HasSubstr("s.yaml:12"), HasSubstr("target_loss")));
}

// Issue 27.2: with a target, time to target leads: a column on stdout, a column of summary.csv,
// and report.md's ranking. Without one, the speedups of local updates carry a caveat.
TEST_F(TimeToTarget, LeadsTheTableTheCsvAndTheReport) {
  const auto path = scenario(", target_loss: 3, loss_curve: curves.csv");
  const std::string out = (dir_ / "o").string();
  const auto [status, printed] =
      testing::run("run " + path.string() + " --no-plots --no-progress --out " + out);
  ASSERT_EQ(status, 0) << printed;
  EXPECT_THAT(printed, HasSubstr("to target"));
  EXPECT_THAT(printed, ::testing::ContainsRegex("local-sgd +1\\.89 s "));
  EXPECT_THAT(printed, ::testing::ContainsRegex("plsgd-enp +- "));
  const std::string csv = testing::slurp(dir_ / "o" / "summary.csv");
  EXPECT_THAT(csv.substr(0, csv.find('\n')), HasSubstr(",update,time_to_target_s,error"));
  EXPECT_THAT(csv, ::testing::ContainsRegex("local-sgd,.*,local,1\\.88[0-9]*,,"));
  const std::string report = testing::slurp(dir_ / "o" / "report.md");
  const auto lead = report.find("Time to reach loss 3");
  ASSERT_NE(lead, std::string::npos) << report;
  EXPECT_LT(lead, report.find("## All algorithms"));
  EXPECT_THAT(report.substr(lead), ::testing::StartsWith("Time to reach loss 3"));
  EXPECT_LT(report.find("- local-sgd: 1.89 s"), report.find("- plsgd-enp: never reached"));

  const auto plain = testing::run("run " + scenario("").string() + " --no-plots --out " + out);
  ASSERT_EQ(plain.first, 0) << plain.second;
  EXPECT_THAT(plain.second, Not(HasSubstr("to target")));
  EXPECT_THAT(testing::slurp(dir_ / "o" / "report.md"),
              HasSubstr("These speedups count samples, not progress: plsgd-enp, dreamddp, "
                        "local-sgd update each worker's model on its own"));
}
} // namespace
} // namespace overlapsim
