// Optimizer state sizes (ACCO Table 1's K) and DDP's gradient buckets.
#include "algorithms/model_state.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

TEST(OptimizerState, BytesPerParameter) {
  // AdamW in bf16: fp32 master (4) + m (4) + v (4) = 12 = K of ACCO Table 1.
  EXPECT_EQ(optimizer_state_bytes_per_param(scenario::Optimizer::adamw, scenario::Dtype::bf16), 12);
  // fp32 training keeps no master copy: m + v = 8.
  EXPECT_EQ(optimizer_state_bytes_per_param(scenario::Optimizer::adamw, scenario::Dtype::fp32), 8);
  EXPECT_EQ(
      optimizer_state_bytes_per_param(scenario::Optimizer::sgd_momentum, scenario::Dtype::bf16), 8);
  EXPECT_EQ(optimizer_state_bytes_per_param(scenario::Optimizer::sgd, scenario::Dtype::fp32), 0);
  // AdamW bf16 step: read grad 2 + read/write state 2 x 12 + write param 2 = 28 bytes.
  EXPECT_EQ(optimizer_bytes_touched_per_param(scenario::Optimizer::adamw, scenario::Dtype::bf16),
            28);
  // SGD fp32: read grad 4 + read and write the parameter in place 8 = 12 bytes.
  EXPECT_EQ(optimizer_bytes_touched_per_param(scenario::Optimizer::sgd, scenario::Dtype::fp32), 12);
}

TEST(Shards, CoverTheBufferContiguously) {
  // 10 elements over 4 parts: 3, 3, 2, 2.
  EXPECT_EQ(shard(0, 10, 0, 4).count, 3);
  EXPECT_EQ(shard(0, 10, 1, 4).offset, 3);
  EXPECT_EQ(shard(0, 10, 2, 4).offset, 6);
  EXPECT_EQ(shard(0, 10, 3, 4).count, 2);
  EXPECT_EQ(shard(0, 10, 3, 4).offset, 8);
}

hw::ModelSpec model_of(std::vector<double> params) {
  hw::ModelSpec m;
  for (double p : params)
    m.layers.push_back(hw::LayerSpec{"l", p, 1, 2, 0, 0, 0});
  return m;
}

TEST(Buckets, ReverseOrderClosingAtTheCap) {
  // Layers of 4, 4, 4, 4 elements (2 bytes each), cap 16 bytes = 8 elements: buckets of the last
  // two layers, then the first two; each ready after its lowest layer's backward.
  const auto layout = param_layout(model_of({4, 4, 4, 4}));
  const auto b = make_buckets(layout, 7, 2.0, 16);
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].grads.offset, 8);
  EXPECT_EQ(b[0].grads.count, 8);
  EXPECT_EQ(b[0].ready_after_layer, 2);
  EXPECT_EQ(b[1].grads.offset, 0);
  EXPECT_EQ(b[1].ready_after_layer, 0);
  EXPECT_EQ(b[1].grads.buffer, 7);
}

TEST(Buckets, LargeLayerIsSplitAndSmallOnesGrouped) {
  // Layers 2, 20, 3 elements, cap 8: [l2: 3] then l1 alone in 3 parts (7, 7, 6 from the output
  // side), then [l0: 2].
  const auto layout = param_layout(model_of({2, 20, 3}));
  const auto b = make_buckets(layout, 0, 1.0, 8);
  ASSERT_EQ(b.size(), 5u);
  EXPECT_EQ(b[0].grads.offset, 22);
  EXPECT_EQ(b[0].grads.count, 3);
  std::int64_t covered = 0;
  for (const auto& bucket : b)
    covered += bucket.grads.count;
  EXPECT_EQ(covered, 25);
  EXPECT_EQ(b[1].ready_after_layer, 1);
  EXPECT_EQ(b[1].grads.offset + b[1].grads.count, 22); // output side of l1 first
  EXPECT_EQ(b[3].ready_after_layer, 1);
  EXPECT_EQ(b[4].grads.offset, 0);
  EXPECT_EQ(b[4].ready_after_layer, 0);
}

} // namespace
} // namespace overlapsim
