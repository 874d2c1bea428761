#include "sim/collective/nccl.h"

#include "comm/ring_shape.h"
#include "sim/collective/collnet.h"
#include "sim/collective/nvls_tree.h"
#include "sim/collective/pat.h"
#include "sim/collective/tree.h"

#include <algorithm>
#include <map>

namespace overlapsim::sim::collective {

using comm::NcclAlgorithm;

const comm::NcclCost& NcclModel::cost_of(const Group& g, CollectiveOp op, double bytes) {
  const std::tuple<int, CollectiveOp, double> key{g.id, op, bytes};
  if (last_key_ != key) {
    last_cost_ = comm::nccl_best_collective(fabric_.nccl_generation(), fabric_.nccl_shape(g), op,
                                            bytes, only_, fabric_.nccl_protocol());
    last_key_ = key;
  }
  return last_cost_;
}

CollectiveOutcome NcclModel::run(int rank, const Scope& s, double data_bytes, int root) {
  const Group& g = s.group;
  const int n = g.size();
  const CollectiveOp collective = s.op;
  // The whole array S (all-gather's: n shards), as NCCL's model takes it.
  const double bytes = comm::array_bytes(collective, n, data_bytes);
  const comm::NcclCost cost = cost_of(g, collective, bytes);
  const comm::NcclShape& shape = fabric_.nccl_shape(g);
  // Trees between nodes: NCCL's tree (chains inside the nodes) and NVLSTree (NVLS inside).
  const bool nvls_tree = cost.algorithm == NcclAlgorithm::nvls && shape.nodes > 1;
  const bool tree = cost.algorithm == NcclAlgorithm::tree || nvls_tree;
  // The switches reduce between nodes: CollNet, and NVLS over CollNet (collnet.h).
  const bool collnet = cost.algorithm == NcclAlgorithm::collnet_direct ||
                       cost.algorithm == NcclAlgorithm::collnet_chain ||
                       cost.algorithm == NcclAlgorithm::nvls_collnet;
  const bool pat = cost.algorithm == NcclAlgorithm::pat;
  const bool broadcast = collective == CollectiveOp::broadcast;
  // What this rank sends: a tree or CollNet S; a broadcast chain S but its last rank; a ring or
  // PAT 2(n-1)/n S (all-reduce) or (n-1)/n S (reduce-scatter, all-gather); NVLS's all-reduce S to
  // the switch and back (the next rank's link), its all-gather and reduce-scatter (n-1)/n S.
  const double ring_share =
      cost.algorithm == NcclAlgorithm::nvls && collective == CollectiveOp::all_reduce
          ? 1.0
          : comm::bus_factor(collective, n);
  const int r = broadcast ? g.index_of(root) : 0;
  const double sent = tree || collnet ? bytes
                      : broadcast     ? ((g.index_of(rank) - r + n) % n == n - 1 ? 0.0 : bytes)
                                      : ring_share * bytes;
  // The flows and their pacing, by the last rank to arrive only (Fabric::fused_plan).
  fabric_.fused_plan(s, [&] {
    // Flows that move what the algorithm moves, each paced to end `bytes / algbw` after the
    // latency: alone they take the model's time; sharing links with other traffic, longer.
    const double transfer = cost.algbw_Bps > 0 ? bytes / cost.algbw_Bps : 0;
    // The flows' shape depends on the group and the algorithm only, their bytes scale with the
    // array: built once per shape for S = 1 (O(N) each time made a 16k-GPU run crawl).
    const std::tuple<int, int, int, int> key{g.id, static_cast<int>(collective),
                                             static_cast<int>(cost.algorithm), broadcast ? r : -1};
    auto [it, fresh] = shapes_.try_emplace(key);
    NcclFlowShape& shape_of_flows = it->second;
    if (fresh) {
      std::vector<Flow> flows;
      auto next = [&](int k) { return g.ranks[static_cast<std::size_t>((k + 1) % n)]; };
      if (tree) {
        double worst = 0;
        int depth = 0;
        flows = tree_flows(fabric_, g, 1.0, &worst, &depth, nvls_tree);
      } else if (collnet) {
        flows = collnet_flows(fabric_, g, 1.0);
      } else if (pat) {
        flows = pat_flows(g, 1.0);
      } else if (broadcast) {
        for (int d = 0; d + 1 < n; ++d) // a chain from the root along the ring
          flows.push_back({g.ranks[static_cast<std::size_t>((r + d) % n)], next((r + d) % n), 1.0});
      } else {
        for (int k = 0; k < n; ++k)
          flows.push_back({g.ranks[static_cast<std::size_t>(k)], next(k), ring_share});
      }
      const Platform& platform = fabric_.platform();
      // A classic tree across the nodes of a star: only its edges between nodes run, the chains
      // inside the nodes are slept (NCCL's model prices them: algbw <= B_intra / 2). A star gives
      // a GPU one link, its NVLink, which the GPU's network traffic crosses too (GPU to PCIe to
      // NIC in the machine): there the chains (S each way a GPU pair) and the tree's NIC flows
      // would share it, and SimGrid's CM02 shares a link in inverse proportion to each flow's
      // route latency (network_cm02.cpp: sharing_penalty_ = latency), so a NIC flow of 20 us got
      // 1/20 of a 1 us chain flow's share and the NICs idled: a 2 x 8 A3 Mega 8 GiB tree took
      // 139.5 GB/s of algbw where NCCL's model gives 165.6 (DGX H100 156.2, the chains' 2S plus
      // the NICs' S/8 on one link). A fat tree runs a node's network traffic NIC to NIC, off the
      // GPU links: its chains run (165.1 there).
      const bool chains_slept =
          tree && !nvls_tree && shape.nodes > 1 && platform.nics.empty() && !fabric_.has_sites();
      if (chains_slept)
        std::erase_if(flows, [&](const Flow& f) {
          return f.src / platform.gpus_per_node == f.dst / platform.gpus_per_node;
        });
      // Folded fat tree: the busiest leaf's uplinks, over every node's flows.
      if (!platform.nics.empty())
        shape_of_flows.uplink_s_per_byte = fabric_.uplink_time(flows);
      // NVLSTree on a star: SimGrid runs one flow per tree edge and direction (the NVLS inside the
      // nodes is priced by the model), from here on: what the flows take alone is theirs.
      const bool aggregated = nvls_tree && aggregate_nvls_tree_flows(fabric_, g, flows);
      // SimGrid 3.32 ignores a host-to-host comm's rate, so the pace is slept: the flows run at
      // link speed after a wait of the model's latency plus the time its pace adds to theirs
      // (alone). Sharing links with other traffic, they still take longer than the model says.
      std::map<int, double> sent_by; // a GPU's flows share its link (the tree's two edges)
      for (const auto& f : flows) {
        shape_of_flows.route_s = std::max(shape_of_flows.route_s, fabric_.latency(f.src, f.dst));
        const double own = chains_slept ? (sent_by[f.src] += f.bytes) : f.bytes;
        shape_of_flows.unpaced_s_per_byte =
            std::max(shape_of_flows.unpaced_s_per_byte, own / fabric_.bandwidth(f.src, f.dst));
      }
      if (tree) {
        // Both trees cross a node's NICs (S each way on 2 nodes, 2S from 4 on:
        // nccl_tree_nic_load); a chain's middle GPU sends 2S.
        auto& u = shape_of_flows.unpaced_s_per_byte;
        if (!nvls_tree && !chains_slept)
          u = std::max(u, 2 / shape.intra_Bps);
        // The model's net_Bps is the route's narrowest link, a GPU's where that is below the
        // pooled NICs; the aggregated flows and the tree's edges on a star each cross their own
        // GPU link (counted above), and their node's NIC link with the node's whole load: at the
        // NIC link's own rate.
        const double nic_link_Bps =
            aggregated || chains_slept ? fabric_.nic_Bps() * platform.nics_per_node : shape.net_Bps;
        if (shape.nodes > 1)
          u = std::max(u, comm::nccl_tree_nic_load(shape.nodes) / nic_link_Bps);
      }
      // CollNet's flows share their node's NIC link (S each way a node), PAT's their rank's
      // ((n-1)/n S, every step's flow at once): what they take alone is the shared link's time.
      if ((collnet || pat) && shape.nodes > 1) {
        const double nic_link_Bps = platform.nics.empty() && !pat
                                        ? fabric_.nic_Bps() * platform.nics_per_node
                                        : shape.net_Bps;
        auto& u = shape_of_flows.unpaced_s_per_byte;
        u = std::max(u, (pat ? comm::bus_factor(collective, n) : 1.0) / nic_link_Bps);
      }
      // Only the flows that run: all, or the representative node's (sim/rank_classes.h).
      std::erase_if(flows, [&](const Flow& f) { return !platform.classes.simulated(f.src); });
      shape_of_flows.flows = std::move(flows);
    }
    std::vector<Flow> flows = shape_of_flows.flows;
    for (auto& f : flows)
      f.bytes *= bytes;
    const double unpaced = shape_of_flows.unpaced_s_per_byte * bytes;
    // Folded on an oversubscribed fat tree: what the busiest cable above the leaves adds to the
    // flows' own time. In full the paced wait comes first and the flows then share the cables, so
    // the cable's excess adds to the wait, whatever the model's transfer time.
    const double uplinks = shape_of_flows.uplink_s_per_byte * bytes;
    return Fabric::Plan{std::max(0.0, cost.latency_s - shape_of_flows.route_s) +
                            std::max(0.0, transfer - unpaced) + std::max(0.0, uplinks - unpaced),
                        std::move(flows)};
  });
  return {sent, comm::nccl_label(cost.algorithm, cost.protocol, shape.nodes > 1)};
}

} // namespace overlapsim::sim::collective
