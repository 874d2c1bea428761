// How long NCCL takes for one collective, the way NCCL's own tuner reasons about it (NVIDIA/nccl,
// src/graph/tuning.cc): every (algorithm, protocol) pair costs a latency (a base, plus a per-hop
// latency for each step over NVLink or the network) plus the bytes over a bandwidth that depends on
// the protocol, and NCCL runs the cheapest pair. The numbers are data (NcclGeneration, one table
// per GPU generation in nccl_model.cpp, each entry with its source); this file only combines them.
//
// Algorithms:
//  - ring: 2(n-1) steps, each rank sends 2(n-1)/n S; bus bandwidth = the slowest ring link (NVLink
//    inside a node, the node's pooled NICs across nodes);
//  - tree: NCCL's double binary tree across nodes, a chain inside each node; the chain carries S
//    up and S down on the same NVLink; each node's NICs carry S each way on 2 nodes (every node is
//    a root or a leaf), 2S beyond (a node is inner in one tree: two children's halves up, its own
//    half down to each); and at most its channels (one a NIC, nccl_tree_channels) x NCCL's
//    per-channel tree bandwidth (tuning.cc's perChMaxTreeBw), which on 2 nodes with few NICs
//    keeps the tree from doubling them;
//  - nvls: NVLink SHARP (NVSwitch-3, H100/H200 SXM): the switch reduces, so a GPU sends and
//    receives S once; across nodes NCCL's NVLSTree: NVLS inside each node, the same trees between
//    nodes (their NIC load as above). Simple only.
// Protocols: LL (8-byte flag+data stores: lowest latency, a fraction of the bandwidth), LL128
// (128-byte lines, ~92% of the bandwidth, higher latency), Simple (full bandwidth, highest
// latency).
#pragma once

#include "comm/collective_op.h"
#include "hw/presets.h"

#include <array>
#include <optional>
#include <string>

namespace overlapsim::comm {

enum class NcclProtocol { ll, ll128, simple };
struct RcclTuning; // comm/rccl_tuning.h
// nvls: NVLS on one node, NVLSTree across nodes (all-reduce). The others have files of their own:
// collnet_direct, collnet_chain (the fabric's SHARP: comm/nccl_collnet.h), pat (comm/nccl_pat.h),
// nvls_collnet (NCCL's NVLS across nodes over CollNet: comm/nccl_nvls.h).
enum class NcclAlgorithm { ring, tree, nvls, collnet_direct, collnet_chain, pat, nvls_collnet };
// The model prices all-reduce, reduce-scatter, all-gather and broadcast (CollectiveOp). NCCL's
// tuner (tuning.cc) runs broadcast on rings only; reduce-scatter and all-gather on rings, PAT
// (one GPU a node), NVLS (one node; across nodes over CollNet) and CollNetDirect; all-reduce on
// every algorithm but PAT. Any other op is priced at infinity.
constexpr bool nccl_prices(CollectiveOp op) {
  return op == CollectiveOp::all_reduce || op == CollectiveOp::reduce_scatter ||
         op == CollectiveOp::all_gather || op == CollectiveOp::broadcast;
}

inline constexpr std::array kNcclProtocols = {NcclProtocol::ll, NcclProtocol::ll128,
                                              NcclProtocol::simple};
inline constexpr std::array kNcclAlgorithms = {
    NcclAlgorithm::ring,           NcclAlgorithm::tree,          NcclAlgorithm::nvls,
    NcclAlgorithm::collnet_direct, NcclAlgorithm::collnet_chain, NcclAlgorithm::pat,
    NcclAlgorithm::nvls_collnet};

const char* to_string(NcclProtocol protocol); // "LL", "LL128", "Simple" (NCCL_PROTO's names)
// "ring", "tree", "nvls", "collnetdirect", "collnetchain", "pat", "nvls" (NCCL_ALGO's names).
const char* to_string(NcclAlgorithm algorithm);
// What ran, as traces and `overlapsim collective` name it: "ring/LL", "tree/Simple", "nvls/Simple"
// inside a node, "nvlstree/Simple" (NCCL's NVLSTree) across nodes, "collnetdirect/Simple",
// "collnetchain/Simple", "pat/Simple", "nvls/Simple" across nodes over CollNet (nvls_collnet).
const char* nccl_label(NcclAlgorithm algorithm, NcclProtocol protocol, bool multi_node);

// Per-generation constants; index protocols with static_cast<int>(NcclProtocol).
struct NcclGeneration {
  const char* name = "";
  double launch_s = 0;                 // per-call cost nccl-tests sees beyond NCCL's own latency
  std::array<double, 3> base_s{};      // per (protocol): fixed latency of ring and tree
  std::array<double, 3> hop_intra_s{}; // per step inside a node (at least the link's latency)
  std::array<double, 3> hop_net_s{};   // per step across nodes (at least the network's latency)
  std::array<double, 3> bandwidth_share{}; // of the link's collective bandwidth, per protocol
  double tree_intra_share = 0.5; // a node's chain carries S up and S down: algbw <= B x this
  double nvls_busbw_Bps = 0;     // NVLink SHARP's bus bandwidth on 8 GPUs; 0: no NVLS
  double nvls_latency_s = 0;
  // NVLSTree's pipeline (enqueue.cc): the array is cut over channels x heads (a head: a GPU with a
  // NIC) into chunks that cross each tree level whole, as NCCL_NVLS_NCHANNELS (16 on Hopper) and
  // NCCL_NVLS_CHUNKSIZE (128 KiB) set them.
  int nvls_channels = 16;
  double nvls_chunk_bytes = 131072;
  double nvls_tree_hop_s = 0; // per tree level a chunk crosses (at least the network's latency)
  // NCCL_BUFFSIZE (init.cc: 4 MiB by default; hw::LinkSpec::nccl_buffsize_bytes where the
  // network's NCCL profile sets it): a Simple tree's chunk is an eighth of it
  // (comm/nccl_tree_pipeline.h).
  double nccl_buffsize_bytes = 4194304;
  // NCCL enables LL128 by default only where it is tested safe: NVLink between a node's GPUs (or
  // one GPU a node) on sm_70, sm_80 and sm_90 (tuning.cc, protoEnable); elsewhere (A6000 sm_86,
  // RTX 2080 Ti sm_75, L40S, PCIe cards) the tuner never picks it.
  bool ll128 = true;
  // The most bus bandwidth one tree channel reaches across nodes, by node count: 2 nodes, more
  // (NCCL's perChMaxTreeBws, tuning.cc, the N2 and N4 columns of the GPU's generation); 0: no
  // cap. A tree's bus bandwidth is at most its channels x this (tree_channels()).
  std::array<double, 2> tree_channel_Bps{};
  int compute_capability = 0; // NCCL's channel duplication keys on it (search.cc)
  // The transport between nodes (hw::LinkSpec::message_cost_s): what a network step pays for
  // each message beyond the wire and NCCL's hop.
  double net_message_s = 0;
  // The latency the network's NCCL plugin reports (hw::LinkSpec::plugin_latency_s): NCCL's tuner
  // adds it to every network hop, twice under Simple (nccl_plugin_hop_s); the run does not pay it.
  double net_plugin_latency_s = 0;
  // The fabric reduces (cluster.fabric's `sharp: true`: InfiniBand SHARP): NCCL's CollNet runs
  // (NCCL_COLLNET_ENABLE=1 with the SHARP plugin), and NVLS across nodes with it.
  bool collnet = false;
  // One p2p channel's rate over NVLink (comm/nccl_p2p.h): ncclTopoNVLinkBw of the GPU
  // (src/graph/topo.h) where a node's GPUs are joined by NVLink; 0 over PCIe (the link's rate).
  double p2p_nvlink_channel_Bps = 0;
  // A ring across nodes, as NCCL's tuner prices it (tuning.cc, NCCL 2.29): a step inside a node
  // costs the intra-node link's ring latency (hwLat: NVLink {0.6, 1.9, 3.4} us, PCIe {1.0, 2.5,
  // 5.7}), at least the network's per-step launch overhead (getNetOverhead: 1 us, x 3 for
  // Simple); a step across nodes NCCL's ring network latency ({2.7, 4.0, 14} us), or the tree's
  // (hop_net_s) where a node holds one rank ("with ppn=1 latencies are fully exposed"). A ring on
  // one node keeps hop_intra_s (fitted to one node's tables).
  std::array<double, 3> ring_multi_hop_intra_s{1.0e-6, 1.9e-6, 3.4e-6};
  std::array<double, 3> ring_hop_net_s{2.7e-6, 4.0e-6, 14e-6};
  // RCCL's own tuning model (AMD GPUs, comm/rccl_tuning.h); null under NCCL. With it: no ring
  // plateau (NCCL's, not RCCL's), no tree Simple on one node (RCCL skips it on gfx94x), the
  // tree's share from RCCL's bwRatio, and RCCL's correction tables in the tuner's view.
  const RcclTuning* rccl = nullptr;
};

// The generation of a GPU, from its facts (hw::GpuSpec::compute_capability, the intra-node link's
// kind), never its name: sm_80 and sm_86 take the Ampere table, sm_90 the Hopper one (with NVLS
// where the intra-node link is an NVSwitch with NVLink SHARP, else Ampere's), others (sm_70,
// sm_75, sm_89) a conservative default; an AMD GPU (no compute capability) on an xGMI mesh RCCL's
// own MI300X model (comm/rccl_tuning.h), other AMD GPUs the default. LL128 where NCCL enables it by
// default: sm_70, sm_80 or sm_90 with NVLink between a node's GPUs, or one GPU a node.
// `inter_link`: the network between nodes, whose transport's per-message cost the network steps
// pay (none: the default).
NcclGeneration nccl_generation(const hw::GpuSpec& gpu, const hw::LinkSpec& intra_link,
                               int gpus_per_node, const hw::LinkSpec& inter_link = {});

// What NCCL's tuner adds to a network hop for the latency the net plugin reports (tuning.cc,
// NCCL 2.18-2.29: interLat = hwLat[NET] + graph->latencyInter, "also add the flush extra latency"
// under Simple: the graph's latencyInter is the NIC's ncclNetProperties_t::latency, search.cc).
// aws-ofi-nccl's 75 us on EFA: 75 us a hop under LL and LL128, 150 us under Simple.
double nccl_plugin_hop_s(const NcclGeneration& gen, NcclProtocol protocol);

// What one all-reduce runs on.
struct NcclShape {
  int ranks = 1;
  int nodes = 1;              // nodes the group spans (evenly; otherwise only ring applies)
  int per_node = 1;           // ranks per node
  double intra_Bps = 0;       // slowest intra-node link of the ring (collective bandwidth)
  double intra_latency_s = 0; // one-way intra-node latency
  double net_Bps = 0;         // a node's pooled NIC bandwidth (nodes > 1)
  double net_latency_s = 0;   // one-way GPU-to-GPU latency across nodes
  int net_heads = 1;          // NICs the node's ranks use (NVLSTree's heads), at most per_node
  int net_nics = 0;           // NICs the node's ranks use, all of them (0: net_heads)
  bool even = true;           // every node holds per_node ranks (tree and NVLS need it)
  // One GPU's own NICs (its rail) and their bandwidth: a p2p message across nodes crosses these
  // (comm/nccl_p2p.h), not the node's pooled NICs. 0: net_Bps shared evenly by the node's GPUs.
  int gpu_nics = 1;
  double gpu_net_Bps = 0;
};

struct NcclCost {
  NcclAlgorithm algorithm = NcclAlgorithm::ring;
  NcclProtocol protocol = NcclProtocol::simple;
  double latency_s = 0; // the fixed part
  double algbw_Bps = 0; // S / (time - latency)
  double time_s = 0;    // infinity when the pair does not apply
};

// The cost of one (algorithm, protocol) pair for `collective` of `bytes`, the whole array as
// nccl-tests sizes it (all-gather's output, reduce-scatter's input). Rings of reduce-scatter and
// all-gather take n-1 steps (nodes-1 of them across the network) and move (n-1)/n S per
// rank; broadcast is a pipelined chain of n-1 hops moving S.
// `view`: how long the pair runs (`run`), or what NCCL's tuner believes it costs (`tuner`), which
// is what NCCL picks by. They differ for NVLSTree only: the tuner sees a latency per tree level
// (its network hop) and the bandwidth, where the run pays its chunk pipeline's fill.
enum class NcclView { run, tuner };
NcclCost nccl_collective_cost(const NcclGeneration& gen, const NcclShape& shape,
                              CollectiveOp collective, NcclAlgorithm algorithm,
                              NcclProtocol protocol, double bytes, NcclView view = NcclView::run);

// Whether a scenario's choice of `a` admits `b`: the same algorithm, or both CollNet's (Direct
// and Chain: `collective_algorithm: collnet`).
bool nccl_same_family(NcclAlgorithm a, NcclAlgorithm b);

// The pair NCCL's tuner picks (the cheapest in its view), priced as it runs; `only` restricts the
// algorithm (a scenario's ring, tree or collnet; see nccl_same_family), `only_protocol` the
// protocol (NCCL_PROTO); what is left is still chosen.
NcclCost nccl_best_collective(const NcclGeneration& gen, const NcclShape& shape,
                              CollectiveOp collective, double bytes,
                              std::optional<NcclAlgorithm> only = std::nullopt,
                              std::optional<NcclProtocol> only_protocol = std::nullopt);

// All-reduce, the collective most callers price.
inline NcclCost nccl_all_reduce(const NcclGeneration& gen, const NcclShape& shape,
                                NcclAlgorithm algorithm, NcclProtocol protocol, double bytes,
                                NcclView view = NcclView::run) {
  return nccl_collective_cost(gen, shape, CollectiveOp::all_reduce, algorithm, protocol, bytes,
                              view);
}
inline NcclCost nccl_best_all_reduce(const NcclGeneration& gen, const NcclShape& shape,
                                     double bytes,
                                     std::optional<NcclAlgorithm> only = std::nullopt) {
  return nccl_best_collective(gen, shape, CollectiveOp::all_reduce, bytes, only);
}

// A reduce-scatter or all-gather of a `bytes` array (the whole array, as nccl-tests counts it):
// the tuner's pick, a ring (n-1 steps, nodes-1 of them across nodes, each rank moving (n-1)/n of
// the array at the ring's bus bandwidth) unless PAT, NVLS or CollNetDirect is cheaper where they
// run; the cheapest protocol. (All-gather costs the same as reduce-scatter in NCCL's tuner.)
inline NcclCost nccl_ring_half(const NcclGeneration& gen, const NcclShape& shape, double bytes) {
  return nccl_best_collective(gen, shape, CollectiveOp::reduce_scatter, bytes);
}

// NCCL's double binary tree over m nodes (trees.cc): the first tree gives node i the parent
// (i with its lowest set bit b cleared) | 2b, or without the | 2b where that is out of range, so
// the root 0 has one child and every other inner node two; the second tree mirrors the first
// (i -> m-1-i) for even m and shifts it by one for odd m. The parent of node i in tree 0 or 1;
// -1 for a root.
int nccl_tree_parent(int i, int tree, int m);

// The most bytes a node's NICs carry each way during a tree all-reduce of S, in units of S: every
// tree edge carries half the array each way (up while reducing, down while broadcasting), so S/2
// per edge at the node, summed over both trees. 1 for 2 nodes, 2 from 4 nodes on.
double nccl_tree_nic_load(int m);

// Levels from the deepest node to the root in the deeper of NCCL's two trees over m nodes: 1 for
// 2 nodes, 2 for 4, 3 for 8 (about log2 m).
int nccl_tree_depth(int m);

// The most chunks a node's NICs receive in one step of a tree's reduce phase, in units of one
// channel's chunk over all channels (half of them on each tree): the children a node has in both
// trees, halved. 0.5 for 2 nodes (one child, in one tree), 1 from 4 nodes on.
double nccl_tree_fill_load(int m);

// NVLSTree's chunk size for an all-reduce of `bytes` (enqueue.cc): NCCL_NVLS_CHUNKSIZE, at most
// 64 KiB from 4 nodes, then cut to 256, 128, 64 and 32 KiB while the array is smaller than 32, 16,
// 4 and 1 x channels x heads x chunk.
double nccl_nvls_tree_chunk(const NcclGeneration& gen, const NcclShape& shape, double bytes);

// The channels NCCL's topology search gives a tree across nodes (search.cc): one a NIC, or as many
// as NCCL's top channel speed (48 GB/s, speedArrayInter) fits in a faster NIC; doubled
// (ncclTopoDupChannels) where a channel runs at 25 GB/s or more, except on GPUs above sm_80
// with channels below 50 GB/s and more than 4 of them. At most 32 (MAXCHANNELS / 2).
int nccl_tree_channels(const NcclGeneration& gen, const NcclShape& shape);

// NCCL's tree correction (tuning.cc, treeCorrectionFactor): its trees reach only 40-100% of their
// modelled bandwidth between 64 B and 256 MiB, by protocol and power-of-two size; 1 above.
double nccl_tree_correction(NcclProtocol protocol, double bytes);

} // namespace overlapsim::comm
