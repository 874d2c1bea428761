// A tensor-parallel rank's op lists and collectives (hw/transformer_ops.h, issue 65): Megatron-LM's
// sharding (Shoeybi et al. 2019) and sequence parallelism (Korthikanti et al. 2022), by hand.
#include "hw/presets.h"
#include "hw/roofline.h"
#include "hw/transformer_ops.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

namespace overlapsim {
namespace {

using namespace hw;

// GPT-3 175B (Brown et al. 2020): h = 12288, 96 heads of 128, d_ff = 4h, 96 layers.
TransformerDims gpt3() {
  TransformerDims d;
  d.vocab = 50257;
  d.d_model = 12288;
  d.n_layers = 96;
  d.n_heads = 96;
  d.ffn_dim = 4 * 12288;
  d.mlp = TransformerDims::Mlp::gelu;
  return d;
}

// Llama-2 70B: h = 8192, 64 query heads and 8 key/value heads of 128, SwiGLU 28672, RMSNorm.
TransformerDims llama2_70b() {
  TransformerDims d;
  d.vocab = 32000;
  d.d_model = 8192;
  d.n_layers = 80;
  d.n_heads = 64;
  d.n_kv_heads = 8;
  d.ffn_dim = 28672;
  d.max_positions = 0;
  d.tied_embeddings = false;
  d.gated_mlp = true;
  d.qkv_bias = false;
  d.linear_bias = false;
  d.rms_norm = true;
  d.mlp = TransformerDims::Mlp::swiglu;
  return d;
}

const KernelOp& find(const std::vector<KernelOp>& ops, const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name)
      return op;
  throw std::logic_error("no op " + name);
}

double gemm_flops(const std::vector<KernelOp>& ops) {
  double f = 0;
  for (const auto& op : ops)
    if (op.gemm.m > 0)
      f += op.flops;
  return f;
}

double seconds(const GpuSpec& gpu, const LayerOps& ops) {
  double t = 0;
  for (const auto& op : ops.forward)
    t += kernel_time_s(gpu, op);
  for (const auto& op : ops.backward)
    t += kernel_time_s(gpu, op);
  return t;
}

std::vector<std::string> names(const std::vector<KernelOp>& ops) {
  std::vector<std::string> out;
  for (const auto& op : ops)
    out.push_back(op.name);
  return out;
}

void expect_same(const LayerOps& a, const LayerOps& b) {
  ASSERT_EQ(names(a.forward), names(b.forward));
  ASSERT_EQ(names(a.backward), names(b.backward));
  EXPECT_EQ(a.saved_bytes, b.saved_bytes);
  EXPECT_EQ(a.quadratic, b.quadratic);
  for (std::size_t i = 0; i < a.forward.size(); ++i) {
    EXPECT_EQ(a.forward[i].flops, b.forward[i].flops) << a.forward[i].name;
    EXPECT_EQ(a.forward[i].bytes, b.forward[i].bytes) << a.forward[i].name;
  }
  for (std::size_t i = 0; i < a.backward.size(); ++i) {
    EXPECT_EQ(a.backward[i].flops, b.backward[i].flops) << a.backward[i].name;
    EXPECT_EQ(a.backward[i].bytes, b.backward[i].bytes) << a.backward[i].name;
  }
}

constexpr double kS = 2048;            // sequence length
constexpr double kE = kS * 12288;      // GPT-3's hidden elements of one sequence: 25,165,824
constexpr double kA = 96 * kS * kS;    // its attention scores: 402,653,184
constexpr double kActivation = 2 * kE; // one bf16 [s, b, h] array: 50,331,648 bytes
const TensorParallel kTp8{8, false}, kSp8{8, true};

TEST(TensorParallelOps, Gpt3ShardsItsGemmsOverEightRanks) {
  const auto ops = block_ops(gpt3(), 1, kS, kTp8);
  // Column-parallel q, k, v: [2048, 12288] x [12288, 12288 / 8] each, Megatron's fused QKV
  // [12288, 3 x 12288 / 8 = 4608] as the three projections the op lists keep.
  double qkv_n = 0;
  for (const char* name : {"q proj", "k proj", "v proj"}) {
    const auto& g = find(ops.forward, name).gemm;
    EXPECT_EQ(g.m, 2048);
    EXPECT_EQ(g.k, 12288);
    EXPECT_EQ(g.n, 1536);
    qkv_n += g.n;
  }
  EXPECT_EQ(qkv_n, 3 * 12288 / 8);
  // Attention over the rank's 96 / 8 = 12 heads of 128.
  const auto& scores = find(ops.forward, "scores q.k^T").gemm;
  EXPECT_EQ(scores.batch, 12);
  EXPECT_EQ(scores.k, 128);
  // Row-parallel out projection (k = h / 8), column-parallel up (4h / 8), row-parallel down.
  const auto& out = find(ops.forward, "out proj").gemm;
  EXPECT_EQ(out.n, 12288);
  EXPECT_EQ(out.k, 1536);
  EXPECT_EQ(find(ops.forward, "up proj").gemm.n, 6144);
  EXPECT_EQ(find(ops.forward, "down proj").gemm.k, 6144);
  // The wgrads are the shards' too: the up projection's dW is [12288, 6144] over 2048 tokens.
  const auto& wgrad = find(ops.backward, "up proj wgrad").gemm;
  EXPECT_EQ(wgrad.m, 12288);
  EXPECT_EQ(wgrad.n, 6144);
  EXPECT_EQ(wgrad.k, 2048);
}

TEST(TensorParallelOps, EightRanksRunTheUnshardedBlocksGemmFlops) {
  for (const auto& dims : {gpt3(), llama2_70b()}) {
    const auto one = block_ops(dims, 1, kS);
    for (const auto& tp : {kTp8, kSp8}) {
      const auto rank = block_ops(dims, 1, kS, tp);
      EXPECT_NEAR(8 * gemm_flops(rank.forward), gemm_flops(one.forward),
                  1e-12 * gemm_flops(one.forward));
      EXPECT_NEAR(8 * gemm_flops(rank.backward), gemm_flops(one.backward),
                  1e-12 * gemm_flops(one.backward));
    }
  }
  // GPT-3's forward GEMMs: 2 x 12 h^2 x 2048 + 4 x 2048^2 x h = 7,627,861,917,696 FLOPs; a rank's
  // eighth 953,482,739,712.
  EXPECT_EQ(gemm_flops(block_ops(gpt3(), 1, kS).forward), 7'627'861'917'696);
  EXPECT_EQ(gemm_flops(block_ops(gpt3(), 1, kS, kTp8).forward), 953'482'739'712);
}

TEST(TensorParallelOps, SizeOneIsTheUnshardedLayer) {
  // The op lists at size 1 are the layer's as before tensor parallelism (the goldens pin their
  // numbers); Megatron turns sequence parallelism off at size 1.
  TransformerDims neo = *find_transformer_preset("gpt-neo-125m");
  neo.dropout = 0.1;
  for (const auto& dims : {neo, gpt3(), llama2_70b()}) {
    for (const auto& tp : {TensorParallel{1, false}, TensorParallel{1, true}}) {
      expect_same(block_ops(dims, 2, 1024, tp), block_ops(dims, 2, 1024));
      expect_same(embedding_ops(dims, 2, 1024, tp), embedding_ops(dims, 2, 1024));
      expect_same(head_ops(dims, 2, 1024, tp), head_ops(dims, 2, 1024));
      EXPECT_EQ(block_tp_comm(dims, 2, 1024, tp).bytes(), 0);
      EXPECT_EQ(embedding_tp_comm(dims, 2, 1024, tp).bytes(), 0);
      EXPECT_EQ(head_tp_comm(dims, 2, 1024, tp).bytes(), 0);
    }
  }
  // GPT-Neo's block as it was: three autocast casts and projections, eager attention.
  EXPECT_EQ(names(block_ops(neo, 1, 1024).forward), (std::vector<std::string>{"layernorm",
                                                                              "cast q input",
                                                                              "q proj",
                                                                              "cast k input",
                                                                              "k proj",
                                                                              "cast v input",
                                                                              "v proj",
                                                                              "split heads",
                                                                              "scores q.k^T",
                                                                              "causal mask",
                                                                              "mask add",
                                                                              "softmax",
                                                                              "cast probabilities",
                                                                              "attention dropout",
                                                                              "probabilities.v",
                                                                              "merge heads",
                                                                              "out proj",
                                                                              "residual add",
                                                                              "residual dropout",
                                                                              "layernorm",
                                                                              "cast up input",
                                                                              "up proj",
                                                                              "gelu_new",
                                                                              "cast down input",
                                                                              "down proj",
                                                                              "residual add",
                                                                              "residual dropout"}));
  EXPECT_EQ(vocab_per_rank(neo, 1), 50257);
}

TEST(TensorParallelOps, TwoAllReducesForwardAndTwoBackwardWithoutSequenceParallelism) {
  const auto dims = gpt3();
  const auto ops = block_ops(dims, 1, kS, kTp8);
  const auto comm = block_tp_comm(dims, 1, kS, kTp8);
  ASSERT_EQ(comm.forward.size(), 2u);
  ASSERT_EQ(comm.backward.size(), 2u);
  for (const auto* list : {&comm.forward, &comm.backward})
    for (const auto& c : *list) {
      EXPECT_EQ(c.kind, TpCollective::all_reduce);
      EXPECT_EQ(c.bytes, kActivation); // b s h x 2 bytes = 50,331,648
      EXPECT_TRUE(c.critical_path);
    }
  // 4 x 2048 x 12288 x 2 = 201,326,592 bytes a block and micro-batch.
  EXPECT_EQ(comm.bytes(), 201'326'592);
  // g: after the out and down projections; f: the input gradients before the norms' backward.
  EXPECT_EQ(ops.forward[comm.forward[0].position - 1].name, "out proj");
  EXPECT_EQ(ops.forward[comm.forward[1].position - 1].name, "down proj");
  EXPECT_EQ(ops.backward[comm.backward[0].position].name, "layernorm backward");
  EXPECT_EQ(ops.backward[comm.backward[0].position - 1].name, "cast up input backward");
  EXPECT_EQ(comm.backward[0].beside, "up proj wgrad");
  EXPECT_EQ(ops.backward[comm.backward[1].position - 1].name, "cast q input backward");
  EXPECT_EQ(comm.backward[1].position + 1, ops.backward.size()); // before the first norm's
  EXPECT_STREQ(to_string(comm.forward[0].kind), "all_reduce");
}

TEST(TensorParallelOps, SequenceParallelismTurnsEachAllReduceIntoAReduceScatterAndAnAllGather) {
  const auto dims = gpt3();
  const auto ops = block_ops(dims, 1, kS, kSp8);
  const auto comm = block_tp_comm(dims, 1, kS, kSp8);
  int gathers = 0, scatters = 0, regathers = 0;
  for (const auto* list : {&comm.forward, &comm.backward})
    for (const auto& c : *list) {
      EXPECT_EQ(c.bytes, kActivation);
      EXPECT_NE(c.kind, TpCollective::all_reduce);
      (c.kind == TpCollective::all_gather ? gathers : scatters) += 1;
      regathers += c.where.find("again") != std::string::npos;
    }
  // Korthikanti et al.: 4 reduce-scatters and 4 all-gathers a block; Megatron's backward gathers
  // the saved input slices of the two column-parallel groups once more (2 all-gathers beside the
  // dgrads): 4 reduce-scatters and 6 all-gathers, 10 x 50,331,648 bytes.
  EXPECT_EQ(scatters, 4);
  EXPECT_EQ(gathers - regathers, 4);
  EXPECT_EQ(regathers, 2);
  EXPECT_EQ(comm.bytes(), 10 * kActivation);
  // Forward: all-gather, q/k/v ... out proj, reduce-scatter, ..., all-gather, up, ..., down,
  // reduce-scatter.
  ASSERT_EQ(comm.forward.size(), 4u);
  EXPECT_EQ(comm.forward[0].kind, TpCollective::all_gather);
  EXPECT_EQ(ops.forward[comm.forward[0].position].name, "q proj");
  EXPECT_EQ(comm.forward[1].kind, TpCollective::reduce_scatter);
  EXPECT_EQ(ops.forward[comm.forward[1].position - 1].name, "out proj");
  EXPECT_EQ(comm.forward[2].kind, TpCollective::all_gather);
  EXPECT_EQ(ops.forward[comm.forward[2].position].name, "up proj");
  EXPECT_EQ(comm.forward[3].kind, TpCollective::reduce_scatter);
  EXPECT_EQ(ops.forward[comm.forward[3].position - 1].name, "down proj");
  // Backward: the gradient gathered before the down projection's backward, the MLP input
  // gathered again before the up projection's wgrad, its gradient reduce-scattered; the same for
  // attention.
  ASSERT_EQ(comm.backward.size(), 6u);
  const std::vector<TpCollective> kinds = {
      TpCollective::all_gather, TpCollective::all_gather, TpCollective::reduce_scatter,
      TpCollective::all_gather, TpCollective::all_gather, TpCollective::reduce_scatter};
  for (std::size_t i = 0; i < kinds.size(); ++i)
    EXPECT_EQ(comm.backward[i].kind, kinds[i]) << i;
  EXPECT_EQ(ops.backward[comm.backward[0].position].name, "down proj grad accumulate");
  EXPECT_EQ(ops.backward[comm.backward[1].position].name, "up proj grad accumulate");
  EXPECT_EQ(ops.backward[comm.backward[2].position - 1].name, "up proj dgrad");
  EXPECT_EQ(ops.backward[comm.backward[3].position].name, "out proj grad accumulate");
  EXPECT_EQ(ops.backward[comm.backward[4].position].name, "v proj grad accumulate");
  EXPECT_EQ(ops.backward[comm.backward[5].position - 1].name, "q proj dgrad");
}

TEST(TensorParallelOps, EmbeddingAndHeadCollectives) {
  const auto dims = gpt3(); // learned positions
  // Vocabulary padded to 128 x 8: ceil(50257 / 1024) x 1024 = 51200, 6400 rows a rank.
  EXPECT_EQ(vocab_per_rank(dims, 8), 6400);
  EXPECT_EQ(find(embedding_ops(dims, 1, kS, kTp8).backward, "embedding grad zero").bytes,
            4 * 6400 * 12288.0);
  // Embedding: the lookup's partial rows all-reduced (b s h bf16).
  auto e = embedding_tp_comm(dims, 1, kS, kTp8);
  ASSERT_EQ(e.forward.size(), 1u);
  EXPECT_EQ(e.forward[0].kind, TpCollective::all_reduce);
  EXPECT_EQ(e.forward[0].bytes, kActivation);
  EXPECT_TRUE(e.backward.empty());
  // With sequence parallelism and learned positions Megatron still all-reduces (then adds the
  // positions and keeps the rank's slice); the gradient is gathered in backward.
  e = embedding_tp_comm(dims, 1, kS, kSp8);
  EXPECT_EQ(e.forward[0].kind, TpCollective::all_reduce);
  ASSERT_EQ(e.backward.size(), 1u);
  EXPECT_EQ(e.backward[0].kind, TpCollective::all_gather);
  // Rotary positions (Llama): a reduce-scatter.
  const auto llama = llama2_70b();
  EXPECT_EQ(embedding_tp_comm(llama, 1, kS, kSp8).forward[0].kind, TpCollective::reduce_scatter);
  EXPECT_EQ(embedding_tp_comm(llama, 1, kS, kSp8).forward[0].bytes, 2 * kS * 8192);

  // Head: logits [2048, 6400] a rank; cross-entropy's max, target logit and sum of exponentials
  // all-reduced over 2048 fp32 values (8192 bytes each); the input gradient all-reduced.
  const auto head = head_ops(dims, 1, kS, kTp8);
  EXPECT_EQ(find(head.forward, "lm head").gemm.n, 6400);
  EXPECT_EQ(find(head.forward, "logits to fp32").bytes, 6 * 2048 * 6400.0);
  auto h = head_tp_comm(dims, 1, kS, kTp8);
  ASSERT_EQ(h.forward.size(), 3u);
  for (const auto& c : h.forward) {
    EXPECT_EQ(c.kind, TpCollective::all_reduce);
    EXPECT_EQ(c.bytes, 4 * kS);
  }
  EXPECT_EQ(head.forward[h.forward[0].position - 1].name, "logits to fp32");
  EXPECT_EQ(head.forward[h.forward[1].position - 1].name, "log_softmax");
  ASSERT_EQ(h.backward.size(), 1u);
  EXPECT_EQ(h.backward[0].kind, TpCollective::all_reduce);
  EXPECT_EQ(h.backward[0].bytes, kActivation);
  EXPECT_EQ(head.backward[h.backward[0].position].name, "layernorm backward");
  // Sequence parallelism: the final norm's output all-gathered before the LM head; backward its
  // re-gather and the input gradient's reduce-scatter.
  h = head_tp_comm(dims, 1, kS, kSp8);
  ASSERT_EQ(h.forward.size(), 4u);
  EXPECT_EQ(h.forward[0].kind, TpCollective::all_gather);
  EXPECT_EQ(h.forward[0].bytes, kActivation);
  ASSERT_EQ(h.backward.size(), 2u);
  EXPECT_EQ(h.backward[0].kind, TpCollective::all_gather);
  EXPECT_EQ(h.backward[1].kind, TpCollective::reduce_scatter);
  EXPECT_EQ(h.bytes(), 3 * kActivation + 3 * 4 * kS);
}

TEST(TensorParallelOps, KeyValueHeadsShardThenReplicate) {
  const auto llama = llama2_70b(); // 8 key/value heads of 128
  // t = 8: one key/value head a rank, k and v [2048, 8192] x [8192, 128].
  EXPECT_EQ(find(block_ops(llama, 1, kS, kTp8).forward, "k proj").gemm.n, 128);
  // t = 16: fewer key/value heads than ranks; each of the 8 is replicated on 2 ranks, which
  // compute it twice: 16 x 2 x 2048 x 128 x 8192 k-projection FLOPs, twice the unsharded 2 x 2048
  // x 1024 x 8192.
  const auto k16 = find(block_ops(llama, 1, kS, {16, false}).forward, "k proj");
  EXPECT_EQ(k16.gemm.n, 128);
  EXPECT_EQ(16 * k16.flops, 2 * find(block_ops(llama, 1, kS).forward, "k proj").flops);
  EXPECT_EQ(find(block_ops(llama, 1, kS, {16, false}).forward, "q proj").gemm.n, 512);
  // Sizes that split no head group evenly are refused: 64 query heads over 3 ranks; 6 key/value
  // heads over 4 ranks (6 / 4), or over 8 (which would replicate them 8 / 6 times).
  EXPECT_THROW(block_ops(llama, 1, kS, {3, false}), std::invalid_argument);
  TransformerDims odd = llama;
  odd.d_model = 24 * 128;
  odd.n_heads = 24;
  odd.n_kv_heads = 6;
  odd.ffn_dim = 4 * 24 * 128;
  EXPECT_THROW(block_ops(odd, 1, kS, {4, false}), std::invalid_argument);
  EXPECT_THROW(block_ops(odd, 1, kS, {8, false}), std::invalid_argument);
  EXPECT_EQ(find(block_ops(odd, 1, kS, {12, false}).forward, "k proj").gemm.n, 128);
  EXPECT_THROW(block_ops(llama, 1, kS, {0, false}), std::invalid_argument);
}

TEST(TensorParallelOps, SequenceParallelismShrinksTheReplicatedKernelsByT) {
  auto dims = gpt3();
  dims.dropout = 0.1;
  const auto tp = block_ops(dims, 1, kS, kTp8);
  const auto sp = block_ops(dims, 1, kS, kSp8);
  // Layer norm: 8 bytes an element over [s, b, h] = 201,326,592 bytes on every rank; with
  // sequence parallelism over [s / 8, b, h]: 25,165,824.
  EXPECT_EQ(find(tp.forward, "layernorm").bytes, 8 * kE);
  EXPECT_EQ(find(sp.forward, "layernorm").bytes, 8 * kE / 8);
  EXPECT_EQ(find(tp.forward, "residual add").bytes, 10 * kE);
  EXPECT_EQ(find(sp.forward, "residual add").bytes, 10 * kE / 8);
  EXPECT_EQ(find(tp.forward, "residual dropout").bytes, 5 * kE);
  EXPECT_EQ(find(sp.forward, "residual dropout").bytes, 5 * kE / 8);
  EXPECT_EQ(find(sp.backward, "layernorm backward").bytes, 2.5 * 8 * kE / 8);
  // The attention core is the rank's heads either way.
  EXPECT_EQ(find(tp.forward, "softmax").bytes, find(sp.forward, "softmax").bytes);
  EXPECT_EQ(find(sp.forward, "softmax").bytes, 8 * kA / 8);
}

TEST(TensorParallelOps, ActivationsScaleAsKorthikantiTable2) {
  // Korthikanti et al. 2022, Table 2, per layer (16-bit activations, 1-byte dropout masks):
  // TP: s b h (10 + 24 / t + 5 a s / (h t)); TP + SP: s b h / t (34 + 5 a s / h). The op lists
  // are PyTorch eager under autocast and keep more: fp32 norm inputs (4 + 4 bytes an element, not
  // 2 + 2), the norm output cast to bf16 once per q/k/v projection (3 x 2, not 2) and fp32
  // softmax output (4 + 2 + 1 bytes a score, not 2 + 2 + 1). The sharded hidden-sized tensors
  // are the paper's 24 (q, k, v 6, out-proj input 2, MLP 16). With E = s b h and A = a s^2 b:
  //   t = 1:       (8 + 6 + 2 + 2) E + 24 E + 7 A = 42 E + 7 A = 3,875,536,896 bytes
  //   t = 8:       18 E + 24 E / 8 + 7 A / 8 = 21 E + 0.875 A  =   880,803,840 bytes (0.2273 x)
  //   t = 8, SP:   the norm output cast once, on the slice: (8 + 2 + 2 + 2 + 24) E / 8 + 7 A / 8
  //                = 38 E / 8 + 7 A / 8                        =   471,859,200 bytes (0.1218 x)
  // The paper's: 34 E + 5 A = 2,868,903,936; t = 8: 13 E + 5 A / 8 = 578,813,952 (0.2018 x);
  // SP: / 8 (0.125 x).
  auto dims = gpt3();
  dims.dropout = 0.1;
  const double one = block_ops(dims, 1, kS).saved_bytes;
  const double tp = block_ops(dims, 1, kS, kTp8).saved_bytes;
  const double sp = block_ops(dims, 1, kS, kSp8).saved_bytes;
  EXPECT_EQ(one, 42 * kE + 7 * kA);
  EXPECT_EQ(one, 3'875'536'896);
  EXPECT_EQ(tp, 21 * kE + 7 * kA / 8);
  EXPECT_EQ(tp, 880'803'840);
  EXPECT_EQ(sp, 471'859'200);
  EXPECT_NEAR(tp / one, 0.227273, 1e-6);
  EXPECT_NEAR(sp / one, 0.121753, 1e-6);
  // Sharded parts scale by 1 / t, replicated parts stay: t = 2 and t = 4 on the same line.
  const double sharded = 24 * kE + 7 * kA, replicated = 18 * kE;
  for (int t : {2, 4, 8})
    EXPECT_EQ(block_ops(dims, 1, kS, {t, false}).saved_bytes, replicated + sharded / t);
}

TEST(TensorParallelOps, SmallerGemmsRunLessEfficientlyOnAnH100) {
  // A TP8 rank's block takes more than an eighth of the unsharded block's roofline time on an
  // H100 SXM; measured (forward + backward, b = 1, s = 2048, eager attention):
  //   GPT-3 175B:    TP8 1.2487 x 1/8 (the GEMMs alone, forward: 1.0973), TP8 + SP 1.0295 x
  //   Llama-2 70B:   TP8 1.4141 x 1/8 (the GEMMs alone, forward: 1.2147), TP8 + SP 1.0546 x
  // Without SP the replicated norms, casts and residual adds add to the GEMMs' loss; Llama's
  // single key/value head a rank (n = 128) loses most.
  const GpuSpec h100 = *find_gpu_preset("h100-sxm");
  struct Case {
    const char* name;
    TransformerDims dims;
    double tp, sp, gemms;
  };
  for (const auto& c : {Case{"GPT-3 175B", gpt3(), 1.2487, 1.0295, 1.0973},
                        Case{"Llama-2 70B", llama2_70b(), 1.4141, 1.0546, 1.2147}}) {
    const double one = seconds(h100, block_ops(c.dims, 1, kS));
    const double tp = 8 * seconds(h100, block_ops(c.dims, 1, kS, kTp8)) / one;
    const double sp = 8 * seconds(h100, block_ops(c.dims, 1, kS, kSp8)) / one;
    double g1 = 0, g8 = 0;
    for (const auto& op : block_ops(c.dims, 1, kS).forward)
      g1 += op.gemm.m > 0 ? kernel_time_s(h100, op) : 0;
    for (const auto& op : block_ops(c.dims, 1, kS, kTp8).forward)
      g8 += op.gemm.m > 0 ? kernel_time_s(h100, op) : 0;
    std::printf("%s on h100-sxm: TP8 rank x 8 / unsharded = %.4f (GEMMs forward %.4f), "
                "TP8+SP %.4f\n",
                c.name, tp, 8 * g8 / g1, sp);
    EXPECT_GT(tp, 1.0) << c.name;
    EXPECT_GT(sp, 1.0) << c.name;
    EXPECT_GT(8 * g8 / g1, 1.0) << c.name;
    EXPECT_NEAR(tp, c.tp, 1e-4) << c.name;
    EXPECT_NEAR(sp, c.sp, 1e-4) << c.name;
    EXPECT_NEAR(8 * g8 / g1, c.gemms, 1e-4) << c.name;
  }
}

TEST(TensorParallelOps, ApplyRooflineSetsATensorParallelRanksLayers) {
  const GpuSpec h100 = *find_gpu_preset("h100-sxm");
  const auto dims = gpt3();
  auto m = transformer_model("gpt3", dims, 2048);
  auto whole = m;
  apply_roofline(m, dims, h100, 2, kS, kSp8);
  apply_roofline(whole, dims, h100, 2, kS);
  LayerSpec block, embedding, head;
  set_roofline_costs(block, block_ops(dims, 2, kS, kSp8), h100, 2);
  set_roofline_costs(embedding, embedding_ops(dims, 2, kS, kSp8), h100, 2);
  set_roofline_costs(head, head_ops(dims, 2, kS, kSp8), h100, 2);
  EXPECT_EQ(m.layers[1].fwd_model_time_per_sample_s, block.fwd_model_time_per_sample_s);
  EXPECT_EQ(m.layers[1].bwd_model_time_per_sample_s, block.bwd_model_time_per_sample_s);
  EXPECT_EQ(m.layers[1].activation_bytes_per_sample, block.activation_bytes_per_sample);
  EXPECT_EQ(m.layers.front().fwd_model_time_per_sample_s, embedding.fwd_model_time_per_sample_s);
  EXPECT_EQ(m.layers.back().bwd_model_time_per_sample_s, head.bwd_model_time_per_sample_s);
  // Parameters and FLOPs stay the whole layer's.
  EXPECT_EQ(m.layers[1].params, whole.layers[1].params);
  EXPECT_EQ(m.layers[1].fwd_flops_per_sample, whole.layers[1].fwd_flops_per_sample);
  EXPECT_LT(m.layers[1].activation_bytes_per_sample, whole.layers[1].activation_bytes_per_sample);
}

} // namespace
} // namespace overlapsim
