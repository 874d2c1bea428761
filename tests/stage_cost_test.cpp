// The per-stage costs of issue 65 (items 2 and 4) in the simulator: Megatron's recomputation
// (parallelism.recompute) priced with the roofline op lists and run in each block's backward,
// tp_comm_overlap's cost, the memory per GPU the simulation reports being parallel/memory.h's,
// and each data-parallel group reducing its stage's and TP shard's gradients only.
#include "hw/compute_cost.h"
#include "hw/roofline.h"
#include "hw/units.h"
#include "parallel/memory.h"
#include "parallel/stage_view.h"
#include "parallel/tp_comm_overlap.h"
#include "scenario/loader.h"
#include "sim/sim_runtime.h"
#include "test_util.h"
#include "trace/metrics.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

// gpt-neo-1.3b (d 2048, 16 heads of 128, eager attention, causal, no dropout) on one node of 8
// H100s (989 TFLOP/s bf16, 3.35 TB/s, 132 SMs) with NVLink 4.
scenario::Scenario neo(const std::string& parallelism, int grad_accum = 4,
                       const std::string& algorithm = "ddp", const std::string& gpu = "h100-sxm") {
  return scenario::load_scenario_text(
      fmt::format("name: c\ncluster: {{nodes: 1, gpus_per_node: 8, gpu: {}, intra_node: "
                  "nvlink4}}\nmodel: {{preset: gpt-neo-1.3b}}\n"
                  "training: {{micro_batch: 1, seq_len: 1024, grad_accum: {}, steps: 3, "
                  "warmup_steps: 1}}\nparallelism: {}\nalgorithms: [{}]\n",
                  gpu, grad_accum, parallelism, algorithm),
      "c.yaml");
}

double forward_seconds(const parallel::StageView& v, int layer) {
  const auto& l = v.scenario.model.spec.layers[static_cast<std::size_t>(layer)];
  return hw::layer_seconds_per_sample(l, v.scenario.cluster.gpu, false, false) *
         v.scenario.training.micro_batch;
}

// The recompute time of a layer as the simulator prices it (sim/sim_worker.cpp), per micro-batch.
double recompute_seconds(const parallel::StageView& v, int layer) {
  const auto& r = v.recompute[static_cast<std::size_t>(layer)];
  return forward_seconds(v, layer) * (r.linear_share + r.quadratic_share);
}

// Korthikanti et al. 2022, Sec. 5: selective recomputation re-runs the attention core, QK^T,
// softmax (with its masks and cast) and AV, nothing else. One block of gpt-neo-1.3b at TP 2, SP,
// s 1024, b 1: 8 heads a rank, a = 8 x 1024^2 = 8,388,608 score elements. By the roofline
// (hw/roofline.h: GEMMs max(flops / (peak x eff), bytes / (0.9 HBM)), memory ops bytes / (0.9 or
// 0.55 x HBM)):
//   QK^T  [1024 x 1024 x 128] x 8: 2.147 GFLOP at 0.8 x 128/256 x 512 tiles / (4 x 132) =
//         0.3879 of peak: 5.60 us; 20,971,520 bytes / 3.015e12 B/s = 6.956 us -> 6.956 us
//   AV    [1024 x 128 x 1024] x 8: 2.147 GFLOP at 0.8 x 1024/1152 x 64/132 = 0.3448: 6.30 us;
//         the same 20,971,520 bytes: 6.956 us -> 6.956 us
//   causal mask 6a bytes irregular / 1.8425e12 = 27.316 us; mask add 8a irregular = 36.422 us;
//   softmax 8a streaming / 3.015e12 = 22.258 us; cast 6a streaming = 16.694 us
// in all 116.60 us a block and micro-batch; full recomputation re-runs the block's forward.
TEST(StageCost, SelectiveRecomputeIsTheAttentionCoreByHand) {
  const auto s = neo("{tensor: 2, sequence_parallel: true, recompute: selective}");
  const auto views = parallel::stage_views(s, parallel::ParallelLayout::of(s));
  ASSERT_EQ(views.size(), 1u);
  const auto& v = views.front();
  const double a = 8 * 1024.0 * 1024, hbm = 3.35e12;
  const double gemm_bytes = 2 * 8 * (1024.0 * 128 * 2 + 1024.0 * 1024);
  const double qk =
      std::max(2 * 1024.0 * 1024 * 128 * 8 / (989e12 * 0.4 * 512 / 528), gemm_bytes / (0.9 * hbm));
  const double av = std::max(2 * 1024.0 * 1024 * 128 * 8 / (989e12 * 0.8 * 1024 / 1152 * 64 / 132),
                             gemm_bytes / (0.9 * hbm));
  const double softmax_etc =
      6 * a / (0.55 * hbm) + 8 * a / (0.55 * hbm) + 8 * a / (0.9 * hbm) + 6 * a / (0.9 * hbm);
  const double by_hand = qk + av + softmax_etc;
  EXPECT_NEAR(by_hand, 116.60e-6, 0.01e-6);
  // block0 is layer 1: the attention core only, none of its linear part.
  const auto& r = v.recompute[1];
  EXPECT_EQ(r.linear_share, 0);
  EXPECT_NEAR(recompute_seconds(v, 1), by_hand, 1e-12);
  // What it rebuilds during the block's backward: 5as^2b / t = 5 x 16 x 1024^2 / 2 bytes.
  EXPECT_DOUBLE_EQ(r.bytes, 41943040);
  // The block keeps sbh x 34 / t = 1024 x 2048 x 34 / 2 bytes (Table 2, SP, selective).
  EXPECT_DOUBLE_EQ(v.scenario.model.spec.layers[1].activation_bytes_per_sample, 35651584);
  // The embedding and the head recompute nothing (Megatron recomputes transformer layers).
  EXPECT_FALSE(v.recompute.front().any());
  EXPECT_FALSE(v.recompute.back().any());

  // Full: the whole forward again (its linear and its quadratic part), its collectives too.
  const auto f = neo("{tensor: 2, sequence_parallel: true, recompute: full}");
  const auto full = parallel::stage_views(f, parallel::ParallelLayout::of(f)).front();
  EXPECT_NEAR(recompute_seconds(full, 1), forward_seconds(full, 1), 1e-15);
  EXPECT_DOUBLE_EQ(full.tensor_comm[1].backward_s,
                   v.tensor_comm[1].backward_s + v.tensor_comm[1].forward_s);
  EXPECT_EQ(full.tensor_comm[1].backward_calls, 6 + 4);
  // It rebuilds all but the kept input: sbh (34 + 5as/h) / t - 2sbh / t.
  const double sbh = 1024.0 * 2048;
  EXPECT_DOUBLE_EQ(full.recompute[1].bytes, (sbh * (34 + 5 * 16 * 1024 / 2048.0) - 2 * sbh) / 2);
  // Korthikanti et al. Table 4 (GPT-3 scale): full recomputation ~ +33% of a step, selective
  // 2.7-4%. Here (s 1024, eager attention): the block's forward over its forward and backward.
  const double block =
      forward_seconds(full, 1) +
      hw::layer_seconds_per_sample(full.scenario.model.spec.layers[1], f.cluster.gpu, false, true);
  fmt::print("recompute per block: selective {:.1f} us ({:.1f}%), full {:.1f} us ({:.1f}%)\n",
             by_hand * 1e6, 100 * by_hand / block, forward_seconds(full, 1) * 1e6,
             100 * forward_seconds(full, 1) / block);
  EXPECT_GT(forward_seconds(full, 1) / block, 0.25);
  EXPECT_LT(forward_seconds(full, 1) / block, 0.40);
}

// The simulator runs it: a "recompute fwd" op before each backward range, of the priced length,
// and the step grows by it. (Collectives beside it slow no compute here: comm_interference 0.)
TEST(StageCost, TheSimulatorRunsTheRecomputation) {
  const std::string gpu = "{preset: h100-sxm, comm_interference: 0}";
  const auto none = neo("{tensor: 2, pipeline: 2, sequence_parallel: true}", 4, "ddp", gpu);
  const auto sel =
      neo("{tensor: 2, pipeline: 2, sequence_parallel: true, recompute: selective}", 4, "ddp", gpu);
  const auto views = parallel::stage_views(sel, parallel::ParallelLayout::of(sel));
  double per_micro_batch = 0; // stage 0: the embedding and 12 blocks
  for (int l = 0; l < static_cast<int>(views[0].recompute.size()); ++l)
    per_micro_batch += recompute_seconds(views[0], l);
  const auto r = sim::simulate(sel, sel.algorithms.front());
  double recomputed = 0;
  for (const auto& e : r.trace.events)
    if (e.worker == 0 && e.step == 1 && r.trace.name_of(e.name).starts_with("recompute fwd")) {
      EXPECT_EQ(e.stream, StreamKind::compute);
      recomputed += e.end - e.start;
    }
  // 4 micro-batches a step.
  EXPECT_NEAR(recomputed, 4 * per_micro_batch, 1e-9);
  const auto with = compute_metrics(r.trace, 1, 3);
  const auto without = compute_metrics(sim::simulate(none, none.algorithms.front()).trace, 1, 3);
  fmt::print("TP2 PP2 step: {:.3f} ms, with selective recompute {:.3f} ms\n",
             without.iteration_time_s * 1e3, with.iteration_time_s * 1e3);
  EXPECT_GT(with.iteration_time_s, without.iteration_time_s + 4 * per_micro_batch * 0.9);
}

TEST(StageCost, TpCommOverlapCostByHand) {
  using parallel::OverlapMethod;
  // A 1 ms collective beside a 2 ms GEMM on 132 SMs:
  // ring exchange (TP 4 splits, 1 SM, no margin): max(1, 2) + 1/4 - 2 = 0.25 ms
  EXPECT_NEAR(parallel::overlap_extra_seconds(1e-3, 2e-3, OverlapMethod::ring_exchange, 4, 132),
              0.25e-3, 1e-15);
  // pipeline (16 SMs off the GEMM: x 132/116, 4 splits): 2.27586 + 1/4 - 2 = 0.52586 ms
  EXPECT_NEAR(parallel::overlap_extra_seconds(1e-3, 2e-3, OverlapMethod::pipeline, 4, 132),
              2e-3 * 132 / 116 + 0.25e-3 - 2e-3, 1e-15);
  EXPECT_NEAR(2e-3 * 132 / 116 + 0.25e-3 - 2e-3, 0.52586e-3, 1e-8);
  // bulk (16 SMs, no chunks): 2.27586 - 2 = 0.27586 ms
  EXPECT_NEAR(parallel::overlap_extra_seconds(1e-3, 2e-3, OverlapMethod::bulk, 4, 132),
              2e-3 * 132 / 116 - 2e-3, 1e-15);
  // A collective longer than its GEMM: 3 ms beside 1 ms, ring exchange over 2: 3 + 1/2 - 1.
  EXPECT_NEAR(parallel::overlap_extra_seconds(3e-3, 1e-3, OverlapMethod::ring_exchange, 2, 132),
              2.5e-3, 1e-15);
  // No GEMM beside it: the collective whole.
  EXPECT_EQ(parallel::overlap_extra_seconds(3e-3, 0, OverlapMethod::pipeline, 2, 132), 3e-3);
  EXPECT_EQ(parallel::overlap_constants(OverlapMethod::ring_exchange, 8).splits, 8);
  EXPECT_EQ(parallel::overlap_constants(OverlapMethod::pipeline, 8).comm_sms, 16);

  // Pairing: an all-gather with the GEMMs right after it, a reduce-scatter with the GEMM before.
  const hw::GpuSpec gpu =
      scenario::load_scenario_text("name: g\ncluster: {nodes: 1, gpus_per_node: 2, gpu: h100-sxm, "
                                   "intra_node: nvlink4}\nmodel: {preset: gpt-neo-125m}\n"
                                   "training: {micro_batch: 1, seq_len: 128}\n"
                                   "algorithms: [ddp]\n",
                                   "g.yaml")
          .cluster.gpu;
  const std::vector<hw::KernelOp> ops{
      hw::memory_op("norm", 1e6), hw::gemm_op("q proj", {4096, 1024, 2048}),
      hw::gemm_op("k proj", {4096, 1024, 2048}), hw::memory_op("attention", 1e6),
      hw::gemm_op("out proj", {4096, 2048, 1024})};
  const double q = hw::kernel_time_s(gpu, ops[1]), o = hw::kernel_time_s(gpu, ops[4]);
  std::vector<hw::TpCommOp> comm(2);
  comm[0].kind = hw::TpCollective::all_gather, comm[0].position = 1;
  comm[1].kind = hw::TpCollective::reduce_scatter, comm[1].position = 5;
  const auto c = parallel::overlap_block_comm(ops, comm, {1e-4, 1e-4}, false, gpu, 2);
  const double ag =
      parallel::overlap_extra_seconds(1e-4, 2 * q, OverlapMethod::ring_exchange, 2, 132);
  const double rs = parallel::overlap_extra_seconds(1e-4, o, OverlapMethod::pipeline, 2, 132);
  EXPECT_NEAR(c.exposed_s, ag + rs, 1e-15);
  EXPECT_NEAR(c.hidden_s, std::max(0.0, 1e-4 - ag) + std::max(0.0, 1e-4 - rs), 1e-15);
}

// tp_comm_overlap on a block: less exposed than the collectives alone, more than nothing, and the
// simulator's TP ops are the exposed part.
TEST(StageCost, TpCommOverlapInTheSimulator) {
  const auto plain = neo("{tensor: 8, sequence_parallel: true}", 1);
  const auto over = neo("{tensor: 8, sequence_parallel: true, tp_comm_overlap: true}", 1);
  const auto pv = parallel::stage_views(plain, parallel::ParallelLayout::of(plain)).front();
  const auto ov = parallel::stage_views(over, parallel::ParallelLayout::of(over)).front();
  const auto& p = pv.tensor_comm[1];
  const auto& o = ov.tensor_comm[1];
  EXPECT_TRUE(o.overlapped);
  EXPECT_FALSE(p.overlapped);
  EXPECT_LT(o.forward_s, p.forward_s);
  EXPECT_GT(o.forward_s, 0);
  EXPECT_LT(o.backward_s, p.backward_s);
  EXPECT_GT(o.hidden_s, 0);
  EXPECT_EQ(o.forward_bytes, p.forward_bytes); // the same collectives run
  fmt::print("TP8 SP block: collectives fwd {:.1f} + bwd {:.1f} us; overlapped exposed "
             "{:.1f} + {:.1f} us, hidden {:.1f} us\n",
             p.forward_s * 1e6, p.backward_s * 1e6, o.forward_s * 1e6, o.backward_s * 1e6,
             o.hidden_s * 1e6);
  // The embedding and the head: TransformerEngine's userbuffers serve the blocks' linears only.
  EXPECT_FALSE(ov.tensor_comm.front().overlapped);
  EXPECT_DOUBLE_EQ(ov.tensor_comm.back().forward_s, pv.tensor_comm.back().forward_s);

  const auto r = sim::simulate(over, over.algorithms.front());
  double tp = 0;
  int overlapped = 0;
  for (const auto& e : r.trace.events)
    if (e.worker == 0 && e.step == 1 && e.detail >= 0 &&
        r.trace.name_of(e.detail) == "tensor-parallel") {
      const auto& name = r.trace.name_of(e.name);
      // The ops of ranges with blocks say so; the embedding's and the head's alone do not.
      const bool alone = name.ends_with("(fwd embedding)") || name.ends_with("(fwd head)");
      overlapped += name.find(" overlapped ") != std::string::npos;
      EXPECT_EQ(name.find(" overlapped ") != std::string::npos, !alone) << name;
      tp += e.end - e.start;
    }
  EXPECT_GT(overlapped, 0);
  double priced = 0;
  for (const auto& c : ov.tensor_comm)
    priced += c.forward_s + c.backward_s;
  EXPECT_NEAR(tp, priced, 1e-9);
  const auto mp = compute_metrics(sim::simulate(plain, plain.algorithms.front()).trace, 1, 3);
  const auto mo = compute_metrics(r.trace, 1, 3);
  EXPECT_LT(mo.iteration_time_s, mp.iteration_time_s);
}

TEST(StageCost, TpCommOverlapNeedsSequenceParallelism) {
  try {
    neo("{tensor: 2, tp_comm_overlap: true}");
    ADD_FAILURE() << "loaded";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("c.yaml:"));
    EXPECT_THAT(e.what(), HasSubstr("tp_comm_overlap"));
    EXPECT_THAT(e.what(), HasSubstr("sequence_parallel"));
  }
}

TEST(StageCost, RecomputeAndActivationCheckpointingExclude) {
  try {
    scenario::load_scenario_text(R"(name: c
cluster: {nodes: 1, gpus_per_node: 2, gpu: h100-sxm, intra_node: nvlink4}
model: {preset: gpt-neo-125m, activation_checkpointing: full}
training: {micro_batch: 1, seq_len: 128}
algorithms: [ddp]
parallelism: {recompute: full}
)",
                                 "c.yaml");
    ADD_FAILURE() << "loaded";
  } catch (const std::exception& e) {
    EXPECT_THAT(e.what(), HasSubstr("c.yaml:6"));
    EXPECT_THAT(e.what(), HasSubstr("activation_checkpointing"));
  }
}

// Llama-2 7B, TP 2 x PP 2 x DP 2 on 8 H100s, 1F1B, SP, selective recomputation, s 4096, b 1, 4
// micro-batches, bf16 AdamW (2 + 2 + 12 bytes a parameter), DDP with its gradients as bucket
// views. Stage 0, one GPU, by hand:
//   parameters: embedding 32000 x 4096 / 2 = 65,536,000; a block 4 x 4096^2 + 3 x 4096 x 11008
//     + 2 x 4096 = 202,383,360, of which the two RMSNorms (8,192) whole: 8,192 + 101,187,584 =
//     101,195,776, x 16 blocks = 1,619,132,416; in all 1,684,668,416 -> x 16 B = 26,954,694,656
//   activations per micro-batch: a block sbh (18 + 4 x 11008/4096) / 2 = 16,777,216 x 28.75 / 2
//     = 241,172,480, x 16 = 3,858,759,680; the embedding (sbh + 8sb) / 2 = 8,404,992; 2 in flight
//     (1F1B, first of 2 stages): 7,734,329,344
//   recomputed during a block's backward: nothing kept to rebuild (Llama's SDPA attention keeps
//     no s^2 tensor; eager attention would rebuild 5as^2b / t = 1,342,177,280)
//   receive buffer (the gradient from stage 1): 2sbh / 2 = 16,777,216
//   total 34,705,801,216 bytes.
TEST(StageCost, MemoryPerGpuIsTheMemoryModelsEverywhere) {
  const std::string yaml = R"(name: m
cluster: {nodes: 1, gpus_per_node: 8, gpu: h100-sxm, intra_node: nvlink4}
model: {preset: llama2-7b}
training: {micro_batch: 1, seq_len: 4096, grad_accum: 4, steps: 2, warmup_steps: 1}
parallelism: {tensor: 2, pipeline: 2, sequence_parallel: true, recompute: selective}
algorithms: [{name: ddp, gradient_as_bucket_view: true}]
)";
  const auto s = scenario::load_scenario_text(yaml, "m.yaml");
  const auto stages = parallel::memory_per_stage(s);
  ASSERT_EQ(stages.size(), 2u);
  const auto& s0 = stages[0];
  EXPECT_DOUBLE_EQ(s0.params, 1684668416);
  EXPECT_DOUBLE_EQ(s0.weights + s0.grads + s0.optimizer_state, 26954694656.0);
  EXPECT_DOUBLE_EQ(s0.activations, 7734329344.0);
  EXPECT_DOUBLE_EQ(s0.recompute_working, 0);
  EXPECT_DOUBLE_EQ(s0.p2p_buffers, 16777216);
  EXPECT_DOUBLE_EQ(s0.total(), 34705801216.0);
  EXPECT_DOUBLE_EQ(parallel::peak_memory_per_gpu(stages), 34705801216.0);
  // With eager attention the 5as^2b / t of each block would be kept without recomputation, and
  // rebuilt one block at a time with it.
  auto eager = parallel::TransformerShape::of(s.model).value();
  eager.fused_attention = false;
  EXPECT_DOUBLE_EQ(
      parallel::recompute_bytes(eager, 4096, 1, 2, true, scenario::Recompute::selective),
      1342177280);

  // The simulation holds the same on every GPU of stage 0, category by category.
  const auto r = sim::simulate(s, s.algorithms.front());
  const auto layout = parallel::ParallelLayout::of(s);
  for (int w = 0; w < 8; ++w) {
    const auto& st = stages[static_cast<std::size_t>(layout.coordinates(w).pipeline)];
    const auto& m = r.trace.peak_memory[static_cast<std::size_t>(w)];
    const auto at = [&](MemoryCategory c) { return m[static_cast<std::size_t>(c)]; };
    EXPECT_DOUBLE_EQ(at(MemoryCategory::params), st.weights) << w;
    EXPECT_DOUBLE_EQ(at(MemoryCategory::grads), st.grads) << w;
    EXPECT_DOUBLE_EQ(at(MemoryCategory::optimizer_state), st.optimizer_state) << w;
    EXPECT_DOUBLE_EQ(at(MemoryCategory::buffers), st.p2p_buffers) << w;
    EXPECT_DOUBLE_EQ(at(MemoryCategory::activations), st.activations + st.recompute_working) << w;
  }
  const auto metrics = compute_metrics(r.trace, 1, 2);
  EXPECT_DOUBLE_EQ(metrics.peak_memory_bytes, 34705801216.0);

  // summary.json, report.md and the fits decision: the same number.
  overlapsim::testing::ScratchDir dir;
  const auto path = dir / "m.yaml";
  std::ofstream(path) << yaml;
  const auto [rc, out] = overlapsim::testing::run(
      fmt::format("run {} --no-plots --out {}", path.string(), (dir / "out").string()));
  ASSERT_EQ(rc, 0) << out;
  const auto summary =
      nlohmann::json::parse(overlapsim::testing::slurp(dir / "out" / "summary.json"));
  const auto& row = summary["results"][0];
  EXPECT_DOUBLE_EQ(row["peak_memory_bytes"].get<double>(), 34705801216.0);
  // 80 GB less the reserve: it fits.
  EXPECT_TRUE(row["fits"].get<bool>());
  EXPECT_THAT(overlapsim::testing::slurp(dir / "out" / "report.md"),
              HasSubstr(hw::format_bytes(34705801216.0)));
}

// Each data-parallel group reduces its stage's TP shard: the DP all-reduces of a step on a GPU of
// stage s carry that GPU's parameters once (bf16 gradients, 2 bytes each), as the ring's bytes
// sent, 2 (d - 1) / d of them.
TEST(StageCost, DataParallelGradientsAreTheStagesShard) {
  const auto s = neo("{tensor: 2, pipeline: 2, sequence_parallel: true}", 2,
                     "{name: ddp, gradient_as_bucket_view: true}");
  const auto layout = parallel::ParallelLayout::of(s);
  const auto views = parallel::stage_views(s, layout);
  const auto r = sim::simulate(s, s.algorithms.front());
  for (int w = 0; w < 8; ++w) {
    const auto& v = views[static_cast<std::size_t>(layout.coordinates(w).pipeline)];
    double sent = 0;
    for (const auto& e : r.trace.events)
      if (e.worker == w && e.step == 1 && e.category == OpCategory::comm &&
          e.stream == StreamKind::comm && e.peer < 0 && e.group_size == layout.data())
        sent += e.bytes;
    const double d = layout.data();
    EXPECT_NEAR(sent, v.scenario.model.spec.total_params() * 2 * 2 * (d - 1) / d, 1.0) << w;
  }
  // By hand, stage 0 of gpt-neo-1.3b at TP 2: the embedding's 50257 x 2048 / 2 + 2048 x 2048
  // learned positions whole, and 12 blocks of 12 x 2048^2 weights + 10 x 2048 biases and norms
  // (no q/k/v bias: out h, up 4h, down h, two LayerNorms 4h), of which the norms and the
  // row-parallel out and down biases, 6 x 2048, are whole.
  const double h = 2048;
  const double block = 12 * h * h + 10 * h, whole = 6 * h;
  EXPECT_DOUBLE_EQ(views[0].scenario.model.spec.total_params(),
                   50257 * h / 2 + 2048 * h + 12 * (whole + (block - whole) / 2));
}

} // namespace
} // namespace overlapsim
