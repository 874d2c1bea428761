#include "comm/nccl_nvls_pipeline.h"

#include <algorithm>
#include <array>
#include <utility>

namespace overlapsim::comm {

int nccl_nvls_one_node_channels(const NcclGeneration& gen) {
  // NVLS_NCHANNELS_SM100_NVL (one NVLink domain) and NVLS_NCHANNELS_SM90.
  return gen.compute_capability >= 100 ? 24 : 16;
}

double nccl_nvls_one_node_chunk(const NcclGeneration& gen, int gpus, double bytes) {
  // calcCollChunking: concurrentOps = channels x heads; the chunk shrinks while the array holds
  // fewer than 64, 8 and 2 loops of it.
  const double ops = static_cast<double>(nccl_nvls_one_node_channels(gen)) * std::max(1, gpus);
  double chunk = gen.nvls_chunk_bytes;
  for (const auto& [loops, size] :
       std::array{std::pair{64.0, 65536.0}, std::pair{8.0, 32768.0}, std::pair{2.0, 16384.0}})
    if (bytes < loops * ops * chunk && chunk > size)
      chunk = size;
  return chunk;
}

double nccl_nvls_one_node_fill_s(const NcclGeneration& gen, int gpus, double link_Bps,
                                 double bytes) {
  if (bytes <= 0 || link_Bps <= 0 || gpus < 2)
    return 0;
  const double g = gpus;
  const double loop = std::min(bytes, nccl_nvls_one_node_channels(gen) * g *
                                          nccl_nvls_one_node_chunk(gen, gpus, bytes));
  return 2 * loop * (g - 1) / g / link_Bps;
}

} // namespace overlapsim::comm
