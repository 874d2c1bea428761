// model.activation_checkpointing (issue 15.14): its memory and its recompute time against hand
// calculations, for a `layers:` list and a transformer preset; validate refuses it.
#include "test_util.h"

#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

namespace overlapsim {
namespace {

using testing::error_of;
using ::testing::HasSubstr;
using testing::scenario_from;
using testing::simulate;

// One GPU of exactly 100 TFLOP/s and 1 TB/s HBM (no communication): every duration is round.
// Four layers of 1M parameters, 1 TFLOP forward per sample (10 ms; backward 20 ms), 1 GB of
// activations and a 100 MB output per sample.
std::string four_layers(const std::string& checkpointing) {
  return R"(name: ckpt
cluster:
  nodes: 1
  gpus_per_node: 1
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s}
  intra_node: {bandwidth: 100GB/s, latency: 1us}
  inter_node: {bandwidth: 10GB/s, latency: 10us}
model:
  layers:
    - {name: l, params: 1M, fwd_flops_per_sample: 1T, activation_bytes_per_sample: 1GB,
       output_bytes_per_sample: 100MB, repeat: 4}
)" + checkpointing +
         R"(
training: {micro_batch: 1, seq_len: 1, steps: 4}
algorithms: [ddp]
)";
}

double activations(const testing::Simulated& r) {
  return r.metrics.memory_breakdown[static_cast<std::size_t>(MemoryCategory::activations)];
}

int recomputes(const Trace& trace) {
  int n = 0;
  for (const auto& e : trace.events)
    if (e.step == 2 && e.category == OpCategory::forward &&
        trace.name_of(e.name).starts_with("recompute fwd"))
      ++n;
  return n;
}

TEST(ActivationCheckpointing, LayerListMemoryAndStepTimeMatchHandCalculation) {
  // AdamW: 4M params x 28 B / 1 TB/s = 0.112 ms.
  const double optimizer = 4e6 * 28 / 1e12;
  // none: forward 4 x 10 ms, backward 4 x 20 ms; all four layers' 1 GB are alive after forward.
  const auto none = simulate(scenario_from(four_layers("")), "ddp");
  EXPECT_NEAR(none.metrics.iteration_time_s, 0.120 + optimizer, 1e-6);
  EXPECT_DOUBLE_EQ(activations(none), 4e9);
  EXPECT_EQ(recomputes(none.trace), 0);

  // full (a segment per layer): the forward keeps the inputs of l1..l3 (3 x 100 MB; l0's input is
  // the batch, not counted). Backward of l3: its forward re-runs (10 ms, +1 GB: 1.3 GB, the
  // peak), then its backward frees 1 GB and its 100 MB input. Every layer's forward runs twice.
  const auto full = simulate(scenario_from(four_layers("  activation_checkpointing: full")), "ddp");
  EXPECT_NEAR(full.metrics.iteration_time_s, 0.040 + 0.040 + 0.080 + optimizer, 1e-6);
  EXPECT_DOUBLE_EQ(activations(full), 1.3e9);

  // every 2: segments {l0, l1} and {l2, l3}; the forward keeps l2's input (100 MB). Backward of
  // l3 re-runs l2 and l3 (20 ms, +2 GB: 2.1 GB, the peak); l1's re-runs l0 and l1 from the batch.
  const auto every2 =
      simulate(scenario_from(four_layers("  activation_checkpointing: {every: 2}")), "ddp");
  EXPECT_NEAR(every2.metrics.iteration_time_s, 0.040 + 0.040 + 0.080 + optimizer, 1e-6);
  EXPECT_DOUBLE_EQ(activations(every2), 2.1e9);
  // The recomputation is in the trace, on the compute stream, before its backward: one per
  // segment per step (counted in step 2).
  EXPECT_EQ(recomputes(every2.trace), 2);
  EXPECT_EQ(recomputes(full.trace), 4);
}

TEST(ActivationCheckpointing, TransformerCheckpointsItsBlocks) {
  // gpt2-small, 2 blocks, micro-batch 2 of 128 tokens on an H100: the roofline gives each layer's
  // activation bytes; checkpointing keeps the blocks' 16-bit inputs (2 B x 128 x 768 per sample)
  // and leaves the embedding and the head as they are.
  const std::string base = R"(name: gpt
cluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm, intra_node: nvlink4, inter_node: ib-ndr}
model: {preset: gpt2-small, n_layers: 2}
training: {micro_batch: 2, seq_len: 128, steps: 4}
algorithms: [ddp]
)";
  const auto plain = scenario_from(base);
  const auto full = scenario_from(base, {"model.activation_checkpointing=full"});
  ASSERT_EQ(full.model.checkpointing.first, 1);
  ASSERT_EQ(full.model.checkpointing.last, 3);
  const auto& layers = plain.model.spec.layers;
  const double b = 2, emb = layers[0].activation_bytes_per_sample,
               block = layers[1].activation_bytes_per_sample,
               head = layers[3].activation_bytes_per_sample, input = 2.0 * 128 * 768;
  EXPECT_DOUBLE_EQ(layers[0].output_bytes_per_sample, input);
  const auto r0 = simulate(plain, "ddp");
  const auto r1 = simulate(full, "ddp");
  EXPECT_NEAR(activations(r0), b * (emb + 2 * block + head), 1);
  // After the forward: embedding, two block inputs, head; the head's backward frees the head's
  // activations before block 1 re-runs.
  EXPECT_NEAR(activations(r1), b * (emb + 2 * input + std::max(head, block)), 1);
  // The step grows by the two blocks' forward, once more.
  const double block_fwd = b * layers[1].fwd_model_time_per_sample_s;
  EXPECT_NEAR(r1.metrics.iteration_time_s - r0.metrics.iteration_time_s, 2 * block_fwd,
              1e-3 * r0.metrics.iteration_time_s);
}

TEST(ActivationCheckpointing, LoaderReadsTheThreeFormsAndNamesTheKey) {
  const auto base = four_layers("");
  EXPECT_EQ(scenario_from(base).model.checkpointing.every, 0);
  EXPECT_EQ(scenario_from(base, {"model.activation_checkpointing=none"}).model.checkpointing.every,
            0);
  EXPECT_EQ(scenario_from(base, {"model.activation_checkpointing=full"}).model.checkpointing.every,
            1);
  const auto every3 = scenario_from(base, {"model.activation_checkpointing={every: 3}"});
  EXPECT_EQ(every3.model.checkpointing.every, 3);
  EXPECT_EQ(every3.model.checkpointing.segment_of(2), 0);
  EXPECT_EQ(every3.model.checkpointing.segment_of(3), 1);
  EXPECT_THAT(error_of(base, {"model.activation_checkpointing=some"}),
              HasSubstr("model.activation_checkpointing"));
  EXPECT_THAT(error_of(base, {"model.activation_checkpointing={every: 0}"}),
              HasSubstr("model.activation_checkpointing.every"));
  EXPECT_THAT(error_of(base, {"model.activation_checkpointing={every: 5}"}),
              HasSubstr("model.activation_checkpointing.every"));
  EXPECT_THAT(error_of(base, {"model.activation_checkpointing={each: 2}"}),
              HasSubstr("unknown key"));
}

TEST(ActivationCheckpointing, ValidateRefusesItNamingTheKey) {
  // The real runtime has no checkpointing: a run without it would be compared with a prediction
  // with it.
  const testing::ScratchDir dir;
  const auto path = dir / "s.yaml";
  std::ofstream(path) << R"(name: v
cluster: {nodes: 1, gpus_per_node: 2, gpu: a100-80gb, intra_node: nvlink3, inter_node: ib-hdr}
model: {preset: mlp, width: 64, depth: 2, dtype: fp32, activation_checkpointing: full}
training: {micro_batch: 2, seq_len: 1, steps: 2}
algorithms: [ddp]
)";
  const auto r = testing::run("validate " + path.string() + " --out " + (dir / "o").string());
  EXPECT_NE(r.first, 0) << r.second;
  if (r.second.find("real runs need overlapsim-real") != std::string::npos)
    GTEST_SKIP() << "built without LibTorch (the sanitizer build): validate cannot run";
  EXPECT_THAT(r.second, HasSubstr("s.yaml:3: key 'model.activation_checkpointing': the real "
                                  "runtime does not implement activation checkpointing"));
}

} // namespace
} // namespace overlapsim
