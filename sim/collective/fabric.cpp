#include "sim/collective/fabric.h"

#include "hw/fat_tree_route.h"

#include "comm/nccl_p2p.h"
#include "runtime/collective_size.h"
#include "scenario/collective_shape.h"
#include "sim/collective/position_siblings.h"

#include <algorithm>
#include <limits>
#include <map>
#include <unordered_set>

namespace overlapsim::sim::collective {

namespace sg4 = simgrid::s4u;

Instance::Instance() : done(sg4::Semaphore::create(0)) {}

Fabric::Fabric(const Platform& platform, const scenario::ClusterSpec& cluster,
               const Topology& topology)
    : platform_(platform), topology_(topology), fidelity_(cluster.collectives),
      nccl_generation_(scenario::nccl_generation_of(cluster)),
      nccl_protocol_(comm::nccl_protocol_of(cluster.nccl_protocol)),
      nic_Bps_(cluster.inter_node.bandwidth_Bps), gpu_(cluster.gpu),
      interference_(platform,
                    std::any_of(cluster.node_types.begin(), cluster.node_types.end(),
                                [](const auto& t) { return t.gpu.any_comm_interference(); }) ||
                        cluster.gpu.any_comm_interference()),
      compute_interference_(
          platform, std::any_of(cluster.node_types.begin(), cluster.node_types.end(),
                                [](const auto& t) { return t.gpu.any_compute_interference(); }) ||
                        cluster.gpu.any_compute_interference()) {
  for (const auto& type : cluster.node_types)
    type_gpus_.push_back(type.gpu);
  if (!type_gpus_.empty())
    for (int n = 0; n < cluster.nodes; ++n)
      node_type_.push_back(cluster.node_type_of(n));
  gpus_per_node_ = cluster.gpus_per_node;
  reverse_busy_s_ = {cluster.intra_node.reverse_busy_s, cluster.inter_node.reverse_busy_s,
                     cluster.wan.reverse_busy_s};
  if (cluster.sites.size() > 1) {
    site_of_node_.assign(static_cast<std::size_t>(cluster.nodes), 0);
    for (std::size_t s = 0; s < cluster.sites.size(); ++s)
      for (int node : cluster.sites[s].nodes)
        site_of_node_[static_cast<std::size_t>(node)] = static_cast<int>(s);
  }
}

Fabric::~Fabric() = default;

const hw::GpuSpec& Fabric::gpu_of(int rank) const {
  if (node_type_.empty())
    return gpu_;
  const int t = node_type_[static_cast<std::size_t>(rank / gpus_per_node_)];
  return t < 0 ? gpu_ : type_gpus_[static_cast<std::size_t>(t)];
}
double Fabric::comm_share(const Scope& s, int rank) const {
  return gpu_of(rank).comm_interference_of(calibration_op_name(s.op));
}
double Fabric::compute_share(const Scope& s, int rank) const {
  return gpu_of(rank).compute_interference_of(calibration_op_name(s.op));
}

std::pair<double, double> Fabric::route(int src, int dst) {
  // Over the flow's lanes (Platform::lane): the slowest one's latency, their narrowest links'
  // bandwidths summed.
  double lat = 0, bw = 0;
  for (int k = 0; k < platform_.lanes(src, dst); ++k) {
    const Platform::Lane lane = platform_.lane(src, dst, k);
    const auto measure = [&] {
      std::vector<sg4::Link*> links;
      double lane_latency = 0;
      lane.from->route_to(lane.to, links, &lane_latency);
      double narrowest = std::numeric_limits<double>::infinity();
      for (auto* l : links)
        narrowest = std::min(narrowest, platform_.link_bandwidth(l));
      return std::pair{lane_latency, narrowest};
    };
    // Unfolded, routes_ keeps the rank pair's result: no second map per pair.
    std::pair<double, double> r;
    if (platform_.classes.folded) {
      auto [it, fresh] = lane_routes_.try_emplace({lane.from, lane.to});
      if (fresh)
        it->second = measure();
      r = it->second;
    } else {
      r = measure();
    }
    lat = std::max(lat, r.first);
    bw += r.second;
  }
  return {lat, bw};
}

double Fabric::latency(int src, int dst) {
  if (platform_.classes.folded)
    return route(src, dst).first;
  const std::uint64_t key =
      (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
  auto it = routes_.find(key);
  if (it == routes_.end())
    it = routes_.emplace(key, route(src, dst)).first;
  return it->second.first;
}

double Fabric::bandwidth(int src, int dst) {
  if (platform_.classes.folded)
    return route(src, dst).second;
  latency(src, dst);
  return routes_.at((static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst))
      .second;
}

double Fabric::ring_max_latency(const Group& g) {
  auto [it, fresh] = ring_latency_.try_emplace(g.id, 0.0);
  if (fresh)
    for (int i = 0; i < g.size(); ++i)
      it->second =
          std::max(it->second, latency(g.ranks[static_cast<std::size_t>(i)],
                                       g.ranks[static_cast<std::size_t>((i + 1) % g.size())]));
  return it->second;
}

double Fabric::ring_min_bandwidth(const Group& g) {
  auto [it, fresh] = ring_bandwidth_.try_emplace(g.id, std::numeric_limits<double>::infinity());
  if (fresh)
    for (int i = 0; i < g.size(); ++i)
      it->second =
          std::min(it->second, bandwidth(g.ranks[static_cast<std::size_t>(i)],
                                         g.ranks[static_cast<std::size_t>((i + 1) % g.size())]));
  return it->second;
}

const Split* Fabric::split(const Group& g) {
  return make_split(g, false, splits_[g.id]);
}

const Split* Fabric::site_split(const Group& g) {
  if (site_of_node_.empty())
    return nullptr;
  return make_split(g, true, site_splits_[g.id]);
}

const Split* Fabric::make_split(const Group& g, bool by_site, std::unique_ptr<Split>& slot) {
  if (slot)
    return slot->intra.empty() ? nullptr : slot.get();
  slot = std::make_unique<Split>();
  std::vector<std::vector<int>> members; // per node (or site), in order of first member
  std::unordered_map<int, std::size_t> index_of_node;
  std::vector<std::pair<int, int>> place; // per member: (its node's index, its position there)
  for (int r : g.ranks) {
    const int node = by_site ? site_of_node_[static_cast<std::size_t>(topology_.node_of(r))]
                             : topology_.node_of(r);
    const auto [it, fresh] = index_of_node.try_emplace(node, members.size());
    if (fresh)
      members.emplace_back();
    auto& m = members[it->second];
    place.emplace_back(static_cast<int>(it->second), static_cast<int>(m.size()));
    m.push_back(r);
  }
  const std::size_t per_node = members.front().size();
  const bool even = std::all_of(members.begin(), members.end(),
                                [&](const auto& m) { return m.size() == per_node; });
  // Nothing to gain: the caller falls back to a ring. (Across sites one rank per site still
  // splits: the intra phases are empty and the cross ring is the WAN ring.)
  if (!even || members.size() < 2 || (per_node < 2 && !by_site))
    return nullptr;
  for (const auto& m : members)
    slot->intra.push_back(&topology_.group(m));
  for (std::size_t p = 0; p < per_node; ++p) {
    std::vector<int> cross;
    for (const auto& m : members)
      cross.push_back(m[p]);
    slot->cross.push_back(&topology_.group(cross));
  }
  for (const auto& [node, position] : place) {
    slot->node_index.push_back(node);
    slot->position.push_back(position);
  }
  return slot.get();
}

const comm::NcclShape& Fabric::nccl_shape(const Group& g) {
  auto [it, fresh] = nccl_shapes_.try_emplace(g.id);
  if (!fresh)
    return it->second;
  comm::NcclShape& shape = it->second;
  shape.ranks = g.size();
  std::unordered_set<int> nodes;
  for (int r : g.ranks)
    nodes.insert(topology_.node_of(r));
  shape.nodes = static_cast<int>(nodes.size());
  if (const Split* sp = split(g)) {
    const Group& intra = *sp->intra.front();
    const Group& cross = *sp->cross.front();
    shape.per_node = intra.size();
    shape.intra_Bps = ring_min_bandwidth(intra);
    shape.intra_latency_s = ring_max_latency(intra);
    // The route between two nodes' GPUs: its narrowest link is the node's pooled NICs (or a
    // WAN), shared by the node's rings or trees, so it is the node's network bandwidth. On a fat
    // tree it is one rail's: NCCL spreads the channels over the NICs the node's members use.
    shape.net_Bps = ring_min_bandwidth(cross);
    shape.net_heads = std::min(shape.per_node, platform_.nics_per_node);
    shape.net_nics = platform_.nics_per_node;
    if (!platform_.nics.empty()) {
      std::unordered_set<int> nics;
      for (const int r : intra.ranks)
        nics.insert(platform_.nic_of(r));
      shape.net_Bps *= static_cast<double>(nics.size());
      shape.net_heads = static_cast<int>(nics.size());
      shape.net_nics = shape.net_heads;
    }
    shape.net_latency_s = ring_max_latency(cross);
  } else if (shape.nodes == 1) {
    shape.per_node = g.size();
    shape.intra_Bps = ring_min_bandwidth(g);
    shape.intra_latency_s = ring_max_latency(g);
  } else {
    // Uneven over nodes (or one GPU per node): a ring only, paced by its slowest hop.
    shape.even = g.size() == shape.nodes; // one rank per node: the tree is NCCL's tree
    shape.per_node = shape.even ? 1 : g.size();
    shape.intra_Bps = ring_min_bandwidth(g);
    shape.intra_latency_s = 0;
    shape.net_Bps = ring_min_bandwidth(g);
    shape.net_latency_s = ring_max_latency(g);
  }
  // A GPU's own NICs: where NCCL's p2p crosses nodes (comm/nccl_p2p.h).
  const comm::GpuRail rail =
      comm::gpu_rail(platform_.nics_per_node, platform_.gpus_per_node, nic_Bps_);
  shape.gpu_nics = rail.nics;
  shape.gpu_net_Bps = rail.Bps;
  return shape;
}

int Fabric::link_class(int a, int b) const {
  const int na = topology_.node_of(a), nb = topology_.node_of(b);
  if (na == nb)
    return 0;
  if (site_of_node_.empty() ||
      site_of_node_[static_cast<std::size_t>(na)] == site_of_node_[static_cast<std::size_t>(nb)])
    return 1;
  return 2;
}

void Fabric::add_class(CollectiveOutcome& out, int a, int b, double bytes) const {
  const int c = link_class(a, b);
  if (c == 1)
    out.inter_node_bytes += bytes;
  else if (c == 2)
    out.wan_bytes += bytes;
}

double Fabric::uplink_time(const std::vector<Flow>& flows) const {
  const auto& trees = platform_.fat_tree;
  if (!platform_.classes.folded || !trees)
    return 0;
  const int per_node = platform_.gpus_per_node;
  if (!trees->has_sites()) {
    const hw::FatTree& tree = trees->trees.front();
    if (tree.oversubscription() <= 1)
      return 0;
    // Leaves that hold several GPU positions' NICs carry the other positions' groups too
    // (position_siblings.h); with a rail per GPU those reach leaves of their own, but above two
    // levels the rails' leaves share the switches above them.
    const bool shared = tree.placement == hw::FabricSpec::Placement::node ||
                        platform_.nics_per_node != per_node || tree.levels > 2;
    std::vector<Flow> siblings;
    if (shared)
      siblings = with_position_siblings(flows, per_node);
    // Every cable above the leaves as the full tree routes each flow (d-mod-k,
    // hw/fat_tree_route.h): flows whose destinations agree modulo a leaf's up ports share a cable
    // there, where spreading a leaf's bytes evenly over its uplinks saw none (the fold 31% fast
    // on one 128 MB NVLSTree all-reduce over 32 nodes of leaf-spine-2to1; docs/ARCHITECTURE.md,
    // "Rank classes").
    std::unordered_map<hw::CableKey, double> load;
    std::vector<hw::CableKey> cables;
    for (const auto& f : shared ? siblings : flows) {
      if (f.src / per_node == f.dst / per_node)
        continue;
      const int lanes = platform_.lanes(f.src, f.dst);
      for (int k = 0; k < lanes; ++k) {
        const int rail = lanes == 1 ? platform_.nic_of(f.src) : k;
        cables.clear();
        hw::dmodk_cables(tree, tree.slot_of(f.src / per_node, rail),
                         tree.slot_of(f.dst / per_node, rail), cables);
        for (const hw::CableKey c : cables)
          load[c] += f.bytes / lanes;
      }
    }
    double busiest = 0;
    for (const auto& [cable, bytes] : load)
      busiest = std::max(busiest, bytes);
    return busiest / nic_Bps_;
  }
  // WAN sites, a fat tree each (hw/site_fat_trees.h): bytes per leaf switch, keyed by (site,
  // leaf), loaded evenly over its uplinks (the d-mod-k hold above is not built across sites), and
  // per site through its gateway's one cable, which every flow to or from another site crosses.
  const hw::FatTree& tree = trees->trees.front();
  const bool shared =
      tree.placement == hw::FabricSpec::Placement::node || platform_.nics_per_node != per_node;
  std::vector<Flow> siblings;
  if (shared)
    siblings = with_position_siblings(flows, per_node);
  std::map<std::pair<int, long long>, double> up, down;
  std::map<int, double> gateway_out, gateway_in;
  const auto leaf = [&](int node, long long port) {
    return std::pair{trees->site_of(node), port / trees->of(node).leaf_down};
  };
  for (const auto& f : shared ? siblings : flows) {
    const int lanes = platform_.lanes(f.src, f.dst);
    const int a_node = f.src / per_node, b_node = f.dst / per_node;
    if (a_node == b_node)
      continue;
    for (int k = 0; k < lanes; ++k) {
      const int rail = lanes == 1 ? platform_.nic_of(f.src) : k;
      const double bytes = f.bytes / lanes;
      const long long a = trees->slot(a_node, rail), b = trees->slot(b_node, rail);
      if (const int level = trees->common_level(a_node, b_node, rail); level > 1) {
        up[leaf(a_node, a)] += bytes;
        down[leaf(b_node, b)] += bytes;
      } else if (level < 0) {
        // Up the sender's tree to its gateway, down the receiver's from theirs.
        const int sa = trees->site_of(a_node), sb = trees->site_of(b_node);
        const long long ga = trees->gateway[static_cast<std::size_t>(sa)];
        const long long gb = trees->gateway[static_cast<std::size_t>(sb)];
        if (trees->gateway_level(a_node, rail) > 1) {
          up[leaf(a_node, a)] += bytes;
          down[leaf(a_node, ga)] += bytes;
        }
        if (trees->gateway_level(b_node, rail) > 1) {
          up[leaf(b_node, gb)] += bytes;
          down[leaf(b_node, b)] += bytes;
        }
        gateway_out[sa] += bytes;
        gateway_in[sb] += bytes;
      }
    }
  }
  double busiest = 0; // seconds
  for (const auto* leaves : {&up, &down})
    for (const auto& [at, bytes] : *leaves)
      if (const auto& t = trees->trees[static_cast<std::size_t>(at.first)];
          t.oversubscription() > 1)
        busiest = std::max(busiest, bytes / (t.leaf_up * nic_Bps_));
  double gateway = 0;
  for (const auto* sites : {&gateway_out, &gateway_in})
    for (const auto& [site, bytes] : *sites)
      gateway = std::max(gateway, bytes);
  return std::max(busiest, gateway / nic_Bps_);
}

const std::vector<int>& Fabric::simulated_members(const Group& g) {
  if (!platform_.classes.folded)
    return g.ranks;
  auto [it, fresh] = simulated_members_.try_emplace(g.id);
  if (fresh)
    for (const int r : g.ranks)
      if (platform_.classes.simulated(r))
        it->second.push_back(r);
  return it->second;
}

} // namespace overlapsim::sim::collective
