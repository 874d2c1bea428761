// Model FLOPs utilisation (issue 65.7): the model FLOPs per token of hw/model_flops.h against hand
// counts, and summary.json's tokens_per_s_per_gpu, model_tflops_per_gpu, hardware_tflops_per_gpu
// and mfu from a row's numbers.
#include "cli/report.h"
#include "cli/run_command.h"
#include "hw/model_flops.h"
#include "scenario/loader.h"
#include "trace/summary.h"

#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <regex>

namespace overlapsim {
namespace {

// GPT-Neo 125M (d 768, 12 layers, 12 heads, vocab 50,257, 2,048 learned positions, tied head):
// a block holds q, k, v 3 x 768^2 = 1,769,472 (no bias), out 768^2 + 768 = 590,592, the MLP
// 768 x 3072 + 3072 + 3072 x 768 + 768 = 4,722,432 and two LayerNorms 4 x 768 = 3,072:
// 7,085,568, so 12 blocks are 85,026,816; the final LayerNorm 1,536; the LM head's projection
// (tied: the embedding's matrix) 50,257 x 768 = 38,597,376. N = 123,625,728 (the 125,198,592 of
// the checkpoint less the 2,048 x 768 = 1,572,864 positions).
// 6 N = 741,754,368; attention 12 L d T = 12 x 12 x 768 x 1024 = 113,246,208 at T = 1,024.
constexpr double kNeoParams = 123'625'728;
constexpr double kNeoFlopsPerToken1024 = 741'754'368.0 + 113'246'208.0; // 855,000,576

scenario::Scenario neo(const std::vector<std::string>& overrides = {}) {
  return scenario::load_scenario_text(R"(
name: neo
cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm, intra_node: nvlink4}
model: {preset: gpt-neo-125m, dtype: bf16}
training: {micro_batch: 8, seq_len: 1024, steps: 3}
algorithms: [ddp]
)",
                                      "neo.yaml", overrides);
}

TEST(ModelFlops, GptNeo125mByHand) {
  const auto s = neo();
  const auto f = hw::transformer_flops(s.model.spec, s.model.dims, 1024);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->params, kNeoParams);
  EXPECT_DOUBLE_EQ(f->per_token, kNeoFlopsPerToken1024);
  EXPECT_DOUBLE_EQ(f->hardware_per_token, f->per_token); // nothing recomputed
  // The simulator's own layer FLOPs (3 x forward per token) agree but for the blocks' biases and
  // norms, which N counts and the matmul FLOPs do not: 12 x (768 + 3,072 + 768 + 3,072) +
  // 1,536 = 93,696 parameters, 6 x 93,696 = 562,176 FLOPs per token.
  const double layer_flops =
      (s.model.spec.total_fwd_flops_per_sample() + s.model.spec.total_bwd_flops_per_sample()) /
      1024;
  EXPECT_DOUBLE_EQ(f->per_token - layer_flops, 6 * 93'696.0);
}

TEST(ModelFlops, AttentionTermGrowsWithSequence) {
  // At T = 2,048 the attention term doubles: 12 x 12 x 768 x 2,048 = 226,492,416.
  const auto s = neo({"training.seq_len=2048"});
  const auto f = hw::transformer_flops(s.model.spec, s.model.dims, 2048);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->per_token, 741'754'368.0 + 226'492'416.0);
}

TEST(ModelFlops, UntiedHeadCountsItsProjectionOnce) {
  // Untied: the head layer holds its own 38,597,376-parameter projection; N is unchanged.
  const auto s = neo({"model.tied_embeddings=false"});
  const auto f = hw::transformer_flops(s.model.spec, s.model.dims, 1024);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->params, kNeoParams);
}

TEST(ModelFlops, FullRecomputationAddsEachBlocksForward) {
  // Every block's forward again: 12 x (2 x 7,077,888 matmul parameters + 4 x 1,024 x 768) =
  // 12 x 17,301,504 = 207,618,048 FLOPs per token (the matmul parameters: a block's 7,085,568
  // less its 4,608 biases and 3,072 norm parameters).
  const auto s = neo({"model.activation_checkpointing=full"});
  SummaryRow row;
  cli::add_model_flops(row, s);
  EXPECT_DOUBLE_EQ(row.model_flops_per_token, kNeoFlopsPerToken1024);
  EXPECT_DOUBLE_EQ(row.hardware_flops_per_token, kNeoFlopsPerToken1024 + 207'618'048.0);
  // Selective recomputation: the attention scores only, 12 x 4 x 1,024 x 768 = 37,748,736.
  hw::RecomputedFlops selective;
  selective.selective = true;
  const auto f = hw::transformer_flops(s.model.spec, s.model.dims, 1024, selective);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->hardware_per_token, kNeoFlopsPerToken1024 + 37'748'736.0);
}

TEST(ModelFlops, Llama2_7bNonEmbeddingParams) {
  // Llama-2 7B: 32 blocks of q, k, v, o 4 x 4096^2 = 67,108,864, SwiGLU 3 x 4096 x 11,008 =
  // 135,266,304 and two RMSNorms 8,192: 202,383,360 each, 6,476,267,520 in all; the final norm
  // 4,096 and the untied head 32,000 x 4,096 = 131,072,000: N = 6,607,343,616 (the 6,738,415,616
  // of the checkpoint less the 131,072,000 embedding). At T = 4,096: 6 N = 39,644,061,696 and
  // 12 x 32 x 4,096 x 4,096 = 6,442,450,944.
  const auto s = scenario::load_scenario_text(R"(
name: llama
cluster: {nodes: 1, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4}
model: {preset: llama2-7b}
training: {micro_batch: 1, seq_len: 4096}
algorithms: [ddp]
)",
                                              "llama.yaml");
  const auto f = hw::transformer_flops(s.model.spec, s.model.dims, 4096);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->params, 6'607'343'616.0);
  EXPECT_DOUBLE_EQ(f->per_token, 39'644'061'696.0 + 6'442'450'944.0);
}

TEST(ModelFlops, NotATransformerHasNone) {
  const auto s = scenario::load_scenario_text(R"(
name: r
cluster: {nodes: 1, gpus_per_node: 1, gpu: a100-80gb}
model: {preset: resnet-50}
training: {micro_batch: 32, seq_len: 1}
algorithms: [ddp]
)",
                                              "r.yaml");
  EXPECT_FALSE(hw::transformer_flops(s.model.spec, s.model.dims, 1).has_value());
  SummaryRow row;
  row.workers = 1;
  row.metrics.throughput_samples_s = 1000;
  row.metrics.steps = 1;
  row.metrics.samples = 32;
  cli::add_model_flops(row, s);
  const auto j = to_json(row);
  EXPECT_DOUBLE_EQ(j["tokens_per_s_per_gpu"].get<double>(), 1000); // samples x seq_len 1
  EXPECT_TRUE(j["model_flops_per_token"].is_null());
  EXPECT_TRUE(j["model_tflops_per_gpu"].is_null());
  EXPECT_TRUE(j["mfu"].is_null());
  EXPECT_EQ(cli::mfu_cell(row), "-");
}

TEST(ModelFlops, SummaryRowDerivesPerGpuRates) {
  // 8 GPUs at 40 samples/s of 1,024 tokens: 40,960 tokens/s, 5,120 per GPU. Model FLOP/s per
  // GPU: 5,120 x 855,000,576 = 4.37760294912e12, 4.3776 TFLOP/s; over the H100's 989 TFLOP/s
  // bf16 peak: MFU 0.0044263 (0.4%).
  auto s = neo({"cluster.gpus_per_node=8"});
  SummaryRow row;
  row.workers = 8;
  row.seq_len = 1024;
  row.metrics.throughput_samples_s = 40;
  row.metrics.steps = 1;
  row.metrics.samples = 64;
  cli::add_model_flops(row, s);
  EXPECT_DOUBLE_EQ(row.peak_flops_per_gpu, 989e12);
  const auto j = to_json(row);
  EXPECT_DOUBLE_EQ(j["throughput_tokens_s"].get<double>(), 40'960);
  EXPECT_DOUBLE_EQ(j["tokens_per_s_per_gpu"].get<double>(), 5'120);
  EXPECT_DOUBLE_EQ(j["model_flops_per_token"].get<double>(), kNeoFlopsPerToken1024);
  EXPECT_NEAR(j["model_tflops_per_gpu"].get<double>(), 4.37760294912, 1e-9);
  EXPECT_NEAR(j["hardware_tflops_per_gpu"].get<double>(), 4.37760294912, 1e-9);
  EXPECT_NEAR(j["mfu"].get<double>(), 4.37760294912e12 / 989e12, 1e-12);
  EXPECT_EQ(cli::mfu_cell(row), "0.4%");
  // summary.csv: the new columns come after `error`, the older ones keep their places.
  const auto csv = summary_csv({j});
  const auto header = csv.substr(0, csv.find('\n'));
  EXPECT_TRUE(header.ends_with(",error,tokens_per_s_per_gpu,model_flops_per_token,"
                               "hardware_flops_per_token,model_tflops_per_gpu,"
                               "hardware_tflops_per_gpu,mfu,pipeline_bubble_s"))
      << header;
  // fp32: the fp32 (TF32) peak, 494.5 TFLOP/s on the H100.
  SummaryRow fp32;
  cli::add_model_flops(fp32, neo({"model.dtype=fp32"}));
  EXPECT_DOUBLE_EQ(fp32.peak_flops_per_gpu, 494.5e12);
}

scenario::Scenario published(const std::string& name) {
  return scenario::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/published/" +
                                 name + ".yaml");
}

TEST(ModelFlops, PublishedScenariosLoadAndNameTheirTarget) {
  // bench/published_runs.py reads `# target: metric=value` from each header; the scenarios load
  // (run refuses them after loading until TP/PP are simulated).
  const std::regex target(R"(# target: (mfu|hardware_tflops_per_gpu)=[0-9.]+)");
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(OVERLAPSIM_SOURCE_DIR) +
                                                           "/scenarios/published")) {
    if (e.path().extension() != ".yaml")
      continue;
    ++n;
    std::ifstream in(e.path());
    const std::string text((std::istreambuf_iterator<char>(in)), {});
    EXPECT_TRUE(std::regex_search(text, target)) << e.path();
    const auto s = scenario::load_scenario(e.path().string());
    EXPECT_TRUE(hw::transformer_flops(s.model.spec, s.model.dims, s.training.seq_len).has_value())
        << e.path();
  }
  EXPECT_EQ(n, 6);
}

TEST(ModelFlops, MegaScaleTable2MfuFromItsTokensPerSecond) {
  // GPT-3 175B with MegaScale's shapes (h 12,288, 96 layers, vocabulary 51,200 assumed): a block
  // 12 h^2 + 13 h = 1,812,099,072 parameters, 96 of them 173,961,510,912, the final LayerNorm
  // 24,576 and the head 51,200 x 12,288 = 629,145,600: N = 174,590,681,088; 6N =
  // 1,047,544,086,528 plus 12 x 96 x 12,288 x 2,048 = 28,991,029,248: 1,076,535,115,776 FLOPs per
  // token. Table 2's Megatron-LM row at 256 GPUs, 39.3k tokens/s: 153.5 tokens/s per GPU x that /
  // 312 TFLOP/s = 0.5297, the 53.0% it prints; at 12,288 GPUs 1,466.8k tokens/s give 0.4119,
  // its 41.2%.
  const auto s = published("megascale-175b-megatron-256-a100");
  const auto f = hw::transformer_flops(s.model.spec, s.model.dims, s.training.seq_len);
  ASSERT_TRUE(f.has_value());
  EXPECT_DOUBLE_EQ(f->params, 174'590'681'088.0);
  EXPECT_DOUBLE_EQ(f->per_token, 1'076'535'115'776.0);
  EXPECT_NEAR(39.3e3 / 256 * f->per_token / 312e12, 0.530, 0.0005);
  EXPECT_NEAR(1466.8e3 / 12288 * f->per_token / 312e12, 0.412, 0.0005);
}

TEST(ModelFlops, BloomHardwareFlopsAreMegatronsWithRecomputation) {
  // Narayanan et al. 2021, eq. (3) per token: 96 l h^2 (1 + s/6h + V/16lh) = 96 l h^2 + 16 l h s
  // + 6 h V. BLOOM (l 70, h 14,336, s 2,048, V 250,880): 1,381,100,421,120 + 32,883,343,360 +
  // 21,579,694,080. Full checkpointing re-runs each block's matmuls and scores, 24 h^2 + 4 s h
  // per token: the 96 and 16 of the formula (72 and 12 without it). Ours also counts each
  // block's 13 h biases and norm parameters in 6N: 6 x 70 x 186,368 = 78,274,560, 0.005%.
  const auto s = published("bloom-176b-384-a100");
  SummaryRow row;
  cli::add_model_flops(row, s);
  const double megatron = 1'381'100'421'120.0 + 32'883'343'360.0 + 21'579'694'080.0;
  EXPECT_NEAR(row.hardware_flops_per_token / megatron, 1, 1e-4);
  // Without recomputation the same formula's 72 l h^2 + 12 l h s + 6 h V.
  const double model = 1'035'825'315'840.0 + 24'662'507'520.0 + 21'579'694'080.0;
  EXPECT_NEAR(row.model_flops_per_token / model, 1, 1e-4);
}

} // namespace
} // namespace overlapsim
