// The trace label of each op (runtime/op_label.h), which both runtimes record and validate joins
// a prediction and a measurement by.
#include "runtime/op_label.h"
#include "runtime/replicator_use.h"

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

// Both runtimes name a replicator phase alike (the simulator where the profile priced it as a
// whole), and its price is found by what the cost depends on, not by the piece.
TEST(OpLabel, ReplicatorPhasesAndTheirPriceNames) {
  ReplicatorPhase op;
  op.config.kind = ReplicatorKind::demo;
  op.config.chunk = 16;
  op.config.top_k = 8;
  op.group_size = 4;
  op.piece = 3;
  EXPECT_EQ(op_label(op).name, "demo encode piece 3");
  EXPECT_EQ(op_label(op).category, OpCategory::compress);
  EXPECT_EQ(price_name(replicator_use(op)),
            "demo encode (chunk 16, top-k 8, fp32 values, 4 ranks)");
  op.phase = ReplicatorPhase::Kind::decode;
  EXPECT_EQ(op_label(op).name, "demo decode + update piece 3");
  EXPECT_EQ(op_label(op).category, OpCategory::optimizer);
  op.config.value_bytes = 2;
  op.config.sign = false;
  EXPECT_EQ(price_name(replicator_use(op)),
            "demo decode + update (chunk 16, top-k 8, 16-bit values, 4 ranks, no sign)");
  op.config.kind = ReplicatorKind::random;
  op.config.compression = 0.125;
  op.config.value_bytes = 4;
  op.config.sign = true;
  EXPECT_EQ(price_name(replicator_use(op)),
            "random decode + update (compression 0.125, fp32 values, 4 ranks)");
  op.config.kind = ReplicatorKind::diloco;
  EXPECT_EQ(price_name(replicator_use(op)), "diloco decode + update (4 ranks)");
  op.exchanged = false; // the selection's knobs no longer matter
  op.config.kind = ReplicatorKind::demo;
  op.config.chunk = 64;
  EXPECT_EQ(price_name(replicator_use(op)), "demo decode + update (no exchange)");
  // DeMo's price counts whole blocks (the last zero-padded), the others their elements.
  EXPECT_EQ(priced_elements(op.config, 4097), 8192); // chunk 64: blocks of 4,096
  EXPECT_EQ(priced_elements(op.config, 4096), 4096);
  ReplicatorConfig random;
  random.kind = ReplicatorKind::random;
  EXPECT_EQ(priced_elements(random, 4097), 4097);
  // The piece and the step are not part of a use.
  ReplicatorPhase other = op;
  other.piece = 0;
  other.step = 7;
  EXPECT_EQ(replicator_use(other), replicator_use(op));
}

} // namespace
} // namespace overlapsim
