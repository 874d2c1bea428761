// Scenario loading: typed values, --set overrides, and errors that name file, line and key.
#include "cli/report.h"
#include "scenario/loader.h"
#include "test_util.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim::scenario {
namespace {

using overlapsim::testing::error_of;
using overlapsim::testing::replace;
using ::testing::HasSubstr;

const char* kValid = R"(name: t
seed: 7
cluster:
  nodes: 2
  gpus_per_node: 4
  gpu: a100-80gb
  intra_node: nvlink3
  inter_node: {bandwidth: 100Gb/s, latency: 2us}
  stragglers:
    - {gpu: 5, slowdown: 4.0}
model:
  preset: gpt-neo-125m
training: {micro_batch: 4, seq_len: 1024, steps: 3}
algorithms:
  - ddp
  - {name: s-sgd, bucket_cap: 10MB}
)";

// A scenario of `cluster` (a YAML flow map) with a small model.
std::string text(const std::string& cluster) {
  return "name: t\ncluster: " + cluster +
         "\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: 128}\n"
         "algorithms: [ddp]\n";
}

TEST(Loader, SystemPresetFillsTheNodeWithOneNicPerGpu) {
  const auto s = load_scenario_text(text("{preset: dgx-h100, nodes: 2}"), "t.yaml");
  EXPECT_EQ(s.cluster.gpus_per_node, 8);
  EXPECT_EQ(s.cluster.gpu.name, "h100-sxm");
  EXPECT_EQ(s.cluster.intra_node.name, "nvlink4");
  EXPECT_EQ(s.cluster.inter_node.name, "ib-ndr");
  EXPECT_EQ(s.cluster.nics_per_node, 8);                      // one per GPU, as a DGX H100 has
  EXPECT_DOUBLE_EQ(s.cluster.inter_node.bandwidth_Bps, 46e9); // 400 Gb/s x 0.92
  // The echo a user reads (stdout and report.md): 8 NICs, 8 x 46 = 368 GB/s a node.
  EXPECT_THAT(cli::network_summary(s), HasSubstr("8 NICs per node (368 GB/s per node)"));
  // The cluster's own keys win.
  const auto own = load_scenario_text(
      text("{preset: dgx-a100, nodes: 2, gpus_per_node: 4, nics_per_node: 2, inter_node: "
           "ethernet-100g}"),
      "t.yaml");
  EXPECT_EQ(own.cluster.gpus_per_node, 4);
  EXPECT_EQ(own.cluster.nics_per_node, 2);
  EXPECT_EQ(own.cluster.inter_node.name, "ethernet-100g");
  EXPECT_EQ(own.cluster.gpu.name, "a100-80gb");
  EXPECT_EQ(own.cluster.intra_node.name, "nvlink3");
  EXPECT_THAT(error_of(text("{preset: dgx-z, nodes: 1}")),
              HasSubstr("unknown system preset 'dgx-z'; expected one of: aws-p4de, aws-p5, "
                        "dgx-a100, dgx-b200, dgx-h100, gb200-nvl72, gcp-a3-high, gcp-a3-mega, "
                        "l40s-8-pcie, mi300x-8"));
}

// Issue 66: systems whose fabric decides. GB200 NVL72's NVLink domain is the rack: one node of
// 72 GPUs on NVLink 5, a NIC each; AWS p5's 32 EFA ports for 8 GPUs; MI300X's xGMI mesh.
TEST(Loader, SystemPresetsOfNewFabrics) {
  const auto nvl72 = load_scenario_text(text("{preset: gb200-nvl72, nodes: 2}"), "t.yaml");
  EXPECT_EQ(nvl72.cluster.gpus_per_node, 72);
  EXPECT_EQ(nvl72.cluster.nics_per_node, 72);
  EXPECT_EQ(nvl72.cluster.gpu.compute_capability, 100);
  EXPECT_DOUBLE_EQ(nvl72.cluster.intra_node.bandwidth_Bps, 720e9); // 900 GB/s x 0.80
  EXPECT_TRUE(nvl72.cluster.intra_node.nvlink_sharp);
  const auto p5 = load_scenario_text(text("{preset: aws-p5, nodes: 2}"), "t.yaml");
  EXPECT_EQ(p5.cluster.nics_per_node, 32);
  EXPECT_DOUBLE_EQ(p5.cluster.inter_node.bandwidth_Bps, 11.5e9); // 100 Gb/s x 0.92
  const auto mi300x = load_scenario_text(text("{preset: mi300x-8, nodes: 1}"), "t.yaml");
  EXPECT_EQ(mi300x.cluster.intra_node.kind, hw::LinkKind::xgmi);
  EXPECT_DOUBLE_EQ(mi300x.cluster.intra_node.bandwidth_Bps, 336e9); // 7 x 64 GB/s x 0.75
  EXPECT_EQ(mi300x.cluster.gpu.compute_capability, 0);              // RCCL, not NCCL's tables
  // GCP's TCPXO profile: NCCL_PROTO=Simple, NCCL_NVLS_ENABLE=0.
  const auto a3 = load_scenario_text(text("{preset: gcp-a3-mega, nodes: 2}"), "t.yaml");
  EXPECT_EQ(a3.cluster.nccl_protocol, NcclProtocolChoice::simple);
  EXPECT_FALSE(a3.cluster.intra_node.nvlink_sharp);
  EXPECT_EQ(a3.cluster.nics_per_node, 8);
  // A transport's per-message cost is a link key.
  const auto own = load_scenario_text(
      text("{preset: aws-p5, nodes: 2, inter_node: {preset: efa-100g, message_cost: 12us}}"),
      "t.yaml");
  EXPECT_DOUBLE_EQ(own.cluster.inter_node.message_cost_s, 12e-6);
}

TEST(Loader, ReadsTypedValues) {
  const auto s = load_scenario_text(kValid, "t.yaml");
  EXPECT_EQ(s.name, "t");
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.cluster.world_size(), 8);
  EXPECT_DOUBLE_EQ(s.cluster.inter_node.bandwidth_Bps, 12.5e9); // 100 Gb/s = 12.5 GB/s
  EXPECT_DOUBLE_EQ(s.cluster.inter_node.latency_s, 2e-6);
  EXPECT_DOUBLE_EQ(s.cluster.slowdown_of(5), 4.0);
  EXPECT_DOUBLE_EQ(s.cluster.slowdown_of(4), 1.0);
  EXPECT_EQ(s.training.grad_accum, 1);
  EXPECT_EQ(s.training.warmup_steps, 1);
  ASSERT_EQ(s.algorithms.size(), 2u);
  EXPECT_EQ(s.algorithms[1].options.at("bucket_cap").value, "10MB");
  EXPECT_EQ(s.output.dir, "out/t");
  EXPECT_EQ(s.cluster.network_model, NetworkModel::exact);
}

TEST(Loader, SetOverridesKeysByDottedPath) {
  const auto s =
      load_scenario_text(kValid, "t.yaml",
                         {"cluster.nodes=8", "cluster.inter_node.bandwidth=10Gb/s",
                          "algorithms.1.bucket_cap=1MB", "algorithms.0.bucket_cap=2MB",
                          "cluster.stragglers=[{gpu: 30, slowdown: 2}]", "output.dir=/tmp/x"});
  EXPECT_EQ(s.cluster.nodes, 8);
  EXPECT_DOUBLE_EQ(s.cluster.inter_node.bandwidth_Bps, 1.25e9);
  EXPECT_EQ(s.algorithms[1].options.at("bucket_cap").value, "1MB");
  EXPECT_EQ(s.algorithms[0].name, "ddp");
  EXPECT_EQ(s.algorithms[0].options.at("bucket_cap").value, "2MB");
  EXPECT_DOUBLE_EQ(s.cluster.slowdown_of(30), 2.0);
  EXPECT_EQ(s.output.dir, "/tmp/x");
  // A key inside a preset keeps the preset's other values.
  const auto t = load_scenario_text(kValid, "t.yaml", {"cluster.intra_node.latency=3us"});
  EXPECT_DOUBLE_EQ(t.cluster.intra_node.latency_s, 3e-6);
  EXPECT_DOUBLE_EQ(t.cluster.intra_node.bandwidth_Bps, 234e9); // nvlink3's
  // `bandwidth` is a line rate: the preset's efficiency (0.78) applies unless one is given.
  const auto u = load_scenario_text(kValid, "t.yaml", {"cluster.intra_node.bandwidth=100GB/s"});
  EXPECT_DOUBLE_EQ(u.cluster.intra_node.bandwidth_Bps, 78e9);
  const auto v = load_scenario_text(kValid, "t.yaml", {"cluster.intra_node.efficiency=0.5"});
  EXPECT_DOUBLE_EQ(v.cluster.intra_node.bandwidth_Bps, 150e9);
  EXPECT_DOUBLE_EQ(v.cluster.intra_node.line_rate_Bps(), 300e9);
}

TEST(Loader, UnknownKeyNamesFileLineAndKey) {
  const auto e =
      error_of(replace(kValid, "  gpus_per_node: 4\n", "  gpus_per_node: 4\n  gpus: 3\n"));
  EXPECT_THAT(e, HasSubstr("bad.yaml:6"));
  EXPECT_THAT(e, HasSubstr("cluster.gpus"));
  EXPECT_THAT(e, HasSubstr("unknown key"));
}

TEST(Loader, BadUnitSaysWhatIsExpected) {
  const auto e = error_of(replace(kValid, "bandwidth: 100Gb/s", "bandwidth: 100 apples"));
  EXPECT_THAT(e, HasSubstr("bad.yaml:8"));
  EXPECT_THAT(e, HasSubstr("cluster.inter_node.bandwidth"));
  EXPECT_THAT(e, HasSubstr("100 apples"));
}

TEST(Loader, StragglerPastTheLastGpuIsAnError) {
  const auto e = error_of(replace(kValid, "{gpu: 5,", "{gpu: 8,"));
  EXPECT_THAT(e, HasSubstr("bad.yaml:10"));
  EXPECT_THAT(e, HasSubstr("cluster.stragglers.0.gpu"));
  EXPECT_THAT(e, HasSubstr("[0, 7]"));
}

TEST(Loader, MissingRequiredKeyAndUnknownPreset) {
  EXPECT_THAT(error_of(replace(kValid, "  nodes: 2\n", "")),
              HasSubstr("missing required key 'nodes'"));
  const auto e = error_of(replace(kValid, "gpu: a100-80gb", "gpu: a100-81gb"));
  EXPECT_THAT(e, HasSubstr("bad.yaml:6"));
  EXPECT_THAT(e, HasSubstr("unknown GPU preset 'a100-81gb'"));
  EXPECT_THAT(error_of(replace(kValid, "nodes: 2", "nodes: 0")), HasSubstr("cluster.nodes"));
}

TEST(Loader, ErrorsInOverridesSayWhichOverride) {
  const auto e = error_of(kValid, {"cluster.nodes=many"});
  EXPECT_THAT(e, HasSubstr("--set cluster.nodes"));
  EXPECT_THAT(e, HasSubstr("expected a whole number"));
}

TEST(Loader, MissingFileIsAnError) {
  try {
    load_scenario("/nonexistent/scenario.yaml");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_THAT(e.what(), HasSubstr("/nonexistent/scenario.yaml"));
  }
}

TEST(Loader, ExplicitLayersWithRepeat) {
  const auto s = load_scenario_text(replace(kValid, "  preset: gpt-neo-125m\n",
                                            "  layers:\n    - {name: b, params: 7.1M, "
                                            "fwd_flops_per_sample: 14.6G, "
                                            "activation_bytes_per_sample: 12MB, repeat: 3}\n"),
                                    "t.yaml");
  ASSERT_EQ(s.model.spec.layers.size(), 3u);
  EXPECT_EQ(s.model.spec.layers[2].name, "b2");
  EXPECT_DOUBLE_EQ(s.model.spec.layers[0].params, 7.1e6);
  EXPECT_DOUBLE_EQ(s.model.spec.layers[0].bwd_flops_per_sample, 2 * 14.6e9); // 2x forward
  EXPECT_DOUBLE_EQ(s.model.spec.layers[0].activation_bytes_per_sample, 12e6);
}

} // namespace
} // namespace overlapsim::scenario
