// parallel::ParallelLayout (issue 65): rank coordinates and groups under each order, and the
// stage and chunk of every layer, checked by hand.
#include "parallel/layout.h"
#include "scenario/loader.h"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace overlapsim::parallel {
namespace {

using scenario::ParallelAxis;
using scenario::ParallelismSpec;

// "embedding", `blocks` blocks of 10 parameters each, "head": layer l has 10 parameters, the
// embedding 1000, the head 7.
hw::ModelSpec toy_transformer(int blocks) {
  hw::ModelSpec m;
  m.layers.push_back({.name = "embedding", .params = 1000});
  for (int i = 0; i < blocks; ++i)
    m.layers.push_back({.name = fmt::format("block{}", i), .params = 10});
  m.layers.push_back({.name = "head", .params = 7});
  return m;
}

ParallelismSpec spec(int tensor, int pipeline,
                     std::array<ParallelAxis, 3> order = {ParallelAxis::tensor, ParallelAxis::data,
                                                          ParallelAxis::pipeline}) {
  ParallelismSpec p;
  p.tensor = tensor;
  p.pipeline = pipeline;
  p.order = order;
  return p;
}

TEST(ParallelLayout, MegatronOrderKeepsTensorGroupsInsideNodes) {
  // 2 nodes x 8 GPUs, TP 2, PP 2, DP 4; tp-dp-pp: rank = tp + 2 dp + 8 pp.
  const ParallelLayout l(spec(2, 2), 16, 8, toy_transformer(4));
  EXPECT_EQ(l.data(), 4);
  EXPECT_EQ(l.coordinates(5), (Coordinates{.tensor = 1, .data = 2, .pipeline = 0}));
  EXPECT_EQ(l.coordinates(14), (Coordinates{.tensor = 0, .data = 3, .pipeline = 1}));
  EXPECT_EQ(l.tensor_group(5), (std::vector<int>{4, 5}));
  EXPECT_EQ(l.data_group(5), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(l.pipeline_group(5), (std::vector<int>{5, 13}));
  for (int r = 0; r < 16; ++r)
    EXPECT_EQ(l.rank_of(l.coordinates(r)), r);
  EXPECT_TRUE(l.tensor_groups_within_nodes());
  EXPECT_THROW(l.coordinates(16), std::out_of_range);
  EXPECT_THROW(l.rank_of({.tensor = 2}), std::out_of_range);
}

TEST(ParallelLayout, PipelineFirstOrderSpreadsTensorGroupsOverNodes) {
  // pp-dp-tp: rank = pp + 2 dp + 8 tp; rank 5 = pp 1, dp 2, tp 0.
  const ParallelLayout l(
      spec(2, 2, {ParallelAxis::pipeline, ParallelAxis::data, ParallelAxis::tensor}), 16, 8,
      toy_transformer(4));
  EXPECT_EQ(l.coordinates(5), (Coordinates{.tensor = 0, .data = 2, .pipeline = 1}));
  EXPECT_EQ(l.tensor_group(5), (std::vector<int>{5, 13}));
  EXPECT_EQ(l.data_group(5), (std::vector<int>{1, 3, 5, 7}));
  EXPECT_EQ(l.pipeline_group(5), (std::vector<int>{4, 5}));
  EXPECT_FALSE(l.tensor_group_within_node(5)); // GPU 5 on node 0, GPU 13 on node 1
  EXPECT_FALSE(l.tensor_groups_within_nodes());
  for (int r = 0; r < 16; ++r)
    EXPECT_EQ(l.rank_of(l.coordinates(r)), r);
}

TEST(ParallelLayout, BalancedStagesGiveTheRemainderToTheLastChunks) {
  EXPECT_EQ(balanced_blocks(12, 4), (std::vector<int>{3, 3, 3, 3}));
  EXPECT_EQ(balanced_blocks(14, 4), (std::vector<int>{3, 3, 4, 4}));
  EXPECT_EQ(balanced_blocks(4, 4), (std::vector<int>{1, 1, 1, 1}));
  EXPECT_THROW(balanced_blocks(3, 4), std::invalid_argument);
  // 14 blocks over 4 stages: 3, 3, 4, 4 blocks; the embedding (layer 0) on the first, the head
  // (layer 15) on the last.
  const ParallelLayout l(spec(1, 4), 4, 4, toy_transformer(14));
  ASSERT_EQ(l.chunks().size(), 4u);
  const auto range = [&](int stage) { return l.stage_layers(stage).at(0); };
  EXPECT_EQ(range(0).first, 0);
  EXPECT_EQ(range(0).last, 4); // embedding + blocks 0..2
  EXPECT_EQ(range(1).first, 4);
  EXPECT_EQ(range(1).last, 7);
  EXPECT_EQ(range(2).first, 7);
  EXPECT_EQ(range(2).last, 11);
  EXPECT_EQ(range(3).first, 11);
  EXPECT_EQ(range(3).last, 16); // blocks 10..13 + head
  EXPECT_EQ(l.stage_of_layer(0), 0);
  EXPECT_EQ(l.stage_of_layer(7), 2);
  EXPECT_EQ(l.stage_of_layer(15), 3);
  EXPECT_DOUBLE_EQ(l.stage_params(0), 1000 + 3 * 10);
  EXPECT_DOUBLE_EQ(l.stage_params(1), 3 * 10);
  EXPECT_DOUBLE_EQ(l.stage_params(3), 4 * 10 + 7);
}

TEST(ParallelLayout, InterleavedChunksAlternateOverStages) {
  // 8 blocks, 2 stages x 2 chunks of 2 blocks: chunk c = v x 2 + stage.
  auto p = spec(1, 2);
  p.schedule = scenario::PipelineSchedule::interleaved;
  p.virtual_stages = 2;
  const ParallelLayout l(p, 2, 2, toy_transformer(8));
  ASSERT_EQ(l.chunks().size(), 4u);
  const auto s0 = l.stage_layers(0), s1 = l.stage_layers(1);
  ASSERT_EQ(s0.size(), 2u);
  EXPECT_EQ(s0[0].first, 0); // embedding, blocks 0, 1
  EXPECT_EQ(s0[0].last, 3);
  EXPECT_EQ(s0[1].first, 5); // blocks 4, 5
  EXPECT_EQ(s0[1].last, 7);
  EXPECT_EQ(s1[0].first, 3); // blocks 2, 3
  EXPECT_EQ(s1[0].last, 5);
  EXPECT_EQ(s1[1].first, 7); // blocks 6, 7, head
  EXPECT_EQ(s1[1].last, 10);
  EXPECT_EQ(l.virtual_chunk_of_layer(6), 1);
  EXPECT_EQ(l.stage_of_layer(6), 0);
  EXPECT_EQ(l.chunk_of_layer(9), 3);
  EXPECT_DOUBLE_EQ(l.stage_params(0), 1000 + 4 * 10);
  EXPECT_DOUBLE_EQ(l.stage_params(1), 4 * 10 + 7);
}

TEST(ParallelLayout, ExplicitStagesAndTheTiedEmbeddingCopy) {
  auto p = spec(1, 2);
  p.stages = {2, 3}; // embedding + block 0 | blocks 1..2 + head
  const ParallelLayout l(p, 2, 1, toy_transformer(3), /*tied_embedding_params=*/900);
  EXPECT_EQ(l.stage_layers(0).at(0).last, 2);
  EXPECT_EQ(l.stage_layers(1).at(0).first, 2);
  EXPECT_DOUBLE_EQ(l.stage_params(0), 1010);
  EXPECT_DOUBLE_EQ(l.tied_copy_params(1), 900); // the last stage's output layer
  EXPECT_DOUBLE_EQ(l.stage_params(1), 900 + 20 + 7);
  p.stages = {0, 5};
  EXPECT_THROW(ParallelLayout(p, 2, 1, toy_transformer(3)), std::invalid_argument);
  // One stage holds the embedding itself: no copy.
  EXPECT_DOUBLE_EQ(ParallelLayout(spec(1, 1), 1, 1, toy_transformer(3), 900).tied_copy_params(0),
                   0);
}

TEST(ParallelLayout, OfAScenario) {
  // gpt-neo-125m: tied embeddings, vocab 50257 x d_model 768; 12 blocks over 4 stages.
  const auto s = scenario::load_scenario_text(R"(name: p
cluster: {nodes: 2, gpus_per_node: 4, gpu: a100-80gb, intra_node: nvlink3, inter_node: ib-hdr}
model: {preset: gpt-neo-125m}
training: {micro_batch: 1, seq_len: 1024}
algorithms: [ddp]
parallelism: {pipeline: 4, order: pp-dp-tp}
)",
                                              "p.yaml");
  const auto l = ParallelLayout::of(s);
  EXPECT_EQ(l.data(), 2);
  EXPECT_EQ(l.pipeline_group(0), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(l.stage_layers(0).at(0).last, 4); // embedding + 3 blocks
  EXPECT_DOUBLE_EQ(l.tied_copy_params(3), 50257.0 * 768);
  double total = 0;
  for (int st = 0; st < 4; ++st)
    total += l.stage_params(st);
  EXPECT_DOUBLE_EQ(total, s.model.spec.total_params() + 50257.0 * 768);
}

} // namespace
} // namespace overlapsim::parallel
