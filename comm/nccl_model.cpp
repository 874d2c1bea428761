#include "comm/nccl_model.h"

#include "comm/nccl_channels.h"
#include "comm/nccl_collnet.h"
#include "comm/nccl_nvls.h"
#include "comm/nccl_nvls_pipeline.h"
#include "comm/nccl_pat.h"
#include "comm/nccl_tree_pipeline.h"
#include "comm/rccl_tuning.h"
#include "comm/ring_shape.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <vector>

namespace overlapsim::comm {

namespace {

constexpr double us = 1e-6;
constexpr int LL = 0, LL128 = 1, SIMPLE = 2;

// Starting points are NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc, 2.18-2.21): base
// latencies Ring/Tree {LL 6.6-6.8, LL128 14, Simple 8.4} us; NVLink per-hop {0.6, 1.25-1.9,
// 3.4-4} us; network per-hop {2.7-5, 4-8.5, 14} us; LL reaches 1/4 of the bus bandwidth on an
// all-reduce (1/3.8 on a tree), LL128 92% (120/128 across nodes), Simple all of it; NVLS 25 us
// inside a node. Where nccl-tests' published tables disagree with NCCL's own model (its model
// ranks pairs, it does not predict nccl-tests' times), the entry is fitted to the tables in
// tests/data/nccl-tests (bench/nccl_tests_accuracy.py prints the fit):
//  - launch: nccl-tests' 8 B - 32 KiB floor on 8 x A100 (OCI BM.GPU4.8) is 32 us, of which NCCL's
//    LL ring model gives 15-20 us;
//  - per-hop intra-node LL128 and Simple: the same table's 4-256 MiB sizes put Simple's fixed cost
//    at ~110 us on 8 GPUs (14 steps: 6.4 us a step, NCCL's model 3.4) and LL128's at ~95 us;
//  - LL's share: 0.21 (its 256 KiB - 2 MiB slope: 48 GB/s of 234);
//  - NVLS: 480 GB/s bus bandwidth on 8 x H100/H200 (sjeaugey, NVIDIA/nccl-tests issue #212;
//    477 GB/s measured on 8 x H200 with NCCL 2.19.3, tests/data/nccl-tests/azure-h200-1x8.log);
//  - NVLSTree's network hop (a fit): 10 us a tree level, read off the 1 MiB rows of the 2-, 4- and
//    8-node H100 InfiniBand tables (93, 82 and 116 us in all; 10-15 us a level once the chunks' own
//    transfer is counted, which NCCL's per-hop figures, 14 us for the tree's Simple and 20.9 us for
//    NVLSTree in NCCL 2.2x, fold in).
// A network hop holds a fabric's few microseconds of latency (NCCL's figures are measured on
// InfiniBand); a longer network latency (a WAN, a slow fabric) replaces it: hop = max(NCCL's hop,
// the network's latency), as inside a node.
const NcclGeneration kAmpere{
    "ampere",
    12 * us,
    {6.6 * us, 14 * us, 8.4 * us},
    {0.6 * us, 5.0 * us, 6.4 * us},
    {5 * us, 8.5 * us, 14 * us},
    {0.21, 0.92, 1.0},
    0.5,
    0,
    0,
};
// Hopper: NCCL's tuning tables give H100 the same latencies and larger per-channel caps; no
// published full-range single-node table was found, so the Ampere latencies stand; NVLS as above.
const NcclGeneration kHopper{
    "hopper",
    12 * us,
    {6.6 * us, 14 * us, 8.4 * us},
    {0.6 * us, 5.0 * us, 6.4 * us},
    {5 * us, 8.5 * us, 14 * us},
    {0.21, 0.92, 1.0},
    0.5,
    480e9,
    25 * us,
    16,
    131072,
    10 * us,
};
// Blackwell (B200, GB200): Hopper's latencies; NVLS's bus bandwidth derived, not fitted: Hopper's
// measured 480 GB/s x NVLink 5 over NVLink 4 (900 / 450 GB/s a direction, NVIDIA's datasheets) x
// NCCL's NVLS efficiency of Blackwell over Hopper's (tuning.cc nvlsEfficiency: 0.74 / 0.85):
// 836 GB/s.
NcclGeneration blackwell() {
  NcclGeneration gen = kHopper;
  gen.name = "blackwell";
  gen.nvls_busbw_Bps = 480e9 * 900 / 450 * 0.74 / 0.85;
  return gen;
}
const NcclGeneration kBlackwell = blackwell();
// Other GPUs (Volta, Turing, PCIe cards): NCCL's model as is, no NVLS.
const NcclGeneration kGeneric{
    "generic",
    12 * us,
    {6.6 * us, 14 * us, 8.4 * us},
    {1.0 * us, 2.5 * us, 5.7 * us},
    {5 * us, 8.5 * us, 14 * us},
    {0.25, 0.92, 1.0},
    0.5,
    0,
    0,
};

// AMD MI300X under RCCL (ROCm/rccl src/graph/tuning.cc, tuning_model_5, which RCCL's topology
// models of the 8-GPU xGMI mesh select; comm/rccl_tuning.h): baseLat {12, 12, 17} us (Tree and
// Ring); hwLat over xGMI (RCCL counts it as NVLink) ring {0.8, -, 2.1} us a step, the tree's
// {0.9, -, 2.3} taken as the ring's (one field; the tree on one node runs LL only, below); across
// nodes a tree hop {10.5, -, 25} us and a ring network step {9.5, -, 320} us; a ring step inside a
// node at least the network's post overhead (getNetOverhead: 1 us, x 3 for Simple); bwRatio of
// the ring {0.08, -, 1.00} (LL, LL128, Simple). LL128 is off (RCCL enables it on gfx90a only). The
// launch is the model's nccl-tests per-call cost, as for NCCL.
NcclGeneration rccl_mi300() {
  NcclGeneration gen{
      "rccl-mi300",
      12 * us,
      {12 * us, 12 * us, 17 * us},
      {0.8 * us, 0, 2.1 * us},
      {10.5 * us, 0, 25 * us},
      {0.08, 0, 1.0},
      0.5,
      0,
      0,
  };
  gen.ll128 = false;
  gen.ring_multi_hop_intra_s = {1.0 * us, 0, 3.0 * us};
  gen.ring_hop_net_s = {9.5 * us, 0, 320 * us};
  gen.rccl = &rccl_mi300_tuning();
  return gen;
}

// What the double binary trees leave of a node's NICs for the array: 92% of them (NCCL's tree
// factor) over the busiest node's load (tuning.cc halves the network bandwidth beyond 2 nodes).
double nccl_tree_net_Bps(const NcclShape& s) {
  return s.net_Bps * 0.92 / nccl_tree_nic_load(s.nodes);
}

int btree_parent(int i, int m) {
  if (i == 0)
    return -1;
  const int bit = i & -i;
  const int up = (i ^ bit) | (bit << 1);
  return up < m ? up : i ^ bit;
}

} // namespace

const char* to_string(NcclProtocol protocol) {
  switch (protocol) {
  case NcclProtocol::ll:
    return "LL";
  case NcclProtocol::ll128:
    return "LL128";
  default:
    return "Simple";
  }
}

const char* to_string(NcclAlgorithm algorithm) {
  switch (algorithm) {
  case NcclAlgorithm::ring:
    return "ring";
  case NcclAlgorithm::tree:
    return "tree";
  case NcclAlgorithm::collnet_direct:
    return "collnetdirect";
  case NcclAlgorithm::collnet_chain:
    return "collnetchain";
  case NcclAlgorithm::pat:
    return "pat";
  default:
    return "nvls";
  }
}

NcclGeneration nccl_generation(const hw::GpuSpec& gpu, const hw::LinkSpec& intra_link,
                               int gpus_per_node, const hw::LinkSpec& inter_link) {
  const int cc = gpu.compute_capability;
  // PCIe H100s have no NVSwitch: no NVLS, Ampere's latencies. Blackwell (sm_100, B200/GB200 on
  // NVSwitch with NVLink SHARP): Hopper's latencies and its own NVLS.
  NcclGeneration gen = cc >= 100 && intra_link.nvlink_sharp               ? kBlackwell
                       : cc == 90 && intra_link.nvlink_sharp              ? kHopper
                       : cc == 80 || cc == 86 || cc >= 90                 ? kAmpere
                       : cc == 0 && intra_link.kind == hw::LinkKind::xgmi ? rccl_mi300()
                                                                          : kGeneric;
  const bool tested_arch = cc == 70 || cc == 80 || cc == 90 || cc == 100;
  gen.ll128 = tested_arch && (gpus_per_node == 1 || intra_link.kind == hw::LinkKind::nvlink);
  // perChMaxTreeBws (tuning.cc), columns N2 and N4, by NCCL's compCapIndex (minCompCap >= 100
  // Blackwell, >= 90 Hopper, >= 80 Ampere, else Volta). A GPU that is not NVIDIA's (cc 0: RCCL,
  // whose tables differ) has no cap.
  gen.tree_channel_Bps = cc >= 100  ? std::array{42.8e9, 24.0e9}
                         : cc >= 90 ? std::array{41.4e9, 36.0e9}
                         : cc >= 80 ? std::array{23.6e9, 17.8e9}
                         : cc > 0   ? std::array{18.5e9, 10.0e9}
                                    : std::array{0.0, 0.0};
  gen.compute_capability = cc;
  gen.net_message_s = inter_link.message_cost_s;
  gen.net_plugin_latency_s = inter_link.plugin_latency_s;
  if (inter_link.nccl_buffsize_bytes > 0)
    gen.nccl_buffsize_bytes = inter_link.nccl_buffsize_bytes;
  // ncclTopoNVLinkBw (src/graph/topo.h): SM60 18, SM70/SM80 20, SM86 12, SM90 20.6, SM100 40.1
  // GB/s a link; a p2p channel on NVLink moves one link's worth (comm/nccl_p2p.h). Not NVIDIA's
  // GPUs (cc 0: RCCL) or PCIe: no per-channel cap.
  // tuning.cc's PCI ring row where the node's GPUs are not on NVLink, each at least the network's
  // 1 us overhead (3 us for Simple).
  if (intra_link.kind != hw::LinkKind::nvlink && !gen.rccl)
    gen.ring_multi_hop_intra_s = {1.0e-6, 2.5e-6, 5.7e-6};
  if (intra_link.kind == hw::LinkKind::nvlink && cc > 0)
    gen.p2p_nvlink_channel_Bps = (cc >= 100  ? 40.1
                                  : cc >= 90 ? 20.6
                                  : cc == 86 ? 12.0
                                  : cc >= 70 ? 20.0
                                             : 18.0) *
                                 1e9;
  return gen;
}

int nccl_tree_channels(const NcclGeneration& gen, const NcclShape& s) {
  const int nics = std::max(1, s.net_nics > 0 ? s.net_nics : s.net_heads);
  return nccl_search_channels(gen, nics, s.net_Bps / nics).channels;
}

const char* nccl_label(NcclAlgorithm a, NcclProtocol p, bool multi_node) {
  // Static strings: the simulator's CollectiveOutcome holds the pointer.
  static const char* const labels[3][3] = {{"ring/LL", "ring/LL128", "ring/Simple"},
                                           {"tree/LL", "tree/LL128", "tree/Simple"},
                                           {"nvls/LL", "nvls/LL128", "nvls/Simple"}};
  if (a == NcclAlgorithm::nvls && multi_node)
    return "nvlstree/Simple"; // NCCL's NVLSTree, Simple only
  switch (a) {                // Simple only
  case NcclAlgorithm::collnet_direct:
    return "collnetdirect/Simple";
  case NcclAlgorithm::collnet_chain:
    return "collnetchain/Simple";
  case NcclAlgorithm::pat:
    return "pat/Simple";
  case NcclAlgorithm::nvls_collnet:
    return "nvls/Simple";
  default:
    return labels[static_cast<int>(a)][static_cast<int>(p)];
  }
}

int nccl_tree_parent(int i, int tree, int m) {
  if (tree == 0)
    return btree_parent(i, m);
  if (m % 2 == 0) { // mirrored
    const int p = btree_parent(m - 1 - i, m);
    return p < 0 ? -1 : m - 1 - p;
  }
  const int p = btree_parent((i - 1 + m) % m, m); // shifted by one
  return p < 0 ? -1 : (p + 1) % m;
}

namespace {

// The shapes of NCCL's two trees over m nodes, walked once per node count: every collective's cost
// asks for them (nine times, once per algorithm and protocol the tuner weighs), and a walk is
// O(m log m): on 131,072 nodes ~10 ms, so that a 1M-GPU run with rank classes (24k ops) spent
// minutes here (issue 63.5a). A run or a sweep point meets one or two node counts.
struct TreeShape {
  double nic_load = 0;
  int depth = 0;
  double fill_load = 0;
};

TreeShape walk_trees(int m) {
  TreeShape t;
  if (m < 2)
    return t;
  std::vector<int> edges(static_cast<std::size_t>(m), 0);
  std::vector<int> children(static_cast<std::size_t>(m), 0);
  for (int tree : {0, 1})
    for (int i = 0; i < m; ++i) {
      int levels = 0;
      for (int j = i; (j = nccl_tree_parent(j, tree, m)) >= 0;)
        ++levels;
      t.depth = std::max(t.depth, levels);
      if (const int p = nccl_tree_parent(i, tree, m); p >= 0) {
        ++edges[static_cast<std::size_t>(i)], ++edges[static_cast<std::size_t>(p)];
        ++children[static_cast<std::size_t>(p)];
      }
    }
  t.nic_load = 0.5 * *std::max_element(edges.begin(), edges.end());
  t.fill_load = 0.5 * *std::max_element(children.begin(), children.end());
  return t;
}

const TreeShape& tree_shape(int m) {
  // Per thread: no lock on the hot path (a simulation runs on one thread; tests may use several).
  thread_local std::map<int, TreeShape> cache;
  auto it = cache.find(m);
  if (it == cache.end())
    it = cache.emplace(m, walk_trees(m)).first;
  return it->second;
}

} // namespace

double nccl_tree_nic_load(int m) {
  return tree_shape(m).nic_load;
}

int nccl_tree_depth(int m) {
  return tree_shape(m).depth;
}

double nccl_tree_fill_load(int m) {
  return tree_shape(m).fill_load;
}

double nccl_nvls_tree_chunk(const NcclGeneration& gen, const NcclShape& s, double bytes) {
  const double ops =
      gen.nvls_channels * static_cast<double>(std::clamp(s.net_heads, 1, s.per_node));
  double chunk = s.nodes >= 4 ? std::min(gen.nvls_chunk_bytes, 65536.0) : gen.nvls_chunk_bytes;
  for (const auto& [times, size] :
       {std::pair{32.0, 262144.0}, {16.0, 131072.0}, {4.0, 65536.0}, {1.0, 32768.0}})
    if (bytes < times * ops * chunk && chunk > size)
      chunk = size;
  return chunk;
}

double nccl_tree_correction(NcclProtocol protocol, double bytes) {
  // NCCL 2.1x's table (src/graph/tuning.cc): rows LL, LL128, Simple; column k holds sizes with
  // floor(log2(bytes / 64)) = k, so 64-127 B is column 0 and 128-256 MiB column 21.
  static constexpr std::array<std::array<double, 22>, 3> kFactor{{
      {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7,  .7,  .6,
       .5,  .4,  .4,  .5,  .6, .7, .8, .9, 1.0, 1.0, 1.0},
      {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6,
       .6,  .6,  .5,  .6,  .6,  .7, .7, .8, .9, .9, 1.0},
      {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9},
  }};
  const double units = std::floor(bytes / 64);
  const int column = units < 1 ? 0 : static_cast<int>(std::floor(std::log2(units)));
  if (column >= 22)
    return 1.0;
  return kFactor[static_cast<std::size_t>(protocol)][static_cast<std::size_t>(column)];
}

double nccl_plugin_hop_s(const NcclGeneration& gen, NcclProtocol protocol) {
  return gen.net_plugin_latency_s * (protocol == NcclProtocol::simple ? 2 : 1);
}

NcclCost nccl_collective_cost(const NcclGeneration& gen, const NcclShape& s,
                              CollectiveOp collective, NcclAlgorithm algorithm,
                              NcclProtocol protocol, double bytes, NcclView view) {
  // The plugin's reported latency is what NCCL's tuner sees on every network hop, whichever
  // algorithm prices it (ring, tree, NVLSTree, CollNet, PAT): the tuner's view carries it as a
  // per-message cost; the run's does not.
  if (view == NcclView::tuner && gen.net_plugin_latency_s > 0 && s.nodes > 1) {
    NcclGeneration seen = gen;
    seen.net_message_s += nccl_plugin_hop_s(gen, protocol);
    seen.net_plugin_latency_s = 0;
    return nccl_collective_cost(seen, s, collective, algorithm, protocol, bytes, view);
  }
  const auto p = static_cast<std::size_t>(protocol);
  NcclCost c{algorithm, protocol, 0, 0, std::numeric_limits<double>::infinity()};
  const int n = s.ranks;
  if (n < 2)
    return c.time_s = 0, c;
  if (protocol == NcclProtocol::ll128 && !gen.ll128)
    return c; // disabled by default on this GPU or fabric
  if (!nccl_prices(collective))
    return c;
  const bool all_reduce = collective == CollectiveOp::all_reduce;
  // Algorithms of their own files (all-gather and reduce-scatter by NVLS on one node too).
  switch (algorithm) {
  case NcclAlgorithm::collnet_direct:
  case NcclAlgorithm::collnet_chain:
    return nccl_collnet_cost(gen, s, collective, algorithm, protocol, bytes);
  case NcclAlgorithm::pat:
    return nccl_pat_cost(gen, s, collective, protocol, bytes);
  case NcclAlgorithm::nvls_collnet:
    return nccl_nvls_cost(gen, s, collective, algorithm, protocol, bytes);
  case NcclAlgorithm::nvls:
    if (!all_reduce)
      return nccl_nvls_cost(gen, s, collective, algorithm, protocol, bytes);
    break;
  default:
    break;
  }
  if (!all_reduce && algorithm != NcclAlgorithm::ring)
    return c; // NCCL's tuner: broadcast runs rings, and so do the others here
  const bool multi = s.nodes > 1;
  const double hop_intra = std::max(gen.hop_intra_s[p], s.intra_latency_s);
  // A transport's per-message cost (EFA's rendezvous, TCPX's receive path) on every network step.
  const double hop_net = std::max(gen.hop_net_s[p], s.net_latency_s) + gen.net_message_s;
  const double share = gen.bandwidth_share[p];
  switch (algorithm) {
  case NcclAlgorithm::ring: {
    // Steps (and those crossing the network) per collective, as NCCL's tuner counts them: the
    // ring's (comm/ring_shape.h) over the ranks, and over the nodes for the network's share.
    const RingShape ring = ring_shape(collective, n);
    const double steps = ring.steps;
    const double net_steps = multi ? ring_shape(collective, s.nodes).steps : 0;
    // Across nodes NCCL's own ring latencies (NcclGeneration::ring_multi_hop_intra_s and
    // ring_hop_net_s); on one node the fitted NVLink step.
    const double ring_intra =
        multi ? std::max(gen.ring_multi_hop_intra_s[p], s.intra_latency_s) : hop_intra;
    const double ring_net =
        s.per_node > 1 ? std::max(gen.ring_hop_net_s[p], s.net_latency_s) + gen.net_message_s
                       : hop_net;
    c.latency_s =
        gen.launch_s + gen.base_s[p] + (steps - net_steps) * ring_intra + net_steps * ring_net;
    // NCCL's ring plateau (tuning.cc, "Plateau effect of ring"): a multi-node Simple all-reduce
    // pays 1.4x its latency on sm_80 and newer, 1.9x below, once each rank's share of each
    // channel is 64 B or more (NCCL 2.18.1-2.29.3: ncclTopoGetAlgoTime, v2.18.1-1 lines 380-382,
    // v2.29.3-1 596-598; NCCL 2.16 and before: 1.9x from n/16 x 64 KiB on, every GPU). The
    // channels: comm->nChannels, twice the topology search's (nccl_tree_channels, which the
    // ring's graph shares) once connect.cc duplicates them (v2.29.3-1 line 452), at most 64.
    // (NCCL's only: RCCL's HIP build has no plateau.)
    if (!gen.rccl && all_reduce && multi && protocol == NcclProtocol::simple &&
        bytes / (std::min(64, 2 * nccl_tree_channels(gen, s)) * static_cast<double>(n)) >= 64)
      c.latency_s *= gen.compute_capability >= 80 ? 1.4 : 1.9;
    const double bus = (multi ? std::min(s.intra_Bps, s.net_Bps) : s.intra_Bps) * share;
    // Bus to algorithm bandwidth: a rank moves bus_factor x S over its ring link.
    c.algbw_Bps = bus / ring.bus_factor;
    // RCCL's ring correction across nodes steers its choice (comm/rccl_tuning.h).
    if (gen.rccl && multi && view == NcclView::tuner)
      c.algbw_Bps *= rccl_correction(gen.rccl->ring_correction, protocol, bytes);
    break;
  }
  case NcclAlgorithm::tree: {
    if (!s.even)
      return c;
    // RCCL skips the tree's Simple on a single node of gfx94x GPUs (tuning.cc).
    if (gen.rccl && !multi && protocol == NcclProtocol::simple)
      return c;
    const double depth = std::log2(static_cast<double>(s.nodes));
    c.latency_s =
        gen.launch_s + gen.base_s[p] + 2 * ((s.per_node - 1) * hop_intra + depth * hop_net);
    // Inside a node the chain; across nodes Simple reaches 92% of the NICs' share (NCCL's tree
    // factor); LL and LL128 their share; mid sizes NCCL's own tree correction.
    const double intra = s.intra_Bps * gen.tree_intra_share;
    // LL on a tree: NCCL's own 1/3.8 of the bus bandwidth (tuning.cc), not the ring's fitted share.
    // RCCL: its bwRatio instead (<= 2 nodes, more).
    const double tree_share = gen.rccl ? gen.rccl->tree_share[s.nodes <= 2 ? 0 : 1][p]
                              : protocol == NcclProtocol::ll ? 1 / 3.8
                                                             : share;
    double net = multi ? nccl_tree_net_Bps(s) : intra;
    // Across nodes a tree reaches at most its channels x NCCL's per-channel tree bandwidth
    // (tuning.cc: busBw = min(busBw x 0.92, nChannels x perChMaxTreeBw); algbw = busBw / 2).
    // On 2 nodes this is what keeps a tree from doubling the NICs where they are few: 2 x 8 A100
    // with 4 x 200 Gb/s NICs has 4 channels, 4 x 23.6 GB/s: algbw 47 GB/s, busbw 89, where the
    // NICs alone would allow 92 GB/s of algbw (issue 66: the run reached 86 busbw, ring-like).
    const double cap = multi ? gen.tree_channel_Bps[s.nodes <= 2 ? 0 : 1] : 0;
    if (cap > 0)
      net = std::min(net, nccl_tree_channels(gen, s) * cap / 2);
    // NCCL's tree correction; RCCL's own table in its tuner's view only (comm/rccl_tuning.h).
    const double correction = !gen.rccl ? nccl_tree_correction(protocol, bytes)
                              : view == NcclView::tuner
                                  ? rccl_correction(gen.rccl->tree_correction, protocol, bytes)
                                  : 1.0;
    c.algbw_Bps = std::min(intra, net) * tree_share * correction;
    // The run of a Simple tree across nodes: its chunk pipeline's fill in place of the tree
    // correction (comm/nccl_tree_pipeline.h); the tuner keeps NCCL's view.
    if (view == NcclView::run && multi && protocol == NcclProtocol::simple && !gen.rccl &&
        bytes > 0) {
      const double steady = std::min(intra, net) * tree_share;
      const double first =
          nccl_tree_simple_channels(gen, s, bytes) * nccl_tree_simple_first_chunk(gen, s, bytes);
      c.algbw_Bps =
          bytes / (nccl_tree_simple_fill_s(gen, s, bytes) + std::max(0.0, bytes - first) / steady);
    }
    break;
  }
  case NcclAlgorithm::nvls: {
    // NVLink SHARP inside each node, Simple only (NCCL runs NVLS and NVLSTree with Simple).
    if (gen.nvls_busbw_Bps <= 0 || protocol != NcclProtocol::simple || s.per_node < 2 || !s.even)
      return c;
    // NVLS's bus bandwidth cannot beat the link: a GPU still sends and receives S once.
    const double intra =
        std::min(gen.nvls_busbw_Bps * s.per_node / (2.0 * (s.per_node - 1)), s.intra_Bps);
    if (!multi) {
      c.latency_s = gen.launch_s + gen.nvls_latency_s;
      c.algbw_Bps = intra;
      // The run's chunk pipeline: its first loop crosses scatter, reduce and gather alone
      // (comm/nccl_nvls_pipeline.h); NCCL's tuner sees no fill.
      if (view == NcclView::run && bytes > 0)
        c.algbw_Bps = bytes / (bytes / intra +
                               nccl_nvls_one_node_fill_s(gen, s.per_node, s.intra_Bps, bytes));
      break;
    }
    // NVLSTree: NVLS reduces inside the node, the trees reduce up and broadcast down between
    // nodes, NVLS broadcasts inside. A pipeline of chunks (enqueue.cc): a loop moves one chunk
    // per channel and head, and each tree level forwards a chunk only once it has all of it, so
    // the first loop pays every stage (2 NVLS steps, 2 x depth levels, each with the reduce
    // phase's load on the NICs: nccl_tree_fill_load) and each later one only the slowest stage
    // (the NICs with the trees' whole load, nccl_tree_nic_load, or NVLS).
    const int depth = nccl_tree_depth(s.nodes);
    if (view == NcclView::tuner) { // tuning.cc: a network hop per level, then the bandwidth
      c.latency_s = gen.launch_s + gen.nvls_latency_s + 2 * depth * hop_net;
      c.algbw_Bps = std::min(intra, nccl_tree_net_Bps(s));
      break;
    }
    const double hop = std::max(gen.nvls_tree_hop_s, s.net_latency_s) + gen.net_message_s;
    c.latency_s = gen.launch_s + gen.nvls_latency_s + 2 * depth * hop;
    const double heads = std::clamp(s.net_heads, 1, s.per_node);
    const double loop =
        std::min(bytes, gen.nvls_channels * heads * nccl_nvls_tree_chunk(gen, s, bytes));
    const double net = s.net_Bps * 0.92; // NCCL's tree factor
    const double first = loop * (2 * depth * nccl_tree_fill_load(s.nodes) / net + 2 / intra);
    const double next = (bytes - loop) * std::max(nccl_tree_nic_load(s.nodes) / net, 1 / intra);
    c.algbw_Bps = bytes > 0 ? bytes / (first + next) : std::min(intra, nccl_tree_net_Bps(s));
    break;
  }
  default: // priced above
    return c;
  }
  if (!(c.algbw_Bps > 0))
    return c;
  c.time_s = c.latency_s + bytes / c.algbw_Bps;
  return c;
}

bool nccl_same_family(NcclAlgorithm a, NcclAlgorithm b) {
  const auto family = [](NcclAlgorithm x) {
    return x == NcclAlgorithm::collnet_chain ? NcclAlgorithm::collnet_direct : x;
  };
  return family(a) == family(b);
}

NcclCost nccl_best_collective(const NcclGeneration& gen, const NcclShape& shape,
                              CollectiveOp collective, double bytes,
                              std::optional<NcclAlgorithm> only,
                              std::optional<NcclProtocol> only_protocol) {
  // NCCL_PROTO set by hand enables what it names, LL128 included where NCCL's default leaves it
  // off.
  NcclGeneration enabled = gen;
  enabled.ll128 = gen.ll128 || only_protocol == NcclProtocol::ll128;
  // A scenario's algorithm restricts all-reduce, and the ring or CollNet every op but broadcast
  // (tree, NCCL's for all-reduce only, leaves the others to the tuner).
  const bool restricted =
      only && (collective == CollectiveOp::all_reduce ||
               (*only != NcclAlgorithm::tree && collective != CollectiveOp::broadcast));
  NcclCost best;
  best.time_s = std::numeric_limits<double>::infinity();
  for (const auto algorithm : kNcclAlgorithms) {
    if (restricted && !nccl_same_family(*only, algorithm))
      continue;
    for (const auto protocol : kNcclProtocols) {
      if (only_protocol && *only_protocol != protocol)
        continue;
      const auto c = nccl_collective_cost(enabled, shape, collective, algorithm, protocol, bytes,
                                          NcclView::tuner);
      if (c.time_s < best.time_s)
        best = c;
    }
  }
  // CollNet asked for where NCCL disables it (an all-gather or reduce-scatter with fewer NICs
  // than GPUs a node): NCCL falls back to its tuner's pick.
  if (!std::isfinite(best.time_s) && restricted && *only != NcclAlgorithm::ring &&
      *only != NcclAlgorithm::tree && collective != CollectiveOp::all_reduce)
    return nccl_best_collective(gen, shape, collective, bytes, std::nullopt, only_protocol);
  if (!std::isfinite(best.time_s))
    return best;
  return nccl_collective_cost(enabled, shape, collective, best.algorithm, best.protocol, bytes);
}

} // namespace overlapsim::comm
