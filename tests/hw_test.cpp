// Units, presets and model presets against published figures and hand calculations.
#include "hw/model.h"
#include "hw/presets.h"
#include "hw/units.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace overlapsim::hw {
namespace {

TEST(Units, Sizes) {
  EXPECT_DOUBLE_EQ(parse_size_bytes("80GB"), 80e9);
  EXPECT_DOUBLE_EQ(parse_size_bytes("1.5MiB"), 1.5 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_size_bytes("25 MiB"), 25.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(parse_size_bytes("12KB"), 12e3);
  EXPECT_DOUBLE_EQ(parse_size_bytes("1e9B"), 1e9);
  EXPECT_DOUBLE_EQ(parse_size_bytes("0"), 0); // 0 is 0 in every unit
  EXPECT_DOUBLE_EQ(parse_size_bytes("3B"), 3);
  EXPECT_THROW(parse_size_bytes("80Gb"), UnitError); // bits are not a size
  EXPECT_THROW(parse_size_bytes("-1GB"), UnitError);
  EXPECT_THROW(parse_size_bytes("GB"), UnitError);
  EXPECT_THROW(parse_size_bytes("1GB extra"), UnitError);
}

TEST(Units, BandwidthBitsAndBytes) {
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("100Gb/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("100Gbit/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("300GB/s"), 300e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("10Mb/s"), 1.25e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("2TB/s"), 2e12);
  EXPECT_DOUBLE_EQ(parse_bandwidth_Bps("1kB/s"), 1e3);
  try {
    parse_bandwidth_Bps("12 apples");
    FAIL();
  } catch (const UnitError& e) {
    EXPECT_THAT(e.what(), ::testing::HasSubstr("bandwidth"));
    EXPECT_THAT(e.what(), ::testing::HasSubstr("'12 apples'"));
  }
}

TEST(Units, TimesCountsFlops) {
  EXPECT_DOUBLE_EQ(parse_time_s("2us"), 2e-6);
  EXPECT_DOUBLE_EQ(parse_time_s("50ms"), 0.05);
  EXPECT_DOUBLE_EQ(parse_time_s("3ns"), 3e-9);
  EXPECT_DOUBLE_EQ(parse_time_s("1.5s"), 1.5);
  EXPECT_THROW(parse_time_s("5 parsecs"), UnitError);
  EXPECT_DOUBLE_EQ(parse_count("7.1M"), 7.1e6);
  EXPECT_DOUBLE_EQ(parse_count("14.6G"), 14.6e9);
  EXPECT_DOUBLE_EQ(parse_count("2k"), 2e3);
  EXPECT_THROW(parse_count("7B"), UnitError); // billion or bytes? ambiguous: refused
  EXPECT_DOUBLE_EQ(parse_flops_per_s("312TFLOPS"), 312e12);
  EXPECT_DOUBLE_EQ(parse_flops_per_s("312T"), 312e12);
}

TEST(Units, BareNumbersNeedAUnitExceptCounts) {
  // Issue 15.11: "bandwidth: 100" was 100 B/s and "latency: 5" 5 s.
  for (auto parse : {parse_size_bytes, parse_bandwidth_Bps, parse_time_s, parse_flops_per_s}) {
    try {
      parse("100");
      FAIL();
    } catch (const UnitError& e) {
      EXPECT_THAT(e.what(), ::testing::HasSubstr("a number needs a unit"));
    }
  }
  EXPECT_DOUBLE_EQ(parse_count("100"), 100);
  EXPECT_DOUBLE_EQ(parse_time_s("0"), 0);
}

TEST(Units, OverflowAfterScalingIsAnError) {
  // Issue 15.5: 1e308 TB/s scaled to inf and reached the simulation.
  EXPECT_THROW(parse_bandwidth_Bps("1e308TB/s"), UnitError);
  EXPECT_THROW(parse_time_s("1e308h"), UnitError);
  EXPECT_THROW(parse_size_bytes("1e308TB"), UnitError);
  EXPECT_THROW(parse_count("1e308T"), UnitError);
  EXPECT_THROW(parse_size_bytes("inf GB"), UnitError);
  EXPECT_THROW(parse_size_bytes("nan GB"), UnitError);
}

TEST(Units, Formatting) {
  EXPECT_EQ(format_bytes(1.25e9), "1.25 GB");
  EXPECT_EQ(format_bandwidth(12.5e9), "12.5 GB/s");
  EXPECT_EQ(format_time(0.0032), "3.2 ms");
  EXPECT_EQ(format_time(2e-6), "2 us");
  // Issue 62.8: numbers read as numbers. A value that rounds up to the next unit takes it; past a
  // minute, minutes, hours and days.
  EXPECT_EQ(format_time(0.99996), "1 s");
  EXPECT_EQ(format_time(0.9994), "999 ms");
  EXPECT_EQ(format_time(999.96e-6), "1 ms");
  EXPECT_EQ(format_time(59.0), "59 s");
  EXPECT_EQ(format_time(90.0), "1.5 min");
  EXPECT_EQ(format_time(21200.0), "5.89 h");
  EXPECT_EQ(format_time(156.8), "2.61 min");
  EXPECT_EQ(format_time(3 * 86400.0), "3 days");
  EXPECT_EQ(format_time(5e6 * 86400.0), "5000000 days");
  EXPECT_EQ(format_time(-0.0032), "-3.2 ms");
}

TEST(Presets, GpusAndLinks) {
  const auto a100 = find_gpu_preset("A100_80GB");
  ASSERT_TRUE(a100);
  EXPECT_DOUBLE_EQ(a100->peak_flops_bf16, 312e12);
  EXPECT_DOUBLE_EQ(a100->memory_bytes, 80e9);
  for (const char* name : {"a100-40gb", "h100-sxm", "h100-pcie", "a6000", "rtx-2080ti", "mi250x"})
    EXPECT_TRUE(find_gpu_preset(name)) << name;
  EXPECT_FALSE(find_gpu_preset("a100-81gb"));
  // Line rates, and the bandwidth collectives reach on them (nccl-tests busbw): 300 x 0.78.
  EXPECT_DOUBLE_EQ(find_link_preset("nvlink3")->line_rate_Bps(), 300e9);
  EXPECT_DOUBLE_EQ(find_link_preset("nvlink3")->bandwidth_Bps, 234e9);
  EXPECT_DOUBLE_EQ(find_link_preset("omnipath-100")->line_rate_Bps(), 12.5e9);
  EXPECT_DOUBLE_EQ(find_link_preset("ib-hdr")->bandwidth_Bps, 23e9);
  EXPECT_DOUBLE_EQ(find_link_preset("ib-ndr")->bandwidth_Bps, 46e9);
  EXPECT_DOUBLE_EQ(find_link_preset("wan-1gbit")->efficiency, 1.0);
  for (const char* name : {"nvlink4", "pcie4", "ethernet-1g", "ethernet-10g", "ethernet-25g",
                           "ethernet-100g", "wan-10mbit", "wan-100mbit", "wan-1gbit"})
    EXPECT_TRUE(find_link_preset(name)) << name;
  EXPECT_GE(find_link_preset("wan-100mbit")->latency_s, 10e-3);
}

TEST(ModelPresets, ParameterCountsMatchPublishedModels) {
  // Published counts (Hugging Face model cards / configs): the formulas reproduce them exactly.
  const std::pair<const char*, double> published[] = {{"gpt-neo-125m", 125'198'592},
                                                      {"gpt-neo-1.3b", 1'315'575'808},
                                                      {"gpt-neo-2.7b", 2'651'307'520},
                                                      {"gpt2-small", 124'439'808},
                                                      {"llama2-7b", 6'738'415'616},
                                                      // OLMo-2-0425-1B: 1,484,916,736 with its
                                                      // 16 x 2 x 2048 q/k-norm weights, left out.
                                                      {"olmo2-1b", 1'484'851'200}};
  for (const auto& [name, count] : published) {
    const auto dims = find_transformer_preset(name);
    ASSERT_TRUE(dims) << name;
    EXPECT_NEAR(transformer_model(name, *dims, 2048).total_params(), count, 0.001 * count) << name;
  }
}

TEST(ModelPresets, GptNeo125mBlockCostsByHand) {
  const auto m = transformer_model("n", *find_transformer_preset("gpt-neo-125m"), 2048);
  ASSERT_EQ(m.layers.size(), 14u); // embedding, 12 blocks, head
  const auto& b = m.layers[1];
  // d = 768, s = 2048: params 12 d^2 + 10 d = 7,085,568.
  EXPECT_DOUBLE_EQ(b.params, 7'085'568);
  // forward: 2 x 12 d^2 x s + 4 s^2 d = 2 x 7,077,888 x 2048 + 4 x 2048^2 x 768
  //        = 28,991,029,248 + 12,884,901,888 = 41,875,931,136 FLOPs.
  EXPECT_DOUBLE_EQ(b.fwd_flops_per_sample, 41'875'931'136.0);
  EXPECT_DOUBLE_EQ(b.bwd_flops_per_sample, 2 * 41'875'931'136.0);
  // activations: s d (34 + 5 a s / d) = 2048 x 768 x (34 + 5 x 12 x 2048 / 768) = 2048 x 768 x 194
  //            = 305,135,616 bytes.
  EXPECT_DOUBLE_EQ(b.activation_bytes_per_sample, 305'135'616.0);
  // head: 2 d V s = 2 x 768 x 50257 x 2048 FLOPs; only the final LayerNorm's 2d params (tied).
  EXPECT_DOUBLE_EQ(m.layers.back().fwd_flops_per_sample, 2.0 * 768 * 50257 * 2048);
  EXPECT_DOUBLE_EQ(m.layers.back().params, 1536);
}

TEST(ModelPresets, Resnet50) {
  // torchvision's ResNet-50 has 25,557,032 parameters and 4.09 G multiply-adds at 224 x 224.
  const auto m = resnet50_model();
  ASSERT_EQ(m.layers.size(), 18u); // stem, 16 bottlenecks, fc
  EXPECT_NEAR(m.total_params(), 25'557'032, 0.02 * 25'557'032);
  EXPECT_NEAR(m.total_fwd_flops_per_sample(), 2 * 4.09e9, 0.05 * 2 * 4.09e9);
  // The first bottleneck (56 x 56, 64 -> 256 with projection): 1x1 64x64, 3x3 64x64, 1x1 64x256,
  // projection 64x256 = 4096 + 36864 + 16384 + 16384 = 73,728 conv weights, 1,536 BN params.
  EXPECT_DOUBLE_EQ(m.layers[1].params, 73'728 + 2 * (64 + 64 + 256 + 256));
}

TEST(ModelPresets, Mlp) {
  const auto m = mlp_model(1024, 3);
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_DOUBLE_EQ(m.total_params(), 3 * (1024.0 * 1024 + 1024));
  EXPECT_DOUBLE_EQ(m.layers[0].fwd_flops_per_sample, 2.0 * 1024 * 1024);
  EXPECT_DOUBLE_EQ(m.layers[0].activation_bytes_per_sample, 4096);
}

} // namespace
} // namespace overlapsim::hw
