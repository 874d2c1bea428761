// Issue 15: inputs that used to escape validation. Each error names the file and line (or the
// --set) and the key, and says what was expected.
#include "scenario/loader.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim::scenario {
namespace {

using overlapsim::testing::error_of;
using overlapsim::testing::replace;
using overlapsim::testing::scenario_from;
using ::testing::HasSubstr;

const char* kScenario = R"(name: t
cluster:
  nodes: 2
  gpus_per_node: 2
  gpu: a100-80gb
  intra_node: nvlink3
  inter_node: {bandwidth: 100Gb/s, latency: 2us}
model:
  layers:
    - {name: b, params: 1M, fwd_flops_per_sample: 1G, activation_bytes_per_sample: 1MB, repeat: 2}
training: {micro_batch: 1, seq_len: 1, steps: 2}
algorithms:
  - ddp
output: {dir: out/t}
)";

TEST(RobustInput, ValidScenarioLoads) {
  EXPECT_EQ(error_of(kScenario), "no error");
}

TEST(RobustInput, EmptyOutputDirIsAnError) {
  // Issue 15.4: output.dir "" wrote into '/'.
  const auto e = error_of(kScenario, {"output.dir=\"\""});
  EXPECT_THAT(e, HasSubstr("--set output.dir"));
  EXPECT_THAT(e, HasSubstr("key 'output.dir'"));
  EXPECT_THAT(error_of(replace(kScenario, "{dir: out/t}", "{dir: ''}")), HasSubstr("bad.yaml:14"));
}

TEST(RobustInput, LabelsStayPlainFileNames) {
  // Issue 15.4: a label "../../escaped" wrote outside the output directory.
  for (const std::string& label :
       std::vector<std::string>{"../../escaped", "a/b", ".hidden", std::string(65, 'x'),
                                std::string("bad\xc3\xbf"), "with space"}) {
    const auto e =
        error_of(replace(kScenario, "  - ddp\n", "  - {name: ddp, label: '" + label + "'}\n"));
    EXPECT_THAT(e, HasSubstr("bad.yaml:13")) << label;
    EXPECT_THAT(e, HasSubstr("key 'algorithms.0.label'")) << label;
  }
  EXPECT_EQ(error_of(replace(kScenario, "  - ddp\n", "  - {name: ddp, label: ddp-25MB_v2.1}\n")),
            "no error");
}

TEST(RobustInput, ValuesPastTheirRangeAreErrors) {
  // Issue 15.5: each of these passed and ended in null results, SimGrid aborts, "deadlock at
  // t = inf" or int64 overflow.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"cluster.inter_node.bandwidth=1e308TB/s", "too large"},
      {"cluster.inter_node.bandwidth=1e-300B/s", "outside the range [1 KB/s, 1e+03 TB/s]"},
      {"cluster.inter_node.bandwidth=2PB/s", "outside the range"},
      {"cluster.inter_node.latency=1e308h", "too large"},
      {"cluster.inter_node.latency=2h", "outside the range [0 s, 1 h]"},
      {"cluster.gpu={preset: a100-80gb, memory: 2PB}", "outside the range"},
      {"model.layers.0.params=1e14", "outside the range"},
      {"model={preset: mlp, width: 1e30, depth: 2}", "key 'model.width'"},
      {"model={preset: gpt-tiny, vocab: 1000, d_model: 1e200, n_layers: 1, n_heads: 1}",
       "key 'model.d_model'"},
  };
  for (const auto& [set, expected] : cases) {
    const auto e = error_of(kScenario, {set});
    EXPECT_THAT(e, HasSubstr(expected)) << set;
    EXPECT_THAT(e, HasSubstr("--set")) << set;
  }
  // 100k layers of 1e13 parameters would overflow the int64 element counts.
  const auto e =
      error_of(replace(kScenario, "params: 1M", "params: 1e13"), {"model.layers.0.repeat=20"});
  EXPECT_THAT(e, HasSubstr("key 'model'"));
  EXPECT_THAT(e, HasSubstr("at most 100T"));
}

TEST(RobustInput, ALayerThatDoesNothingIsAnError) {
  // Issue 15.8: infeasible settings are rejected by the loader with the key.
  const auto e = error_of(replace(kScenario, "params: 1M, fwd_flops_per_sample: 1G",
                                  "params: 0, fwd_flops_per_sample: 0"));
  EXPECT_THAT(e, HasSubstr("bad.yaml:10: key 'model.layers.0': a layer with no parameters and no "
                           "FLOPs"));
}

TEST(RobustInput, BareNumbersNeedUnitsExceptCounts) {
  // Issue 15.11: "bandwidth: 100" was 100 B/s.
  const auto e = error_of(replace(kScenario, "bandwidth: 100Gb/s", "bandwidth: 100"));
  EXPECT_THAT(e, HasSubstr("bad.yaml:7"));
  EXPECT_THAT(e, HasSubstr("key 'cluster.inter_node.bandwidth'"));
  EXPECT_THAT(e, HasSubstr("a number needs a unit"));
  EXPECT_THAT(e, HasSubstr("100Gb/s"));
  EXPECT_THAT(error_of(replace(kScenario, "latency: 2us", "latency: 5")),
              HasSubstr("key 'cluster.inter_node.latency'"));
  EXPECT_THAT(error_of(replace(kScenario, "activation_bytes_per_sample: 1MB",
                               "activation_bytes_per_sample: 1000000")),
              HasSubstr("a number needs a unit"));
  // Counts stay bare; 0 is 0 in every unit.
  EXPECT_EQ(error_of(replace(kScenario, "params: 1M", "params: 1000000")), "no error");
  EXPECT_EQ(error_of(replace(kScenario, "latency: 2us", "latency: 0")), "no error");
}

TEST(RobustInput, RepeatsAndStrangeKeysAreErrors) {
  // Issue 15.7: yaml-cpp kept the first of two 'nodes:' and dropped the second silently.
  const auto dup = error_of(replace(kScenario, "  nodes: 2\n", "  nodes: 2\n  nodes: 4\n"));
  EXPECT_THAT(dup, HasSubstr("bad.yaml:4: key 'cluster.nodes': given twice (first at line 3)"));
  const auto straggler =
      error_of(kScenario, {"cluster.stragglers=[{gpu: 1, slowdown: 2}, {gpu: 1, slowdown: 3}]"});
  EXPECT_THAT(straggler, HasSubstr("key 'cluster.stragglers.1.gpu': GPU 1 is already a straggler "
                                   "(cluster.stragglers.0)"));
  EXPECT_THAT(
      error_of(kScenario, {"cluster.jitter={distribution: lognormal, sigma: 0.1, sigma_1s: 0.01}"}),
      HasSubstr("key 'cluster.jitter.sigma_1s': give either sigma (every op's) or sigma_1s"));
  // 2^20 x 1024 GPUs fits each key's range but not the cluster's.
  EXPECT_THAT(error_of(kScenario, {"cluster.nodes=1048576", "cluster.gpus_per_node=1024"}),
              HasSubstr("key 'cluster.gpus_per_node': expected at most 1048576 GPUs in all "
                        "(cluster.nodes x gpus_per_node), got 1048576 x 1024 = 1073741824"));
  EXPECT_THAT(error_of(std::string(kScenario) + "---\nname: second\n"),
              HasSubstr("bad.yaml:16: a second YAML document"));
  // Issue 15.8: a complex key gave "yaml-cpp: ... bad conversion"; --set foo.bar named the file.
  EXPECT_THAT(error_of(std::string(kScenario) + "? [a, b]\n: 1\n"),
              HasSubstr("bad.yaml:15: key '': a key must be a plain name"));
  EXPECT_THAT(error_of(kScenario, {"foo.bar=1"}), HasSubstr("--set foo.bar: key 'foo'"));
  // 2^25 values from a few lines of aliases stop at the bound instead of exhausting memory.
  std::string bomb = kScenario;
  bomb += "x0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n";
  for (int i = 1; i < 8; ++i) {
    bomb += fmt::format("x{}: &a{} [*a{}", i, i, i - 1);
    for (int k = 1; k < 10; ++k)
      bomb += fmt::format(", *a{}", i - 1);
    bomb += "]\n";
  }
  EXPECT_THAT(error_of(bomb), HasSubstr("more than 1000000 values once YAML aliases are expanded"));
  // It names the top-level key whose expansion crossed the bound.
  EXPECT_THAT(error_of(bomb), ::testing::ContainsRegex("bad.yaml:[0-9]+: key 'x[0-9]': more than"));
}

TEST(RobustInput, AliasedLayersWithRepeatStopAtTheLayerBound) {
  // Issue 15.6: 2000 aliases of a layer with repeat: 100000 (200M layers) took 2.9 GB and ran on
  // past a minute; the model stops at 100000 layers, at the alias that crosses it.
  std::string yaml = "name: alias\ncluster: {nodes: 1, gpus_per_node: 2, gpu: h100-sxm, "
                     "intra_node: nvlink4}\nmodel:\n  layers:\n"
                     "    - &l {name: b, params: 1M, fwd_flops_per_sample: 1G, repeat: 100000}\n";
  for (int i = 0; i < 2000; ++i)
    yaml += "    - *l\n";
  yaml += "training: {micro_batch: 1, steps: 2}\nalgorithms: [ddp]\n";
  // yaml-cpp gives an alias the line of its anchor; the key's index says which entry it is.
  EXPECT_THAT(error_of(yaml), HasSubstr("bad.yaml:5: key 'model.layers.1': the model would have "
                                        "more than 100000 layers"));
  // At the bound itself the model loads.
  EXPECT_EQ(scenario_from(yaml.substr(0, yaml.find("    - *l")) +
                          "training: {micro_batch: 1, steps: 2}\nalgorithms: [ddp]\n")
                .model.spec.layers.size(),
            100000u);
}

TEST(RobustInput, BytesThatAreNotUtf8AreNamedByLineAndColumn) {
  // Issue 15.8: a name with byte 0xFF reached summary.json's writer, whose JSON exception named
  // neither the file nor the key.
  EXPECT_THAT(error_of(replace(kScenario, "name: ", "name: ok\xff")),
              HasSubstr("bad.yaml:1: byte 0xFF at column 9 is not UTF-8"));
  // Overlong, surrogate and truncated forms too; well-formed multi-byte text passes.
  for (const char* bad : {"\xc0\xaf", "\xed\xa0\x80", "\xe2\x82", "\xf4\x90\x80\x80"})
    EXPECT_THAT(error_of(replace(kScenario, "name: ", std::string("name: ") + bad)),
                HasSubstr("is not UTF-8"))
        << bad;
  EXPECT_EQ(
      error_of(replace(kScenario, "name: ", "name: caf\xc3\xa9-\xe2\x82\xac-\xf0\x9f\x9a\x80")),
      "no error");
  EXPECT_THAT(error_of(kScenario, {"name=a\xff"}), HasSubstr("--set 'name=a\xff': not UTF-8"));
}

} // namespace
} // namespace overlapsim::scenario
