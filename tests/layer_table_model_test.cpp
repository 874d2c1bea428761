// model.profile as a per-layer time table (*.tsv): the layers are its rows, backward bp_s, the
// all-reduces comm_s on one serial stream (sim/table_comm_time.h), forward 0; the DreamDDP
// authors' GPT-2 profile through the simulator against their cost model.
#include "test_util.h"

#include "algorithms/algorithm.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace overlapsim {
namespace {

using testing::error_of;
using testing::scenario_from;
using testing::simulate;

// Three layers: bp 1, 2, 3 ms and all-reduces 4, 5, 6 ms (input to output), two nodes.
std::string write_table(const std::string& name, const std::string& text) {
  static const testing::ScratchDir dir; // one per test process: tests run at once never share it
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

std::string three_layer_yaml() {
  const std::string table = write_table("overlapsim-three-layers.tsv", "module\tbp_s\tcomm_s\n"
                                                                       "a\t0.001\t0.004\n"
                                                                       "b\t0.002\t0.005\n"
                                                                       "c\t0.003\t0.006\n");
  return "name: table\n"
         "cluster: {nodes: 2, gpus_per_node: 1, gpu: a6000, inter_node: ethernet-10g}\n"
         "model: {profile: " +
         table + "}\ntraining: {micro_batch: 2, steps: 4}\nalgorithms: [s-sgd]\n";
}

TEST(LayerTableModel, RowsBecomeLayersWithTheirTimes) {
  const auto s = scenario_from(three_layer_yaml());
  ASSERT_EQ(s.model.spec.layers.size(), 3u);
  EXPECT_TRUE(s.model.spec.comm_times_from_table);
  EXPECT_EQ(s.model.spec.layers[2].name, "c");
  // Per micro-batch in the table: per sample is half at micro_batch 2.
  EXPECT_DOUBLE_EQ(s.model.spec.layers[2].bwd_time_per_sample_s, 0.0015);
  EXPECT_DOUBLE_EQ(s.model.spec.layers[2].fwd_time_per_sample_s, 0.0);
  EXPECT_DOUBLE_EQ(s.model.spec.layers[2].comm_time_s, 0.006);
  EXPECT_DOUBLE_EQ(s.model.spec.layers[2].params, 1.0); // no params column
}

TEST(LayerTableModel, SsgdIsBackwardPlusTheTablesAllReduces) {
  // One bucket (three one-parameter layers) reduced after the backward: 6 ms + (4 + 5 + 6) ms;
  // the optimizer step of 3 parameters and the forward take nothing.
  const auto r = simulate(scenario_from(three_layer_yaml()), "s-sgd");
  EXPECT_NEAR(r.metrics.iteration_time_s, 0.021, 1e-9);
}

TEST(LayerTableModel, AscWfbpSendsEachGroupWhenItsBackwardIsDone) {
  // Backward from the output: c 0-3, b 3-5, a 5-6 ms. c's all-reduce 3-9; b is ready at 5, after
  // c's started (a = 0), so it opens a group; a is ready at 6, before that group can start at 9,
  // so it joins it: {b, a} 9-18 (5 + 4 ms). 18 ms an iteration (a table keeps one channel: its
  // fixed-duration all-reduces cannot share a link).
  const auto r = simulate(scenario_from(three_layer_yaml()), "asc-wfbp");
  EXPECT_NEAR(r.metrics.iteration_time_s, 0.018, 1e-9);
}

TEST(LayerTableModel, ParamsColumnSplitsTimesProRata) {
  // With sizes, DDP's 25 MiB buckets cut layer c (20M bf16 parameters = 40 MB) in two buckets of
  // 3 ms each, both ready at 3 ms: 3-6, 6-9; then b (5M) and a (5M) in one bucket ready at 6:
  // 9-18 ms. PyTorch's default bucket copies (gradient_as_bucket_view false) at 768 GB/s: c's two
  // buckets (10M x 4 B, 52 us each) are copied in before release, so the comm stream starts at
  // 3.052 ms; the copy back of all 30M (156 us) precedes AdamW. Memory: 30M parameters x
  // (2 + 2 + 12) bytes and the 2-byte bucket copy of each gradient.
  const std::string table = write_table("overlapsim-sized.tsv", "module\tbp_s\tcomm_s\tparams\n"
                                                                "a\t0.001\t0.004\t5e6\n"
                                                                "b\t0.002\t0.005\t5e6\n"
                                                                "c\t0.003\t0.006\t20e6\n");
  const auto s = scenario_from(
      "name: t\ncluster: {nodes: 2, gpus_per_node: 1, gpu: a6000, inter_node: ethernet-10g}\n"
      "model: {profile: " +
      table + "}\ntraining: {micro_batch: 1, steps: 4}\nalgorithms: [ddp]\n");
  const auto r = simulate(s, "ddp");
  EXPECT_NEAR(r.metrics.iteration_time_s,
              0.018 + 10e6 * 4 / 768e9 + 30e6 * 4 / 768e9 + 30e6 * 28 / 768e9, 1e-7);
  EXPECT_NEAR(r.metrics.peak_memory_bytes, 30e6 * 18, 1);
}

TEST(LayerTableModel, BadTablesAndKeysAreNamed) {
  const std::string table = write_table("overlapsim-bad.tsv", "module\tbp_s\n"
                                                              "a\t0.001\n");
  EXPECT_THAT(
      error_of("name: t\ncluster: {nodes: 2, gpus_per_node: 1, gpu: a6000, inter_node: "
               "ethernet-10g}\nmodel: {profile: " +
               table + "}\ntraining: {micro_batch: 1, steps: 2}\nalgorithms: [s-sgd]\n"),
      ::testing::AllOf(::testing::HasSubstr("model.profile"), ::testing::HasSubstr("'comm_s'")));
  EXPECT_THAT(
      error_of("name: t\ncluster: {nodes: 2, gpus_per_node: 1, gpu: a6000, inter_node: "
               "ethernet-10g}\nmodel: {preset: gpt2-small, profile: x.tsv}\n"
               "training: {micro_batch: 1, steps: 2}\nalgorithms: [s-sgd]\n"),
      ::testing::AllOf(::testing::HasSubstr("model.preset"), ::testing::HasSubstr("layer table")));
  EXPECT_THAT(
      error_of("name: t\ncluster: {nodes: 2, gpus_per_node: 1, gpu: a6000, inter_node: "
               "ethernet-10g}\nmodel: {profile: /nonexistent/x.tsv}\n"
               "training: {micro_batch: 1, steps: 2}\nalgorithms: [s-sgd]\n"),
      ::testing::AllOf(::testing::HasSubstr("model.profile"), ::testing::HasSubstr("cannot open")));
}

// The shipped scenario on the authors' profile against their cost model (data README), within
// 0.5 %: the simulator averages whole periods (bp + comm / H for FLSGD, bp + W / H for the partial
// schedules), the authors count 1000/H - 1 synchronisations for FLSGD and DreamDDP.
struct AuthorsNumbers {
  int H;
  double s_sgd, flsgd, plsgd, dreamddp;
};

void PrintTo(const AuthorsNumbers& n, std::ostream* os) {
  *os << "H " << n.H << ": S-SGD " << n.s_sgd << ", FLSGD " << n.flsgd << ", PLSGD " << n.plsgd
      << ", DreamDDP " << n.dreamddp << " s";
}

class AuthorsProfile : public ::testing::TestWithParam<AuthorsNumbers> {};

TEST_P(AuthorsProfile, SimulatorMatchesTheCostModel) {
  const auto p = GetParam();
  const auto s = scenario::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) +
                                         "/scenarios/dreamddp-gpt2-authors-profile.yaml");
  ASSERT_EQ(s.model.spec.layers.size(), 125u);
  const std::map<std::string, std::string> h{{"H", std::to_string(p.H)}};
  EXPECT_NEAR(simulate(s, "s-sgd").metrics.iteration_time_s, p.s_sgd, 0.005 * p.s_sgd);
  EXPECT_NEAR(simulate(s, "local-sgd", h).metrics.iteration_time_s, p.flsgd, 0.005 * p.flsgd);
  EXPECT_NEAR(simulate(s, "plsgd-enp", h).metrics.iteration_time_s, p.plsgd, 0.005 * p.plsgd);
  EXPECT_NEAR(simulate(s, "dreamddp", h).metrics.iteration_time_s, p.dreamddp, 0.005 * p.dreamddp);
}

INSTANTIATE_TEST_SUITE_P(
    LayerTableModel, AuthorsProfile,
    ::testing::Values(AuthorsNumbers{10, 0.299607, 0.094232, 0.078104, 0.076974},
                      AuthorsNumbers{5, 0.299607, 0.117026, 0.088106, 0.083928}),
    [](const ::testing::TestParamInfo<AuthorsNumbers>& numbers) {
      return "H" + std::to_string(numbers.param.H);
    });

} // namespace
} // namespace overlapsim
