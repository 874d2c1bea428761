// parallel/memory.h (issue 65, item 4): each formula pinned by a hand calculation, and one
// configuration checked against Megatron-LM's estimator (theoretical_memory_usage.py).
#include "parallel/memory.h"
#include "scenario/loader.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace overlapsim::parallel {
namespace {

using scenario::PipelineSchedule;
using scenario::Recompute;

// GPT-3 175B (Brown et al. 2020) as Megatron's estimator counts it: h 12288, 96 heads, 96
// layers, FFN 4h, vocab 51200 (padded), LayerNorm, no biases counted, tied embeddings.
TransformerShape gpt3() {
  return {.hidden = 12288,
          .heads = 96,
          .ffn = 4 * 12288,
          .vocab = 51200,
          .norm_params = 2,
          .linear_bias = false,
          .positions = 0};
}

TEST(ParallelMemory, Table2PerLayerActivations) {
  // s 2048, b 1, h 12288, a 96: sbh = 25,165,824; 5as/h = 5 x 96 x 2048 / 12288 = 80.
  const auto x = gpt3();
  const double sbh = 25165824;
  const auto act = [&](int t, bool sp, Recompute r) {
    return block_activation_bytes(x, 2048, 1, t, sp, r);
  };
  // No parallelism: sbh (34 + 80) = 2,868,903,936.
  EXPECT_DOUBLE_EQ(act(1, false, Recompute::none), 2868903936.0);
  EXPECT_DOUBLE_EQ(act(1, false, Recompute::none), sbh * 114);
  // TP 8: sbh (10 + 24/8 + 80/8) = 23 sbh = 578,813,952.
  EXPECT_DOUBLE_EQ(act(8, false, Recompute::none), 578813952.0);
  // TP 8 + SP: sbh/8 x 114 = 358,612,992.
  EXPECT_DOUBLE_EQ(act(8, true, Recompute::none), 358612992.0);
  // Selective: the 5as/h term gone: 13 sbh = 327,155,712; with SP 34 sbh / 8 = 106,954,752.
  EXPECT_DOUBLE_EQ(act(8, false, Recompute::selective), 327155712.0);
  EXPECT_DOUBLE_EQ(act(8, true, Recompute::selective), 106954752.0);
  // Full: the input, 2sbh = 50,331,648; with SP 2sbh/8 = 6,291,456.
  EXPECT_DOUBLE_EQ(act(8, false, Recompute::full), 50331648.0);
  EXPECT_DOUBLE_EQ(act(8, true, Recompute::full), 6291456.0);
  // An FFN of 3h (not 4h): 16 of the 34 become 4 x 3 = 12: sbh (30 + 80) without parallelism.
  auto narrow = x;
  narrow.ffn = 3 * 12288;
  EXPECT_DOUBLE_EQ(block_activation_bytes(narrow, 2048, 1, 1, false, Recompute::none), sbh * 110);
  // First and last stage extras, t 8 with SP: embedding (sbh + 8sb)/8 = (25,165,824 + 16,384)/8
  // = 3,147,776; output 4sbh/8 + 4sbv/8 = 12,582,912 + 52,428,800 = 65,011,712.
  EXPECT_DOUBLE_EQ(embedding_activation_bytes(x, 2048, 1, 8, true), 3147776.0);
  EXPECT_DOUBLE_EQ(output_activation_bytes(x, 2048, 1, 8, true), 65011712.0);
  // Without SP the embedding's and the output layer's inputs stay whole: 4sbh + 4sbv/8.
  EXPECT_DOUBLE_EQ(output_activation_bytes(x, 2048, 1, 8, false), 4 * sbh + 52428800.0);
  // A pipeline message: 2sbh = 50,331,648, scattered over TP 8 with SP: 6,291,456.
  EXPECT_DOUBLE_EQ(p2p_message_bytes(x, 2048, 1, 8, false), 50331648.0);
  EXPECT_DOUBLE_EQ(p2p_message_bytes(x, 2048, 1, 8, true), 6291456.0);
}

TEST(ParallelMemory, MicroBatchesInFlight) {
  const auto in_flight = [](PipelineSchedule s, int p, int v, int m, int stage) {
    return micro_batches_in_flight(s, p, v, m, stage);
  };
  // 1F1B, p 4: p - stage = 4, 3, 2, 1 with m 8; m 2 caps the first stages at 2.
  for (int st = 0; st < 4; ++st) {
    EXPECT_EQ(in_flight(PipelineSchedule::one_f_one_b, 4, 1, 8, st), 4 - st);
    EXPECT_EQ(in_flight(PipelineSchedule::zero_bubble, 4, 1, 8, st), 4 - st);
    EXPECT_EQ(in_flight(PipelineSchedule::gpipe, 4, 1, 8, st), 8);
  }
  EXPECT_EQ(in_flight(PipelineSchedule::one_f_one_b, 4, 1, 2, 0), 2);
  EXPECT_EQ(in_flight(PipelineSchedule::one_f_one_b, 4, 1, 2, 3), 1);
  // Interleaved p 4, v 2, m 8: first stage 2 x 3 + 1 x 4 + 1 = 11 chunks = 5.5 micro-batches
  // = p (1 + (p - 1)/(p v)) = 4 x (1 + 3/8), Megatron's penalty; last stage 0 + 4 + 1 = 5 chunks.
  EXPECT_DOUBLE_EQ(in_flight(PipelineSchedule::interleaved, 4, 2, 8, 0), 5.5);
  EXPECT_DOUBLE_EQ(in_flight(PipelineSchedule::interleaved, 4, 2, 8, 0), 4 * (1 + 3.0 / 8));
  EXPECT_DOUBLE_EQ(in_flight(PipelineSchedule::interleaved, 4, 2, 8, 3), 2.5);
  // m = p: every chunk-micro-batch warms up (m v = 8 chunks), 4 micro-batches.
  EXPECT_DOUBLE_EQ(in_flight(PipelineSchedule::interleaved, 4, 2, 4, 0), 4);
}

// A small transformer, every number by hand: vocab 1000, d 64, 2 blocks, 4 heads, FFN 256, 128
// learned positions, untied head, LayerNorm, biases; 8 GPUs as TP 2 x PP 2 x DP 2.
TEST(ParallelMemory, StageMemoryByHand) {
  hw::TransformerDims d;
  d.vocab = 1000;
  d.d_model = 64;
  d.n_layers = 2;
  d.n_heads = 4;
  d.ffn_dim = 256;
  d.max_positions = 128;
  d.tied_embeddings = false;
  const auto model = hw::transformer_model("small", d, 16);
  // embedding 1000 x 64 + 128 x 64 = 72,192; block: q k v out 4 x 64^2 = 16,384, MLP 2 x 64 x
  // 256 = 32,768, biases 3 x 64 + 64 + 256 + 64 = 576, norms 2 x 128 = 256: 49,984; head 128 +
  // 64,000 = 64,128.
  ASSERT_DOUBLE_EQ(model.layers[0].params, 72192);
  ASSERT_DOUBLE_EQ(model.layers[1].params, 49984);
  ASSERT_DOUBLE_EQ(model.layers[3].params, 64128);
  scenario::ParallelismSpec p;
  p.tensor = 2;
  p.pipeline = 2;
  p.sequence_parallel = true;
  const ParallelLayout layout(p, 8, 8, model);
  const TransformerShape x{.hidden = 64,
                           .heads = 4,
                           .ffn = 256,
                           .vocab = 1000,
                           .norm_params = 2,
                           .linear_bias = true,
                           .positions = 128};
  // Per TP rank: embedding 8,192 positions whole + 64,000 / 2 = 40,192; block 2 x 128 norms +
  // 2 x 64 row-parallel biases = 384 whole + (49,984 - 384) / 2 = 25,184; head 128 + 32,000.
  EXPECT_DOUBLE_EQ(layer_params_per_gpu(model, 0, layout, x), 40192);
  EXPECT_DOUBLE_EQ(layer_params_per_gpu(model, 1, layout, x), 25184);
  EXPECT_DOUBLE_EQ(layer_params_per_gpu(model, 3, layout, x), 32128);
  MemoryOptions o{.micro_batch = 2,
                  .seq_len = 16,
                  .micro_batches = 4,
                  .bytes = state_bytes(scenario::Dtype::bf16, scenario::Optimizer::adamw),
                  .shard_optimizer = true};
  EXPECT_DOUBLE_EQ(o.bytes.weights, 2);
  EXPECT_DOUBLE_EQ(o.bytes.grads, 2);
  EXPECT_DOUBLE_EQ(o.bytes.optimizer, 12);
  const auto stages = memory_per_stage(layout, model, x, o);
  ASSERT_EQ(stages.size(), 2u);
  // Stage 0: embedding + block 0 = 65,376 parameters a GPU: weights and grads 130,752 bytes
  // each, optimizer 65,376 x 12 / DP 2 = 392,256.
  const auto& s0 = stages[0];
  EXPECT_DOUBLE_EQ(s0.params, 65376);
  EXPECT_DOUBLE_EQ(s0.weights, 130752);
  EXPECT_DOUBLE_EQ(s0.grads, 130752);
  EXPECT_DOUBLE_EQ(s0.optimizer_state, 392256);
  // sbh = 16 x 2 x 64 = 2,048, 5as^2b = 5 x 4 x 256 x 2 = 10,240: a block with SP keeps
  // (34 x 2,048 + 10,240) / 2 = 39,936; the embedding (2,048 + 8 x 32) / 2 = 1,152. 1F1B: 2 in
  // flight on the first of 2 stages: 2 x 41,088 = 82,176. One receive buffer (the gradient):
  // 2sbh / 2 = 2,048.
  EXPECT_DOUBLE_EQ(s0.activations_per_micro_batch, 41088);
  EXPECT_DOUBLE_EQ(s0.in_flight, 2);
  EXPECT_DOUBLE_EQ(s0.activations, 82176);
  EXPECT_DOUBLE_EQ(s0.p2p_buffers, 2048);
  EXPECT_DOUBLE_EQ(s0.total(), 737984);
  // Stage 1: block 1 + head = 57,312 parameters; activations 39,936 + 4sbh/2 + 4sbv/2 = 39,936 +
  // 4,096 + 64,000 = 108,032, one in flight.
  const auto& s1 = stages[1];
  EXPECT_DOUBLE_EQ(s1.params, 57312);
  EXPECT_DOUBLE_EQ(s1.activations, 108032);
  EXPECT_DOUBLE_EQ(s1.p2p_buffers, 2048);
  EXPECT_DOUBLE_EQ(peak_memory_per_gpu(stages), 737984); // stage 0's
  // Unsharded: the optimizer state whole, 784,512 bytes.
  o.shard_optimizer = false;
  EXPECT_DOUBLE_EQ(stage_memory(layout, model, x, o, 0).optimizer_state, 784512);
}

// Megatron-LM's estimator (megatron/training/theoretical_memory_usage.py, the SP + selective path,
// no distributed optimizer, no interleaving) for GPT-3 175B at s 2048, b 1, t 8, p 8, 64
// micro-batches. Its numbers:
//   per layer 2h(4h + 2) + 4h^2 = 12h^2 + 4h = 1,811,988,480 parameters; the block 96 layers +
//   the final LayerNorm 2h = 173,950,918,656; embedding hv = 629,145,600; most loaded shard
//   (block / p + hv) / t = 2,796,626,304 parameters, x 18 bytes = 50,339,273,472 (48,007.3 MiB);
//   activations (first stage) [34 sbh x 96 + 8sbp + sbhp] / t = (82,141,249,536 + 131,072 +
//   201,326,592) / 8 = 10,292,838,400 bytes (9,816.0 MiB).
// Ours, first stage: the activations agree exactly (12 layers x 8 in flight = 96 layers); the
// parameters differ by the LayerNorms, which this model keeps whole on every TP rank (the
// estimator divides them by t): + 12 x 4h x 7/8 = 516,096, and the estimator's share of the final
// LayerNorm, 2h / (p t) = 384, sits on our last stage: 2,796,626,304 + 516,096 - 384 =
// 2,797,142,016 parameters, 50,348,556,288 bytes (0.018% more).
TEST(ParallelMemory, AgreesWithMegatronsEstimatorOnGpt3) {
  const auto x = gpt3();
  const double h = x.hidden;
  hw::ModelSpec model;
  model.layers.push_back({.name = "embedding", .params = h * x.vocab});
  for (int i = 0; i < 96; ++i)
    model.layers.push_back({.name = fmt::format("block{}", i), .params = 12 * h * h + 4 * h});
  model.layers.push_back({.name = "head", .params = 2 * h}); // tied: the final norm only
  scenario::ParallelismSpec p;
  p.tensor = 8;
  p.pipeline = 8;
  p.sequence_parallel = true;
  p.recompute = Recompute::selective;
  const ParallelLayout layout(p, 64, 8, model, h * x.vocab);
  const MemoryOptions o{.micro_batch = 1,
                        .seq_len = 2048,
                        .micro_batches = 64,
                        .bytes = kMegatronMixedPrecisionAdam,
                        .shard_optimizer = false};
  const auto s0 = stage_memory(layout, model, x, o, 0);
  const double megatron_params = 2796626304, megatron_activations = 10292838400;
  EXPECT_DOUBLE_EQ(s0.activations, megatron_activations);
  EXPECT_DOUBLE_EQ(s0.params, megatron_params + 516096 - 384);
  EXPECT_DOUBLE_EQ(s0.weights + s0.grads + s0.optimizer_state, 50348556288.0);
  EXPECT_NEAR((s0.weights + s0.grads + s0.optimizer_state) / (megatron_params * 18), 1, 2e-4);
  // The last stage holds the tied embedding's copy (hv / t) and 12 blocks and the final norm, one
  // micro-batch in flight.
  const auto s7 = stage_memory(layout, model, x, o, 7);
  EXPECT_DOUBLE_EQ(s7.params, h * x.vocab / 8 + 12 * ((12 * h * h) / 8 + 4 * h) + 2 * h);
  EXPECT_EQ(s7.in_flight, 1);
}

TEST(ParallelMemory, OfAScenario) {
  const auto s = scenario::load_scenario_text(R"(name: p
cluster: {nodes: 1, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4}
model: {preset: llama2-7b}
training: {micro_batch: 1, seq_len: 4096, grad_accum: 8}
algorithms: [ddp]
parallelism: {tensor: 2, pipeline: 2, sequence_parallel: true, recompute: selective}
)",
                                              "p.yaml");
  const auto shape = TransformerShape::of(s.model);
  ASSERT_TRUE(shape.has_value());
  EXPECT_DOUBLE_EQ(shape->hidden, 4096);
  EXPECT_DOUBLE_EQ(shape->ffn, 11008);
  EXPECT_DOUBLE_EQ(shape->norm_params, 1); // RMSNorm
  EXPECT_FALSE(shape->linear_bias);
  EXPECT_DOUBLE_EQ(shape->positions, 0); // rotary
  const auto stages = memory_per_stage(s);
  ASSERT_EQ(stages.size(), 2u);
  // 16 blocks a stage, 2 in flight on the first: per block sbh (18 + 4 x 11008/4096) / 2 with
  // sbh = 4096 x 4096 = 16,777,216; plus the embedding (sbh + 8 x 4096) / 2.
  const double sbh = 4096.0 * 4096;
  const double block = sbh * (18 + 4 * 11008.0 / 4096) / 2;
  EXPECT_DOUBLE_EQ(stages[0].activations, 2 * (16 * block + (sbh + 8 * 4096) / 2));
  // Sharding the optimizer state over DP 2 halves it.
  EXPECT_DOUBLE_EQ(memory_per_stage(s, true)[0].optimizer_state, stages[0].optimizer_state / 2);
  // Every parameter on exactly one stage of one TP group, the replicated ones on each TP rank.
  const auto layout = ParallelLayout::of(s);
  double whole = 0;
  for (int l = 0; l < static_cast<int>(s.model.spec.layers.size()); ++l)
    whole += layer_params_per_gpu(s.model.spec, l, layout, shape);
  EXPECT_DOUBLE_EQ(stages[0].params + stages[1].params, whole);
}

} // namespace
} // namespace overlapsim::parallel
