#include "comm/nccl_channels.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::comm {

NcclSearchedChannels nccl_search_channels(const NcclGeneration& gen, int nics, double per_nic) {
  // search.cc: speedArrayInter's top entry, 48 GB/s (both its sm_90 and older arrays).
  constexpr double kTopChannel = 48e9;
  const int per_nic_channels = std::max(1, static_cast<int>(std::floor(per_nic / kTopChannel)));
  NcclSearchedChannels g{nics * per_nic_channels, std::min(per_nic, kTopChannel)};
  // ncclTopoDupChannels: bwIntra < 25 keeps them; so do sm_90+ channels below 50 GB/s when
  // there are more than 4.
  const double speed = g.channel_Bps;
  if (speed >= 25e9 && !(gen.compute_capability > 80 && speed < 50e9 && g.channels > 4)) {
    g.channels *= 2;
    g.channel_Bps /= 2;
  }
  g.channels = std::min(g.channels, 32);
  return g;
}

int nccl_comm_channels(const NcclGeneration& gen, const NcclShape& s) {
  // The ring's channels reach the NICs through the node's ranks: a node holding one GPU of eight
  // searches one NIC's worth, not all eight.
  const int nics = std::max(1, s.net_nics > 0 ? s.net_nics : s.net_heads);
  const int used = std::clamp(s.net_heads, 1, std::max(1, s.per_node));
  const auto g = nccl_search_channels(gen, std::min(nics, used), s.net_Bps / nics);
  // connect.cc (ncclTopoPostset): every searched channel twice, at most MAXCHANNELS (64).
  int channels = std::min(2 * g.channels, 64);
  // "Use 4 compute channels per search channel to reach peak BW on <8 PPN": sm_90+ across nodes,
  // channels above 45 GB/s, fewer than 16.
  if (gen.compute_capability >= 90 && g.channel_Bps > 45e9 && channels < 16)
    channels *= 2;
  return channels;
}

} // namespace overlapsim::comm
