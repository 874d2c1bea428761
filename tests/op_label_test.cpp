// The trace label of each op (runtime/op_label.h), which both runtimes record and validate joins
// a prediction and a measurement by.
#include "runtime/op_label.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

TEST(OpLabel, LayerRangesNameTheirFirstAndLastLayer) {
  hw::ModelSpec model;
  for (const char* name : {"embedding", "block0", "block1", "head"}) {
    hw::LayerSpec layer;
    layer.name = name;
    model.layers.push_back(layer);
  }
  const OpLabel fwd = op_label(model, {1, 2}, LayerPass::forward);
  EXPECT_EQ(fwd.category, OpCategory::forward);
  EXPECT_EQ(fwd.name, "fwd block0");
  const OpLabel bwd = op_label(model, {0, 4}, LayerPass::backward);
  EXPECT_EQ(bwd.category, OpCategory::backward);
  EXPECT_EQ(bwd.name, "bwd embedding..head");
  const OpLabel again = op_label(model, {1, 3}, LayerPass::recompute);
  EXPECT_EQ(again.category, OpCategory::forward);
  EXPECT_EQ(again.name, "recompute fwd block0..block1");
}

TEST(OpLabel, StepsCopiesAndCollectives) {
  OptimizerStep step;
  EXPECT_EQ(op_label(step).name, "optimizer step");
  step.commit = false;
  EXPECT_EQ(op_label(step).name, "optimizer estimate");
  EXPECT_EQ(op_label(step).category, OpCategory::optimizer);
  EXPECT_EQ(op_label(OuterStep{}).name, "outer step");
  EXPECT_EQ(op_label(OuterStep{}).category, OpCategory::optimizer);
  for (const auto& [op, name] : {std::pair{MemoryOp::copy, "copy"},
                                 {MemoryOp::accumulate, "accumulate"},
                                 {MemoryOp::fill, "fill"},
                                 {MemoryOp::reload_master, "reload master"}}) {
    EXPECT_EQ(op_label(op).name, name);
    EXPECT_EQ(op_label(op).category, OpCategory::copy);
  }
  CollectiveCall call;
  call.op = CollectiveOp::reduce_scatter;
  EXPECT_EQ(op_label(call).name, "reduce-scatter");
  EXPECT_EQ(op_label(call).category, OpCategory::comm);
  call.name = "reduce-scatter bucket 2";
  EXPECT_EQ(op_label(call).name, "reduce-scatter bucket 2");
}

} // namespace
} // namespace overlapsim
