// The real backend's math, in one process: the models have the simulator's parameter counts, the
// optimizers match hand calculations, an estimate step leaves the state alone, and the layer-wise
// backward gives the same gradients as one autograd pass.
#include "algorithms/model_state.h"
#include "algorithms/replicator_indices.h"
#include "scenario/loader.h"
#include "validate/dct.h"
#include "validate/optimizer_store.h"
#include "validate/real_model.h"
#include "validate/real_optimizer.h"
#include "validate/real_replicator.h"
#include "validate/shard_layout.h"

#include <gtest/gtest.h>
#include <thread>

#include <cmath>
#include <numbers>

namespace overlapsim::real {
namespace {

scenario::Scenario scenario(const std::string& model) {
  return scenario::load_scenario_text(
      "name: t\ncluster: {nodes: 1, gpus_per_node: 1, gpu: a100-80gb}\nmodel: " + model +
          "\ntraining: {micro_batch: 4, seq_len: 16, steps: 2}\nalgorithms: [ddp]\n",
      "t.yaml");
}

TEST(RealModel, ParameterCountsMatchTheSimulator) {
  for (const char* m : {"{preset: mlp, width: 64, depth: 3}",
                        "{preset: gpt-tiny, vocab: 97, d_model: 32, n_layers: 2, n_heads: 4}"}) {
    const auto s = scenario(m);
    RealModel model(s);
    EXPECT_EQ(model.param_count(), param_layout(s.model.spec).total()) << m;
    EXPECT_EQ(model.layers(), static_cast<int>(s.model.spec.layers.size())) << m;
  }
  // GPT-2 block: 12 d^2 + 13 d.
  const auto s = scenario("{preset: gpt-tiny, vocab: 97, d_model: 32, n_layers: 2, n_heads: 4}");
  EXPECT_EQ(s.model.spec.layers[1].params, 12 * 32 * 32 + 13 * 32);
}

TEST(RealModel, RejectsModelsWithoutARealImplementation) {
  EXPECT_THROW(RealModel(scenario("{preset: gpt-neo-125m}")), std::runtime_error);
}

// Backward layer by layer into a flat gradient buffer equals one autograd pass over the whole
// model (the tied GPT head included).
TEST(RealModel, LayerwiseBackwardEqualsWholeModelBackward) {
  const auto s = scenario("{preset: gpt-tiny, vocab: 97, d_model: 32, n_layers: 2, n_heads: 4}");
  RealModel model(s);
  const Dataset data(s, 64);
  const auto batch = data.batch(0, 4);
  auto params = torch::zeros({model.param_count()});
  model.init_params(params, 5);
  auto grads = torch::zeros({model.param_count()});
  model.bind_params(params);
  model.bind_grads(grads);
  const int L = model.layers(); // embedding, 2 blocks, head
  ASSERT_EQ(L, 4);
  std::vector<torch::Tensor> in(L), out(L);
  for (int l = 0; l < L; ++l) {
    in[l] = l == 0 ? batch.input : out[l - 1].detach().requires_grad_(true);
    out[l] = model.run_layer(l, in[l], batch);
  }
  for (int l = L - 1; l >= 0; --l) {
    if (l == L - 1)
      torch::autograd::backward({out[l]});
    else
      torch::autograd::backward({out[l]}, {in[l + 1].grad()});
  }
  // Reference: one graph through all layers, gradients into a second buffer.
  auto grads2 = torch::zeros({model.param_count()});
  model.bind_params(params);
  model.bind_grads(grads2);
  auto x = batch.input;
  for (int l = 0; l < L; ++l)
    x = model.run_layer(l, x, batch);
  torch::autograd::backward({x});
  EXPECT_GT(grads.abs().sum().item<double>(), 0);
  EXPECT_TRUE(torch::allclose(grads, grads2, 1e-5, 1e-6));
}

TEST(RealOptimizer, AdamWFirstStepMatchesHandCalculation) {
  OptimizerConfig c;
  c.lr = 0.1;
  c.weight_decay = 0.01;
  OptimizerSlots slots;
  slots.master = torch::tensor({1.0f, -2.0f});
  auto out = torch::zeros({2});
  apply_optimizer(c, slots, torch::tensor({0.5f, -0.25f}), out, true);
  // Step 1: m^ = g, v^ = g^2, so the update is lr (g / (|g| + eps) + wd p).
  EXPECT_NEAR(out[0].item<double>(), 1.0 - 0.1 * (1.0 + 0.01 * 1.0), 1e-6);
  EXPECT_NEAR(out[1].item<double>(), -2.0 - 0.1 * (-1.0 + 0.01 * -2.0), 1e-6);
  EXPECT_EQ(slots.steps, 1);
  EXPECT_TRUE(torch::allclose(slots.master, out));
}

TEST(RealOptimizer, EstimateLeavesMasterAndMomentsUnchanged) {
  OptimizerConfig c;
  c.kind = scenario::Optimizer::sgd_momentum;
  c.lr = 0.5;
  OptimizerSlots slots;
  slots.master = torch::tensor({1.0f});
  auto out = torch::zeros({1});
  apply_optimizer(c, slots, torch::tensor({2.0f}), out, false); // ACCO's estimate
  EXPECT_NEAR(out.item<double>(), 0.0, 1e-6);                   // 1 - 0.5 * 2
  EXPECT_NEAR(slots.master.item<double>(), 1.0, 1e-6);
  EXPECT_FALSE(slots.m.defined());
  EXPECT_EQ(slots.steps, 0);
  apply_optimizer(c, slots, torch::tensor({2.0f}), out, true);
  apply_optimizer(c, slots, torch::tensor({2.0f}), out, true);
  // buf = 2, then 0.9 * 2 + 2 = 3.8: p = 1 - 0.5 * 2 - 0.5 * 3.8.
  EXPECT_NEAR(out.item<double>(), 1.0 - 1.0 - 1.9, 1e-6);
}

// The estimate (ACCO's theta~, written to another buffer) is the step a commit would take, for
// every optimizer, at a later step with moments in play; only the commit moves the state.
TEST(RealOptimizer, EstimateIsTheStepACommitTakes) {
  for (const auto kind :
       {scenario::Optimizer::adamw, scenario::Optimizer::sgd, scenario::Optimizer::sgd_momentum}) {
    OptimizerConfig c;
    c.kind = kind;
    c.lr = 0.05;
    c.weight_decay = 0.1;
    OptimizerSlots slots;
    slots.master = torch::tensor({1.0f, -2.0f, 0.5f});
    auto params = slots.master.clone();
    apply_optimizer(c, slots, torch::tensor({0.3f, -0.1f, 2.0f}), params, true);
    const auto grad = torch::tensor({-0.7f, 0.4f, 1.5f});
    const auto master = slots.master.clone();
    auto estimate = torch::zeros({3});
    apply_optimizer(c, slots, grad, estimate, false);
    EXPECT_TRUE(torch::equal(slots.master, master)) << static_cast<int>(kind);
    EXPECT_EQ(slots.steps, 1);
    apply_optimizer(c, slots, grad, params, true);
    EXPECT_TRUE(torch::allclose(estimate, params, 1e-6, 1e-7))
        << static_cast<int>(kind) << ": " << estimate << " vs " << params;
  }
}

// An element keeps its master and moments whatever slice steps it (PLSGD-ENP steps a layer alone at
// one local step and inside a run of layers at the next): stepping [0, 2) then [1, 3) then [0, 3)
// with AdamW gives each element what stepping it alone with its own gradients gives.
TEST(OptimizerStore, StateBelongsToElementsNotSlices) {
  OptimizerConfig c;
  c.lr = 0.1;
  c.weight_decay = 0.01;
  OptimizerStore store(c);
  auto params = torch::tensor({1.0f, -2.0f, 0.5f});
  const auto g1 = torch::tensor({0.5f, -0.25f, 0.0f}), g2 = torch::tensor({0.0f, 0.3f, -1.0f}),
             g3 = torch::tensor({-0.2f, 0.1f, 0.7f});
  store.step(Slice{0, 0, 2}, params.narrow(0, 0, 2), g1.narrow(0, 0, 2), params.narrow(0, 0, 2),
             true);
  store.step(Slice{0, 1, 2}, params.narrow(0, 1, 2), g2.narrow(0, 1, 2), params.narrow(0, 1, 2),
             true);
  store.step(Slice{0, 0, 3}, params, g3, params, true);
  // Element by element: 0 takes g1, g3; 1 takes g1, g2, g3; 2 takes g2, g3.
  const std::vector<std::vector<float>> grads = {
      {0.5f, -0.2f}, {-0.25f, 0.3f, 0.1f}, {-1.0f, 0.7f}};
  const std::vector<float> start = {1.0f, -2.0f, 0.5f};
  for (std::size_t i = 0; i < 3; ++i) {
    OptimizerSlots alone;
    alone.master = torch::tensor({start[i]});
    auto out = torch::zeros({1});
    for (float g : grads[i])
      apply_optimizer(c, alone, torch::tensor({g}), out, true);
    EXPECT_NEAR(params[static_cast<std::int64_t>(i)].item<double>(), out.item<double>(), 1e-7)
        << "element " << i;
  }
}

// Local SGD's average written into the parameters must reach the master copy: after a reload the
// next step starts from the reloaded values (SGD: p - lr g), without it from the old master.
TEST(OptimizerStore, ReloadedMasterIsWhereTheNextStepStarts) {
  OptimizerConfig c;
  c.kind = scenario::Optimizer::sgd;
  c.lr = 0.5;
  OptimizerStore store(c);
  auto params = torch::tensor({1.0f, 2.0f});
  store.step(Slice{3, 0, 2}, params, torch::tensor({1.0f, 1.0f}), params, true); // 0.5, 1.5
  params.copy_(torch::tensor({0.25f, 4.0f})); // e.g. the workers' average
  store.reload(Slice{3, 1, 1}, params.narrow(0, 1, 1));
  EXPECT_NEAR(store.master(Slice{3, 0, 2})[1].item<double>(), 4.0, 1e-7);
  store.step(Slice{3, 0, 2}, params, torch::tensor({1.0f, 1.0f}), params, true);
  EXPECT_NEAR(params[0].item<double>(), 0.5 - 0.5, 1e-7); // not reloaded: from its master 0.5
  EXPECT_NEAR(params[1].item<double>(), 4.0 - 0.5, 1e-7); // reloaded: from 4
}

// CDP steps its own stage on the compute stream while the communication stream steps its
// neighbour's: two threads stepping disjoint slices of one state buffer, the second slice past the
// first (its first steps grow the buffer's tensors under the other's arithmetic), give what the
// same steps one after the other give, element by element, and the step counts stay each
// element's (AdamW's bias correction: a wrong count moves the result).
TEST(OptimizerStore, StepsOfDisjointSlicesOnTwoThreadsMatchOneAfterTheOther) {
  OptimizerConfig c;
  c.lr = 0.01;
  c.weight_decay = 0.01;
  constexpr std::int64_t kHalf = 20000;
  constexpr int kSteps = 30;
  const auto grads = torch::linspace(-1.0, 1.0, 2 * kHalf);
  const auto start = torch::linspace(2.0, -2.0, 2 * kHalf);
  auto run = [&](bool threads) {
    OptimizerStore store(c);
    auto params = start.clone();
    auto half = [&](std::int64_t first) {
      for (int k = 0; k < kSteps; ++k) {
        auto p = params.narrow(0, first, kHalf);
        store.step(Slice{5, first, kHalf}, p, grads.narrow(0, first, kHalf) * (k + 1), p, true);
      }
    };
    if (threads) {
      std::thread other([&] { half(kHalf); });
      half(0);
      other.join();
    } else {
      half(0);
      half(kHalf);
    }
    return params;
  };
  const auto together = run(true), apart = run(false);
  EXPECT_TRUE(torch::equal(together, apart));
  EXPECT_FALSE(torch::equal(together, start)); // the steps moved them
}

// DiLoCo's outer step by hand over two periods (lr 0.7, mu 0.9): Delta = 1 - 0.8 = 0.2,
// momentum 0.2, anchor 1 - 0.7 (0.2 + 0.9 x 0.2) = 0.734; then Delta = 0.734 - 0.634 = 0.1,
// momentum 0.9 x 0.2 + 0.1 = 0.28, anchor 0.734 - 0.7 (0.1 + 0.9 x 0.28) = 0.4876. LibTorch's
// own SGD with Nesterov momentum on the pseudo-gradient takes the same steps.
TEST(RealOptimizer, OuterStepIsNesterovOnThePseudoGradient) {
  auto anchor = torch::tensor({1.0}, torch::kFloat64),
       momentum = torch::zeros({1}, torch::kFloat64);
  auto params = torch::tensor({0.8}, torch::kFloat64);
  apply_outer_step(params, anchor, momentum, 0.7, 0.9);
  EXPECT_NEAR(anchor.item<double>(), 0.734, 1e-12);
  EXPECT_NEAR(params.item<double>(), 0.734, 1e-12);
  EXPECT_NEAR(momentum.item<double>(), 0.2, 1e-12);
  params.sub_(0.1);
  apply_outer_step(params, anchor, momentum, 0.7, 0.9);
  EXPECT_NEAR(momentum.item<double>(), 0.28, 1e-12);
  EXPECT_NEAR(params.item<double>(), 0.4876, 1e-12);

  auto theta = torch::tensor({1.0}, torch::kFloat64).requires_grad_(true);
  torch::optim::SGD sgd({theta}, torch::optim::SGDOptions(0.7).momentum(0.9).nesterov(true));
  for (double delta : {0.2, 0.1}) {
    theta.mutable_grad() = torch::tensor({delta}, torch::kFloat64);
    sgd.step();
  }
  EXPECT_NEAR(theta.item<double>(), 0.4876, 1e-12);
}

// Streaming DiLoCo's merge by hand (Douillard et al. 2025, Sec. 2.3): alpha 0.5 of local 0.6 and
// global 0.734 is 0.667; alpha 0.25: 0.25 x 0.6 + 0.75 x 0.734 = 0.7005; alpha 0 is the global
// value exactly, even next to a local value that would round.
TEST(RealOptimizer, StreamingMergeMixesLocalAndGlobal) {
  auto global = torch::tensor({0.734, 0.1}, torch::kFloat64);
  auto local = torch::tensor({0.6, 0.3}, torch::kFloat64);
  merge_fragment(local, global, 0.5);
  EXPECT_NEAR(local[0].item<double>(), 0.667, 1e-12);
  EXPECT_NEAR(local[1].item<double>(), 0.2, 1e-12);
  local = torch::tensor({0.6}, torch::kFloat64);
  merge_fragment(local, global.narrow(0, 0, 1), 0.25);
  EXPECT_NEAR(local.item<double>(), 0.7005, 1e-12);
  auto f = torch::tensor({1.0f / 3.0f});
  const auto g = torch::tensor({0.1f});
  merge_fragment(f, g, 0.0);
  EXPECT_EQ(f.item<float>(), 0.1f);
}

// NCCL's equal shards end to end, from and to shard()'s layout: 10 elements in 4 shards are
// [0,3) [3,6) [6,8) [8,10); padded to 3 each, the last two shards get a zero.
TEST(ShardLayout, PadsUnequalShardsAndUnpadsThem) {
  const auto data = torch::arange(1, 11, torch::kFloat);
  EXPECT_EQ(padded_shard(10, 4), 3);
  const auto padded = pad_shards(data, 4);
  EXPECT_TRUE(torch::equal(
      padded, torch::tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f, 7.f, 8.f, 0.f, 9.f, 10.f, 0.f})));
  auto back = torch::zeros({10});
  unpad_shards(padded, back, 4);
  EXPECT_TRUE(torch::equal(back, data));
  // Equal shards need no copy at all.
  const auto even = torch::arange(8, torch::kFloat);
  EXPECT_TRUE(pad_shards(even, 4).is_same(even));
}

// The chunked DCT-II is the real transform: C[1][0] = sqrt(2/4) cos(pi/8) by hand; C is
// orthonormal; a constant block has only a DC coefficient (chunk x value for the 2-D orthonormal
// transform); a linear ramp along rows has its energy in the first row of coefficients; the
// inverse restores any input.
TEST(Dct, ChunkedDctIiByHand) {
  const auto c = dct_matrix(4, torch::TensorOptions().dtype(torch::kFloat64));
  EXPECT_NEAR(c[0][0].item<double>(), 0.5, 1e-12);
  EXPECT_NEAR(c[1][0].item<double>(), std::sqrt(0.5) * std::cos(std::numbers::pi / 8), 1e-12);
  EXPECT_TRUE(torch::allclose(torch::matmul(c, c.t()), torch::eye(4, torch::kFloat64)));
  const auto ones = torch::full({16}, 3.0, torch::kFloat64);
  const auto y = dct_blocks(ones, 4);
  EXPECT_NEAR(y[0][0].item<double>(), 12.0, 1e-12); // 4 x 3
  EXPECT_NEAR(y.abs().sum().item<double>(), 12.0, 1e-9);
  // 20 elements: two blocks, the second zero-padded; the round trip restores them.
  const auto x = torch::randn({20}, torch::kFloat64);
  EXPECT_TRUE(torch::allclose(idct_blocks(dct_blocks(x, 4), 4, 20), x, 1e-12, 1e-12));
  // Top-2 of each block by magnitude, and the scatter-mean of two workers' selections: a
  // coefficient both sent is their mean, one sent by one worker is its value.
  const auto sel = top_k_blocks(torch::tensor({{1.0, -5.0, 3.0, 0.5}}, torch::kFloat64), 2);
  const auto idx = std::get<0>(sel.indices.sort(1));
  EXPECT_EQ(idx[0][0].item<std::int64_t>(), 1);
  EXPECT_EQ(idx[0][1].item<std::int64_t>(), 2);
  const auto mean = scatter_mean(torch::tensor({{0, 1}, {1, 3}}, torch::kInt64),
                                 torch::tensor({{2.0, 4.0}, {6.0, 8.0}}, torch::kFloat64), 1, 2);
  EXPECT_TRUE(torch::allclose(mean, torch::tensor({{2.0, 5.0, 0.0, 8.0}}, torch::kFloat64)));
}

// One DeMo step on one worker's piece, by hand: with every coefficient kept the momentum is
// emptied (what is sent leaves it) and the decode of the own selection is the momentum itself,
// so without sign theta moves by -lr s g; with sign by -lr sign(g).
TEST(RealReplicator, DemoSendingEverythingAppliesTheGradient) {
  ReplicatorPhase op;
  op.config.kind = ReplicatorKind::demo;
  op.config.chunk = 2;
  op.config.top_k = 4;
  op.config.sign = false;
  op.grad_scale = 0.5;
  op.lr = 0.1;
  op.params = Slice{0, 0, 6};
  const auto g = torch::tensor({2.0, -4.0, 6.0, 8.0, -2.0, 1.0});
  ReplicatorTensors t{g.clone(), torch::zeros({6}), torch::zeros({6}), torch::zeros({8}),
                      torch::zeros({8})};
  EXPECT_FALSE(run_replicator_phase(op, t).has_value());
  EXPECT_LT(t.momentum.abs().max().item<double>(), 1e-6);
  op.phase = ReplicatorPhase::Kind::decode;
  run_replicator_phase(op, t);
  EXPECT_TRUE(torch::allclose(t.params, -0.1 * 0.5 * g, 1e-5, 1e-6));
  // Random at 1/2 with sign: half the elements move by -lr sign(s g), the rest keep their
  // momentum (decay 0.999 x 0 + s g) for later steps.
  ReplicatorPhase r = op;
  r.phase = ReplicatorPhase::Kind::encode;
  r.config.kind = ReplicatorKind::random;
  r.config.compression = 0.5;
  r.config.sign = true;
  ReplicatorTensors u{g.clone(), torch::zeros({6}), torch::zeros({6}), torch::zeros({3}), {}};
  // The encode reports the digest of the seeded indices it sent; DeMo's own top-k has none.
  EXPECT_EQ(run_replicator_phase(r, u),
            indices_digest(replicator_indices(r.config, r.step, r.piece, 6)));
  r.phase = ReplicatorPhase::Kind::decode;
  EXPECT_FALSE(run_replicator_phase(r, u).has_value());
  EXPECT_NEAR(u.params.abs().sum().item<double>(), 3 * 0.1, 1e-6);
  EXPECT_NEAR(u.momentum.abs().sum().item<double>() + (u.values.abs().sum() * 1).item<double>(),
              0.5 * g.abs().sum().item<double>(), 1e-5);
}

} // namespace
} // namespace overlapsim::real
