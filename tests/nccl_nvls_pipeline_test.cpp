// NCCL's one-node NVLS all-reduce pipeline (comm/nccl_nvls_pipeline.h): channels, chunk and the
// first loop's fill against hand numbers, and the model's run (with the fill) against its tuner
// view (without).
#include "comm/nccl_nvls_pipeline.h"

#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using comm::NcclAlgorithm;
using comm::NcclProtocol;

constexpr double MiB = 1048576.0;
constexpr double GiB = 1024 * MiB;

comm::NcclGeneration generation(const char* gpu, const char* link, int gpus) {
  return comm::nccl_generation(*hw::find_gpu_preset(gpu), *hw::find_link_preset(link), gpus);
}

comm::NcclShape one_node(int gpus, double bandwidth) {
  comm::NcclShape s;
  s.ranks = s.per_node = gpus;
  s.intra_Bps = bandwidth;
  return s;
}

// nvls.cc: 16 channels on sm_90, 24 on sm_100 in one NVLink domain.
TEST(NcclNvlsPipeline, ChannelsByGeneration) {
  EXPECT_EQ(comm::nccl_nvls_one_node_channels(generation("h100-sxm", "nvlink4", 8)), 16);
  EXPECT_EQ(comm::nccl_nvls_one_node_channels(generation("gb200", "nvlink5", 72)), 24);
}

// enqueue.cc: 128 KiB cut to 64 KiB below 64 loops of channels x heads x chunk, 32 KiB below 8,
// 16 KiB below 2. 8 x H100 (128 channel-heads): 1 GiB is 64 loops of 128 KiB exactly (kept),
// 32 MiB < 8 x 128 x 64 KiB = 64 MiB (32 KiB), 4 MiB < 2 x 128 x 32 KiB = 8 MiB (16 KiB).
// 72 x GB200 (1,728): 512 MiB < 8 x 1,728 x 64 KiB = 864 MiB (32 KiB), 1 GiB above it (64 KiB).
TEST(NcclNvlsPipeline, ChunkShrinksWithTheArray) {
  const auto h100 = generation("h100-sxm", "nvlink4", 8);
  EXPECT_EQ(comm::nccl_nvls_one_node_chunk(h100, 8, GiB), 131072);
  EXPECT_EQ(comm::nccl_nvls_one_node_chunk(h100, 8, GiB - 1), 65536);
  EXPECT_EQ(comm::nccl_nvls_one_node_chunk(h100, 8, 32 * MiB), 32768);
  EXPECT_EQ(comm::nccl_nvls_one_node_chunk(h100, 8, 4 * MiB), 16384);
  const auto gb200 = generation("gb200", "nvlink5", 72);
  EXPECT_EQ(comm::nccl_nvls_one_node_chunk(gb200, 72, 512 * MiB), 32768);
  EXPECT_EQ(comm::nccl_nvls_one_node_chunk(gb200, 72, GiB), 65536);
}

// fill = 2 L (g-1)/g / B_link, L = min(S, channels x g x chunk).
TEST(NcclNvlsPipeline, FillHandNumbers) {
  const auto h100 = generation("h100-sxm", "nvlink4", 8);
  // 32 MiB: L = 128 x 32 KiB = 4 MiB; 2 x 4 MiB x 7/8 / 360 GB/s = 20.39 us.
  EXPECT_NEAR(comm::nccl_nvls_one_node_fill_s(h100, 8, 360e9, 32 * MiB),
              2 * 4 * MiB * 7 / 8 / 360e9, 1e-12);
  EXPECT_NEAR(comm::nccl_nvls_one_node_fill_s(h100, 8, 360e9, 32 * MiB), 20.39e-6, 0.01e-6);
  // 1 MiB: the whole array is one loop (L = S).
  EXPECT_NEAR(comm::nccl_nvls_one_node_fill_s(h100, 8, 360e9, MiB), 2 * MiB * 7 / 8 / 360e9, 1e-12);
  const auto gb200 = generation("gb200", "nvlink5", 72);
  // 512 MiB: L = 1,728 x 32 KiB = 56.6 MB; 2 x 56.6 MB x 71/72 / 720 GB/s = 155.1 us.
  EXPECT_NEAR(comm::nccl_nvls_one_node_fill_s(gb200, 72, 720e9, 512 * MiB), 155.1e-6, 0.1e-6);
  // 1 GiB: 64 KiB chunks, L = 113.2 MB: 310.2 us.
  EXPECT_NEAR(comm::nccl_nvls_one_node_fill_s(gb200, 72, 720e9, GiB), 310.2e-6, 0.1e-6);
  EXPECT_EQ(comm::nccl_nvls_one_node_fill_s(gb200, 72, 720e9, 0), 0);
}

// The run pays the fill, NCCL's tuner does not: 8 x H100, 1 GiB: 37 us + 1 GiB at 480 x 8/14
// GB/s + 2 x 16 MiB x 7/8 / 360 GB/s (81.6 us).
TEST(NcclNvlsPipeline, RunPaysTheFillTunerDoesNot) {
  const auto h100 = generation("h100-sxm", "nvlink4", 8);
  const auto s = one_node(8, 360e9);
  const double nvls = 480e9 * 8 / 14, fill = 2 * 16 * MiB * 7 / 8 / 360e9;
  const auto run = comm::nccl_all_reduce(h100, s, NcclAlgorithm::nvls, NcclProtocol::simple, GiB);
  EXPECT_NEAR(run.time_s, 37e-6 + GiB / nvls + fill, 1e-9);
  EXPECT_NEAR(fill, 81.55e-6, 0.01e-6);
  const auto tuner = comm::nccl_all_reduce(h100, s, NcclAlgorithm::nvls, NcclProtocol::simple, GiB,
                                           comm::NcclView::tuner);
  EXPECT_NEAR(tuner.time_s, 37e-6 + GiB / nvls, 1e-9);
}

} // namespace
} // namespace overlapsim
