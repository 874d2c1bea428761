// The per-op roofline compute model (hw/roofline.h, hw/transformer_ops.h) and the transformer
// preset keys, pinned against hand calculations.
#include "hw/presets.h"
#include "hw/roofline.h"
#include "hw/transformer_ops.h"
#include "test_util.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using namespace hw;
using testing::error_of;
using testing::scenario_from;

TEST(Roofline, GemmEfficiencyFollowsDepthWavesAndAlignment) {
  const GpuSpec h100 = *find_gpu_preset("h100-sxm"); // 132 SMs
  // 0.80 x 768 / (768 + 128) = 0.685714; 192 x 6 = 1152 tiles in ceil(1152 / 132) = 9 waves of
  // 132: 1152 / 1188 = 0.969697; together 0.664935.
  EXPECT_NEAR(gemm_efficiency(h100, {24576, 768, 768}), 0.664935, 1e-6);
  // Attention's k = 64: 0.8 x 64 / 192 = 0.266667; 8 x 8 x 288 = 18432 tiles in 140 waves:
  // 18432 / 18480 = 0.997403.
  EXPECT_NEAR(gemm_efficiency(h100, {1024, 1024, 64, 288}), 0.8 * 64 / 192 * 0.997403, 1e-6);
  // A vocabulary of 50,257 breaks the 16-byte alignment: cuBLAS's align1 kernels.
  EXPECT_EQ(gemm_efficiency(h100, {24576, 50257, 768}), kMisalignedGemmEfficiency);
}

TEST(Roofline, AKernelTakesTheLongerOfItsComputeAndItsMemoryTraffic) {
  const GpuSpec h100 = *find_gpu_preset("h100-sxm");
  // q projection of GPT-Neo 125M at 24 x 1024 tokens: 2 x 24576 x 768^2 = 28.99 GFLOPs at
  // 989 TFLOP/s x 0.664935 = 44.08 us (measured on an H100: 44.0 us); its 76.7 MB take 25.4 us.
  EXPECT_NEAR(kernel_time_s(h100, gemm_op("q", {24576, 768, 768})), 44.08e-6, 0.01e-6);
  // The scores q.k^T write 288 x 1024^2 bf16 elements (604 MB): memory-bound, 201.8 us, though
  // their FLOPs alone would take 147.3 us.
  const auto scores = gemm_op("scores", {1024, 1024, 64, 288});
  EXPECT_NEAR(kernel_time_s(h100, scores), scores.bytes / (3.35e12 * 0.9), 1e-12);
  EXPECT_NEAR(scores.bytes, 2 * 288 * (1024 * 64 * 2 + 1024 * 1024.0), 1);
  // 1 GB streamed: 1e9 / (3.35e12 x 0.9) = 331.67 us; irregular access: / 0.55 = 542.7 us.
  EXPECT_NEAR(kernel_time_s(h100, memory_op("copy", 1e9)), 331.67e-6, 0.01e-6);
  EXPECT_NEAR(kernel_time_s(h100, memory_op("norm", 1e9, Access::irregular)), 542.74e-6, 0.01e-6);
}

TEST(Roofline, EagerAttentionKeepsItsScoresAndFlashDoesNot) {
  TransformerDims neo = *find_transformer_preset("gpt-neo-125m");
  // One sequence of 1024: E = s d = 786,432 hidden elements, F = 4E, A = 12 x 1024^2 scores.
  // Kept: norms 2 x 4E, three casts 3 x 2E, head-major q/k/v 6E, the out projection's input 2E,
  // the up projection's 2E, gelu_new 14F, the down projection's cast 2F, softmax 4A and the
  // bf16 probabilities 2A: 24E + 16F + 6A = 69,206,016 + 75,497,472 bytes.
  EXPECT_DOUBLE_EQ(block_ops(neo, 1, 1024).saved_bytes, 144'703'488);
  // SDPA keeps q, k, v, the output (8E) and 12 x 1024 fp32 log-sum-exp rows instead of 6E + 6A.
  neo.attention = TransformerDims::Attention::sdpa;
  EXPECT_DOUBLE_EQ(block_ops(neo, 1, 1024).saved_bytes,
                   144'703'488 - 6 * 786'432.0 - 6 * 12'582'912.0 + 8 * 786'432.0 + 4 * 12 * 1024);
}

TEST(Roofline, ABlockIsTheSumOfItsKernels) {
  const GpuSpec h100 = *find_gpu_preset("h100-sxm");
  const TransformerDims neo = *find_transformer_preset("gpt-neo-125m");
  const auto ops = block_ops(neo, 24, 1024);
  double fwd = 0;
  for (const auto& op : ops.forward)
    fwd += kernel_time_s(h100, op);
  auto m = transformer_model("neo", neo, 1024);
  apply_roofline(m, neo, h100, 24, 1024);
  EXPECT_NEAR(m.layers[1].fwd_model_time_per_sample_s * 24, fwd, 1e-12);
  // Every GEMM's backward is two GEMMs of its FLOPs: the backward has twice the forward's.
  double f = 0, b = 0;
  for (const auto& op : ops.forward)
    f += op.flops;
  for (const auto& op : ops.backward)
    b += op.flops;
  EXPECT_NEAR(b, 2 * f, 1e-6 * f);
  // The block's FLOPs are the FLOP model's: 2 x 12 d^2 x T + 4 T s d for T = 24 x 1024.
  EXPECT_NEAR(f, 24 * m.layers[1].fwd_flops_per_sample, 1e-9 * f);
}

std::string transformer_scenario(const std::string& model) {
  return R"(name: t
cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm}
model: )" +
         model + R"(
training: {micro_batch: 1, seq_len: 2048}
algorithms: [ddp]
)";
}

TEST(TransformerPreset, InstancesReproduceThePublishedParameterCounts) {
  // GPT-Neo 125M and Llama-2 7B written out as `preset: transformer`.
  EXPECT_EQ(scenario_from(transformer_scenario(
                              "{preset: transformer, vocab: 50257, d_model: 768, n_layers: 12, "
                              "n_heads: 12, qkv_bias: false, mlp: gelu-new, positions: 2048}"))
                .model.spec.total_params(),
            125'198'592);
  EXPECT_EQ(
      scenario_from(transformer_scenario(
                        "{preset: transformer, vocab: 32000, d_model: 4096, n_layers: 32, "
                        "n_heads: 32, d_ff: 11008, mlp: swiglu, norm: rmsnorm, "
                        "tied_embeddings: false, positions: 0, bias: false, qkv_bias: false}"))
          .model.spec.total_params(),
      6'738'415'616);
  // Grouped-query attention: Llama-2 70B (8 KV heads of 64) has 68,976,648,192 parameters.
  EXPECT_EQ(scenario_from(transformer_scenario(
                              "{preset: transformer, vocab: 32000, d_model: 8192, n_layers: 80, "
                              "n_heads: 64, n_kv_heads: 8, d_ff: 28672, mlp: swiglu, norm: "
                              "rmsnorm, tied_embeddings: false, positions: 0, bias: false, "
                              "qkv_bias: false}"))
                .model.spec.total_params(),
            68'976'648'192);
  // A named preset is an instance: its keys override, and its parameter count is unchanged.
  const auto neo = scenario_from(transformer_scenario("{preset: gpt-neo-125m, attention: flash}"));
  EXPECT_EQ(neo.model.spec.total_params(), 125'198'592);
  EXPECT_EQ(neo.model.compute, "roofline");
  EXPECT_LT(neo.model.spec.layers[1].activation_bytes_per_sample,
            scenario_from(transformer_scenario("{preset: gpt-neo-125m}"))
                .model.spec.layers[1]
                .activation_bytes_per_sample);
}

TEST(TransformerPreset, BadKeysAreNamed) {
  EXPECT_NE(error_of(transformer_scenario("{preset: transformer, vocab: 100, d_model: 64}"))
                .find("missing required key 'n_layers'"),
            std::string::npos);
  EXPECT_NE(error_of(transformer_scenario("{preset: gpt-neo-125m, n_kv_heads: 5}"))
                .find("n_heads must be a multiple of n_kv_heads"),
            std::string::npos);
  EXPECT_NE(error_of(transformer_scenario("{preset: gpt-neo-125m, mlp: relu}")).find("model.mlp"),
            std::string::npos);
  EXPECT_NE(error_of(transformer_scenario("{preset: mlp, width: 64, depth: 2, compute: roofline}"))
                .find("model.compute"),
            std::string::npos);
  EXPECT_NE(
      error_of(transformer_scenario("{preset: mlp, width: 64, depth: 2, d_model: 3}")).find("mlp"),
      std::string::npos);
}

} // namespace
} // namespace overlapsim
