// Issue 26.2, 26.3, 26.4, 26.12: inputs that crashed, hung, ran out of memory or flooded stderr.
// Each is an error naming the file (or the --set), the line and the key where there is one.
#include "algorithms/algorithm.h"
#include "scenario/loader.h"
#include "scenario/user_file.h"
#include "test_util.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

namespace overlapsim::scenario {
namespace {

using overlapsim::testing::error_of;
using overlapsim::testing::ScratchDir;
using ::testing::HasSubstr;

const char* kScenario = R"(name: t
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: a100-80gb
  intra_node: nvlink3
  inter_node: {bandwidth: 100Gb/s, latency: 2us}
model:
  layers:
    - {name: b, params: 1M, fwd_flops_per_sample: 1G, repeat: 2}
training: {micro_batch: 1, seq_len: 1, steps: 2}
algorithms: [ddp]
)";

std::string load_error(const std::string& path) {
  try {
    load_scenario(path);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

TEST(InputFiles, AnAliasThatContainsItselfIsAnErrorNotACrash) {
  // It overflowed the stack in check_keys: exit 139, no message.
  EXPECT_THAT(error_of(std::string(kScenario) + "a: &a [*a]\n"),
              HasSubstr("bad.yaml:13: key 'a': nested more than 64 levels deep"));
  EXPECT_THAT(error_of(std::string(kScenario) + "b: &b {c: *b}\n"),
              HasSubstr("nested more than 64 levels deep"));
  EXPECT_THAT(error_of(kScenario, {"model.layers.0.params=&x [*x]"}),
              HasSubstr("--set model.layers.0.params"));
  // Nesting within the bound still reads (and fails on its key, as any unknown key).
  EXPECT_THAT(error_of(std::string(kScenario) + "z: [[[[1]]]]\n"), HasSubstr("key 'z'"));
}

TEST(InputFiles, SpecialFilesAreRefusedWithoutReadingThem) {
  const ScratchDir dir;
  EXPECT_THAT(load_error("/dev/zero"),
              HasSubstr("/dev/zero: is a character device; expected a scenario file"));
  const auto fifo = (dir / "fifo").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(load_error(fifo), HasSubstr("is a FIFO (named pipe); expected a scenario file"));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5)); // it hung
  EXPECT_THAT(load_error(dir.path().string()), HasSubstr("is a directory"));
  EXPECT_THAT(load_error((dir / "none.yaml").string()),
              HasSubstr("none.yaml: cannot open the scenario file: No such file or directory"));
  // Past its kind's limit: 16 MiB for a scenario (a sparse file: nothing is written).
  const auto big = dir / "big.yaml";
  std::ofstream(big) << "name: big\n";
  std::filesystem::resize_file(big, (16u << 20) + 1);
  EXPECT_THAT(load_error(big.string()),
              HasSubstr("16777217 bytes; a scenario file may hold at most 16 MiB"));
  // Files a scenario names go through the same door.
  EXPECT_THAT(error_of(kScenario, {"model.profile=/dev/zero"}),
              HasSubstr("/dev/zero: is a character device; expected a calibration profile"));
  EXPECT_THAT(error_of(kScenario, {"cluster.calibration=/dev/urandom"}),
              HasSubstr("/dev/urandom: is a character device; expected a calibration profile"));
  EXPECT_THROW(read_user_file(fifo, kLossCurveFile), std::runtime_error);
}

TEST(InputFiles, CountsAreWholeNumbers) {
  // d_ff: 1.5 and a fractional vocab were accepted.
  const std::string transformer = R"(name: t
cluster: {nodes: 1, gpus_per_node: 1, gpu: a100-80gb}
model: {preset: gpt-neo-125m, d_ff: 1.5}
training: {micro_batch: 1, seq_len: 128, steps: 2}
algorithms: [ddp]
)";
  EXPECT_THAT(error_of(transformer),
              HasSubstr("key 'model.d_ff': expected a whole number, got '1.5'"));
  EXPECT_THAT(error_of(testing::replace(transformer, "d_ff: 1.5", "vocab: 2.5")),
              HasSubstr("key 'model.vocab': expected a whole number, got '2.5'"));
  EXPECT_THAT(error_of(testing::replace(kScenario, "params: 1M", "params: 0.5")),
              HasSubstr("key 'model.layers.0.params': expected a whole number"));
  EXPECT_EQ(error_of(testing::replace(kScenario, "params: 1M", "params: 1.5M")), "no error");
}

// The error of building the scenario's algorithms (their options are checked there).
std::string algorithm_error(const std::string& algorithms) {
  try {
    const auto s = testing::scenario_from(kScenario, {"algorithms=" + algorithms});
    for (const auto& a : s.algorithms)
      make_algorithm(a);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

TEST(InputFiles, SizesAreBoundedEverywhere) {
  // A bucket_cap of 1e7PB ran the simulation to 23 GB before the kernel killed it.
  EXPECT_THAT(algorithm_error("[{name: ddp, bucket_cap: 1e7PB}]"),
              HasSubstr("key 'algorithms.ddp.bucket_cap': '1e7PB' is larger than 1 PB"));
  EXPECT_THAT(algorithm_error("[{name: fsdp, wrap: 2PB}]"), HasSubstr("'2PB' is larger than 1 PB"));
  EXPECT_EQ(algorithm_error("[{name: ddp, bucket_cap: 1PB}]"), "no error");
  EXPECT_THAT(error_of(kScenario, {"model.layers.0.params=1e14"}),
              HasSubstr("key 'model.layers.0.params'"));
}

TEST(InputFiles, ErrorsEchoAtMost200CharactersOfAValue) {
  // A 10 MB value came back whole on stderr.
  const std::string huge(10u << 20, 'a');
  const std::string e = error_of(kScenario, {"cluster.nodes=" + huge});
  EXPECT_LT(e.size(), 600u);
  EXPECT_THAT(e, HasSubstr("key 'cluster.nodes': expected a whole number, got '" +
                           std::string(200, 'a') + "\u2026' (10485760 characters)"));
  EXPECT_EQ(shorten_quoted_values("x 'short' y"), "x 'short' y");
  EXPECT_EQ(shorten_quoted_values("'" + std::string(5, 'b') + "'", 3),
            "'bbb\u2026' (5 characters)");
  EXPECT_EQ(shorten_quoted_values("it's"), "it's"); // an unmatched quote stays
}

} // namespace
} // namespace overlapsim::scenario
