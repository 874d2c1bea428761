// training.seq_len_distribution: each micro-batch draws one length for its whole forward and
// backward; the attention part of a transformer block scales with the length squared, the rest
// linearly. Pinned by hand on GPT-Neo 125M.
#include "test_util.h"

#include <cmath>
#include <gtest/gtest.h>
#include <set>

namespace overlapsim {
namespace {

using testing::error_of;
using testing::scenario_from;
using testing::simulate;

// One 100 TFLOP/s GPU per node, so a FLOP count divided by 1e14 is the time.
std::string scenario_text(const std::string& distribution) {
  return R"(name: seq-len
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s}
  inter_node: {bandwidth: 10GB/s, latency: 10us}
model: {preset: gpt-neo-125m, compute: flops}
training: {micro_batch: 1, seq_len: 1024, grad_accum: 2, steps: 4)" +
         distribution + R"(}
algorithms: [ddp]
)";
}

std::vector<double> durations(const Trace& t, const std::string& name, int worker) {
  std::vector<double> d;
  for (const auto& e : t.events)
    if (e.worker == worker && t.name_of(e.name) == name)
      d.push_back(e.end - e.start);
  return d;
}

// GPT-Neo 125M at s = 1024, d = 768, vocab 50257, d_ff 3072. A block's forward:
// 2 x (4 d^2 + 2 d d_ff) x s = 14,495,514,624 linear FLOPs plus 4 s^2 d = 3,221,225,472 of
// attention; 12 blocks and the LM head's 2 d v s = 79,047,426,048: 291,648,307,200 FLOPs.
constexpr double kLinear = 12 * 14'495'514'624.0 + 79'047'426'048.0;
constexpr double kQuadratic = 12 * 3'221'225'472.0;

TEST(SeqLenDistribution, AHalfLengthMicroBatchHalvesTheLinearPartAndQuartersAttention) {
  const auto full = simulate(scenario_from(scenario_text("")), "ddp");
  const auto half =
      simulate(scenario_from(scenario_text(", seq_len_distribution: {lengths: [512]}")), "ddp");
  for (const double d : durations(full.trace, "fwd embedding..head", 0))
    EXPECT_NEAR(d, (kLinear + kQuadratic) / 1e14, 1e-9);
  // 252,993,601,536 / 2 + 38,654,705,664 / 4 = 136,160,477,184 FLOPs: 1.3616 ms, not 1.458.
  const auto fwd = durations(half.trace, "fwd embedding..head", 0);
  ASSERT_FALSE(fwd.empty());
  for (const double d : fwd)
    EXPECT_NEAR(d, (kLinear / 2 + kQuadratic / 4) / 1e14, 1e-9);
  // The backward (2x the forward's FLOPs) scales in the same proportions.
  const auto bwd_full = durations(full.trace, "bwd block0..block1", 0);
  const auto bwd_half = durations(half.trace, "bwd block0..block1", 0);
  ASSERT_FALSE(bwd_half.empty());
  const double block_linear = 14'495'514'624.0, block_quadratic = 3'221'225'472.0;
  EXPECT_NEAR(bwd_full[0], 2 * 2 * (block_linear + block_quadratic) / 1e14, 1e-9);
  EXPECT_NEAR(bwd_half[0], 2 * 2 * (block_linear / 2 + block_quadratic / 4) / 1e14, 1e-9);
}

TEST(SeqLenDistribution, EachMicroBatchDrawsOneLengthForItsForwardAndBackward) {
  const auto s =
      scenario_from(scenario_text(", seq_len_distribution: {lengths: [256, 512, 768, 1024]}"));
  const auto r = simulate(s, "ddp");
  // Every forward is one of the four lengths' costs; the draws differ between micro-batches and
  // GPUs; the backward of the embedding..block1 range matches its own micro-batch's forward.
  std::set<long> seen;
  for (int w = 0; w < 2; ++w)
    for (const double d : durations(r.trace, "fwd embedding..head", w)) {
      bool matched = false;
      for (const double len : {256.0, 512.0, 768.0, 1024.0}) {
        const double ratio = len / 1024;
        if (std::abs(d - (kLinear * ratio + kQuadratic * ratio * ratio) / 1e14) < 1e-9) {
          matched = true;
          seen.insert(std::lround(len));
        }
      }
      EXPECT_TRUE(matched) << d;
    }
  EXPECT_GE(seen.size(), 3u);
  // Same scenario and seed: the same draws.
  EXPECT_EQ(durations(simulate(s, "ddp").trace, "fwd embedding..head", 1),
            durations(r.trace, "fwd embedding..head", 1));
}

TEST(SeqLenDistribution, MaxOfKPadsToTheLongestDraw) {
  // With 64 draws from {256, 1024} every micro-batch is padded to 1024 (all 64 short: 2^-64).
  const auto r = simulate(
      scenario_from(scenario_text(", seq_len_distribution: {lengths: [256, 1024], max_of: 64}")),
      "ddp");
  for (const double d : durations(r.trace, "fwd embedding..head", 0))
    EXPECT_NEAR(d, (kLinear + kQuadratic) / 1e14, 1e-9);
  // Uniform and lognormal stay within [1, seq_len]: no forward is longer than the full length.
  for (const auto* dist : {", seq_len_distribution: {uniform: {min: 100, max: 300}}",
                           ", seq_len_distribution: {lognormal: {median: 600, sigma: 1.5}}"})
    for (const double d : durations(simulate(scenario_from(scenario_text(dist)), "ddp").trace,
                                    "fwd embedding..head", 0))
      EXPECT_LE(d, (kLinear + kQuadratic) / 1e14 + 1e-12);
}

TEST(SeqLenDistribution, RejectsMalformedDistributionsNamingTheKey) {
  EXPECT_NE(error_of(scenario_text(", seq_len_distribution: {}")).find("exactly one of"),
            std::string::npos);
  EXPECT_NE(error_of(scenario_text(", seq_len_distribution: {lengths: [2048]}"))
                .find("seq_len_distribution.lengths"),
            std::string::npos);
  EXPECT_NE(error_of(scenario_text(", seq_len_distribution: {uniform: {min: 500, max: 100}}"))
                .find("max"),
            std::string::npos);
  EXPECT_NE(error_of(scenario_text(", seq_len_distribution: {lengths: [1], lognormal: {median: 1, "
                                   "sigma: 1}}"))
                .find("exactly one of"),
            std::string::npos);
}

} // namespace
} // namespace overlapsim
