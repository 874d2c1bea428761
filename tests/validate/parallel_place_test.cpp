// validate/parallel_place.h: a real worker's stage, neighbours and groups, from parallel/layout.h.
#include "validate/parallel_place.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace {

using namespace overlapsim;
using overlapsim::real::parallel_place;
using overlapsim::scenario::PipelineSchedule;

hw::ModelSpec toy_transformer(int blocks) {
  hw::ModelSpec m;
  m.layers.push_back({.name = "embedding", .params = 1000});
  for (int i = 0; i < blocks; ++i)
    m.layers.push_back({.name = fmt::format("block{}", i), .params = 10});
  m.layers.push_back({.name = "head", .params = 7});
  return m;
}

parallel::ParallelLayout layout(int tensor, int pipeline, int world, int gpus_per_node) {
  scenario::ParallelismSpec p;
  p.tensor = tensor;
  p.pipeline = pipeline;
  return parallel::ParallelLayout(p, world, gpus_per_node, toy_transformer(2));
}

// PP2 x DP2 in Megatron's order tp-dp-pp: ranks 0, 1 stage 0 and 2, 3 stage 1; rank 2 pairs with
// 0, reduces with 3, reads DP rank 0's samples and, under 1F1B with 4 micro-batches, runs
// min(4, i + p - stage) = i + 1 forwards before backward i (stage 0: i + 2).
TEST(ParallelPlace, PipelineTimesDataOnFourRanks) {
  const Topology topology(4, 1);
  const auto l = layout(1, 2, 4, 1);
  const auto last = parallel_place(l, topology, 2, PipelineSchedule::one_f_one_b, 4);
  EXPECT_EQ(last.stage, 1);
  EXPECT_TRUE(last.pipelined() && last.last() && !last.first());
  EXPECT_EQ(last.layers.first, 2); // embedding, block0 | block1, head
  EXPECT_EQ(last.layers.last, 4);
  EXPECT_EQ(last.previous, 0);
  EXPECT_EQ(last.next, -1);
  EXPECT_EQ(last.to_previous->ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(last.to_next, nullptr);
  EXPECT_EQ(last.data->ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(last.data_rank, 0);
  EXPECT_EQ(last.data_size, 2);
  EXPECT_EQ(last.embedding->ranks, (std::vector<int>{0, 2}));
  EXPECT_EQ(last.ahead, 1);
  EXPECT_DOUBLE_EQ(last.sample_share, 0.5);
  const auto first = parallel_place(l, topology, 1, PipelineSchedule::one_f_one_b, 4);
  EXPECT_EQ(first.next, 3);
  EXPECT_EQ(first.to_next->ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(first.data_rank, 1);
  EXPECT_EQ(first.ahead, 2);
  // GPipe: every forward of the step before the first backward.
  EXPECT_EQ(parallel_place(l, topology, 1, PipelineSchedule::gpipe, 4).ahead, 4);
  EXPECT_THROW(parallel_place(l, topology, 1, PipelineSchedule::interleaved, 4),
               std::invalid_argument);
}

// TP2 x DP2: ranks 0, 1 and 2, 3 the TP groups; rank 3 is TP rank 1 of DP group {1, 3}.
TEST(ParallelPlace, TensorTimesDataOnFourRanks) {
  const Topology topology(2, 2);
  const auto p = parallel_place(layout(2, 1, 4, 2), topology, 3, PipelineSchedule::one_f_one_b, 4);
  EXPECT_FALSE(p.pipelined());
  EXPECT_TRUE(p.tensor_parallel());
  EXPECT_EQ(p.tensor->ranks, (std::vector<int>{2, 3}));
  EXPECT_EQ(p.tensor_rank, 1);
  EXPECT_EQ(p.data->ranks, (std::vector<int>{1, 3}));
  EXPECT_EQ(p.data_rank, 1);
  EXPECT_EQ(p.embedding, nullptr);
  EXPECT_EQ(p.layers.first, 0);
  EXPECT_EQ(p.layers.last, 4);
  EXPECT_DOUBLE_EQ(p.sample_share, 0.5);
}

} // namespace
