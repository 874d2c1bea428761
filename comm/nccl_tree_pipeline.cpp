#include "comm/nccl_tree_pipeline.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::comm {

int nccl_tree_simple_channels(const NcclGeneration& gen, const NcclShape& s, double bytes) {
  // comm->nChannels: the search's channels doubled by connect.cc (at most MAXCHANNELS, 64); then
  // "while (nBytes < nc * nt * threadThreshold) nc--" with nt 512 (NCCL_SIMPLE_MAX_NTHREADS, the
  // tree's maxThreads) and threadThreshold 64 (NCCL_SIMPLE_THREAD_THRESHOLD, comm.h).
  const int channels = std::min(64, 2 * nccl_tree_channels(gen, s));
  constexpr double kPerChannel = 512.0 * 64;
  const double fit = std::floor(bytes / kPerChannel);
  return std::max(1, static_cast<int>(std::min<double>(channels, fit)));
}

double nccl_tree_simple_first_chunk(const NcclGeneration& gen, const NcclShape& s, double bytes) {
  const double step = gen.nccl_buffsize_bytes / kNcclSteps;
  return std::min(step, bytes / nccl_tree_simple_channels(gen, s, bytes));
}

double nccl_tree_simple_fill_s(const NcclGeneration& gen, const NcclShape& s, double bytes) {
  if (s.nodes < 2 || bytes <= 0 || s.net_Bps <= 0)
    return 0;
  const double chunk = nccl_tree_simple_first_chunk(gen, s, bytes);
  const double channels = nccl_tree_simple_channels(gen, s, bytes);
  // One channel over NVLink moves ncclTopoNVLinkBw; over PCIe (no such figure) its share of the
  // link.
  const double r_intra =
      gen.p2p_nvlink_channel_Bps > 0 ? gen.p2p_nvlink_channel_Bps : s.intra_Bps / channels;
  const double chain = 2.0 * (s.per_node - 1) * chunk / r_intra;
  // The NICs in a reduce step: the node's share of the channels' first chunks, at NCCL's tree
  // factor of the node's NICs.
  const double net = 2.0 * nccl_tree_depth(s.nodes) * chunk * channels *
                     nccl_tree_fill_load(s.nodes) / (0.92 * s.net_Bps);
  return chain + net;
}

} // namespace overlapsim::comm
