#include "sim/collectives.h"

#include "comm/ring_shape.h"

#include "runtime/collective_size.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <unordered_set>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

// The ranks of one fused collective: every rank but the last to arrive waits on `done`; the last
// one drives the flows of all ranks and releases them.
struct Network::Instance {
  int arrived = 0;
  double bytes = 0; // a message's size, from its sender
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);
  // The member (by order of arrival) that ends `late_by` after the others; -1: none.
  int late_arrival = -1;
  double late_by = 0;
};

// A group whose members spread evenly over nodes: `intra` holds the members of each node (in group
// order), `cross` the members at the same position on every node.
struct Network::Split {
  std::vector<const Group*> intra; // per node
  std::vector<const Group*> cross; // per position
  std::vector<int> node_index;     // per member: which intra group
  std::vector<int> position;       // per member: which cross group
};

namespace {
char payload_token; // flows carry no data, only a size; every put sends this address
char* payload_sink; // and every get writes it here

int tree_depth(int n) {
  return n <= 1 ? 0 : static_cast<int>(std::floor(std::log2(n)));
}

} // namespace

Network::Network(const Platform& platform, const scenario::ClusterSpec& cluster,
                 const Topology& topology)
    : platform_(platform), topology_(topology), fidelity_(cluster.collectives),
      algorithm_(cluster.collective_algorithm), collective_bytes_(cluster.collective_bytes),
      local_collectives_(cluster.local_collectives),
      nccl_generation_(comm::nccl_generation(cluster.gpu, cluster.intra_node, cluster.gpus_per_node,
                                             cluster.inter_node)),
      nccl_protocol_(comm::nccl_protocol_of(cluster.nccl_protocol)),
      nic_Bps_(cluster.inter_node.bandwidth_Bps), gpu_(cluster.gpu),
      interference_(platform, cluster.gpu.any_comm_interference()),
      compute_interference_(platform, cluster.gpu.any_compute_interference()) {
  reverse_busy_s_ = {cluster.intra_node.reverse_busy_s, cluster.inter_node.reverse_busy_s,
                     cluster.wan.reverse_busy_s};
  if (cluster.sites.size() > 1) {
    site_of_node_.assign(static_cast<std::size_t>(cluster.nodes), 0);
    for (std::size_t s = 0; s < cluster.sites.size(); ++s)
      for (int node : cluster.sites[s].nodes)
        site_of_node_[static_cast<std::size_t>(node)] = static_cast<int>(s);
  }
}

Network::~Network() = default;

double Network::comm_share(const Scope& s) const {
  return gpu_.comm_interference_of(calibration_op_name(s.op));
}
double Network::compute_share(const Scope& s) const {
  return gpu_.compute_interference_of(calibration_op_name(s.op));
}

sg4::Mailbox* Network::mailbox(const Scope& s, int src, int dst) {
  auto name = fmt::format("g{}.{}:{}>{}", s.group.id, s.tag, src, dst);
  auto& slot = mailboxes_[name];
  if (!slot)
    slot = sg4::Mailbox::by_name(name);
  return slot;
}

std::pair<double, double> Network::route(int src, int dst) {
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
        narrowest = std::min(narrowest, l->get_bandwidth());
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

double Network::latency(int src, int dst) {
  if (platform_.classes.folded)
    return route(src, dst).first;
  const std::uint64_t key =
      (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
  auto it = routes_.find(key);
  if (it == routes_.end())
    it = routes_.emplace(key, route(src, dst)).first;
  return it->second.first;
}

double Network::bandwidth(int src, int dst) {
  if (platform_.classes.folded)
    return route(src, dst).second;
  latency(src, dst);
  return routes_.at((static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst))
      .second;
}

double Network::ring_max_latency(const Group& g) {
  auto [it, fresh] = ring_latency_.try_emplace(g.id, 0.0);
  if (fresh)
    for (int i = 0; i < g.size(); ++i)
      it->second =
          std::max(it->second, latency(g.ranks[static_cast<std::size_t>(i)],
                                       g.ranks[static_cast<std::size_t>((i + 1) % g.size())]));
  return it->second;
}

double Network::ring_min_bandwidth(const Group& g) {
  auto [it, fresh] = ring_bandwidth_.try_emplace(g.id, std::numeric_limits<double>::infinity());
  if (fresh)
    for (int i = 0; i < g.size(); ++i)
      it->second =
          std::min(it->second, bandwidth(g.ranks[static_cast<std::size_t>(i)],
                                         g.ranks[static_cast<std::size_t>((i + 1) % g.size())]));
  return it->second;
}

const Network::Split* Network::split(const Group& g) {
  return make_split(g, false, splits_[g.id]);
}

const Network::Split* Network::site_split(const Group& g) {
  if (site_of_node_.empty())
    return nullptr;
  return make_split(g, true, site_splits_[g.id]);
}

const Network::Split* Network::make_split(const Group& g, bool by_site,
                                          std::unique_ptr<Split>& slot) {
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

void Network::fused(const Scope& s, double wait,
                    const std::function<std::vector<Flow>()>& make_flows) {
  fused_plan(s, [&] {
    Plan p{wait, make_flows()};
    if (const double uplinks = uplink_time(p.flows); uplinks > 0) {
      // Alpha-beta flows run at link speed: held to the uplinks' time where that is longer.
      double alone = 0;
      for (const auto& f : p.flows)
        alone = std::max(alone, f.bytes / bandwidth(f.src, f.dst));
      p.wait += std::max(0.0, uplinks - alone);
    }
    return p;
  });
}

double Network::uplink_time(const std::vector<Flow>& flows) const {
  const auto& tree = platform_.fat_tree;
  if (!platform_.classes.folded || !tree || tree->oversubscription() <= 1)
    return 0;
  const int per_node = platform_.gpus_per_node;
  std::unordered_map<long long, double> up, down; // bytes per leaf switch
  for (const auto& f : flows) {
    const int lanes = platform_.lanes(f.src, f.dst);
    if (f.src / per_node == f.dst / per_node)
      continue;
    for (int k = 0; k < lanes; ++k) {
      const int rail = lanes == 1 ? platform_.nic_of(f.src) : k;
      const long long a = tree->slot_of(f.src / per_node, rail);
      const long long b = tree->slot_of(f.dst / per_node, rail);
      if (tree->common_level(a, b) > 1) {
        up[a / tree->leaf_down] += f.bytes / lanes;
        down[b / tree->leaf_down] += f.bytes / lanes;
      }
    }
  }
  double busiest = 0;
  for (const auto* leaves : {&up, &down})
    for (const auto& [leaf, bytes] : *leaves)
      busiest = std::max(busiest, bytes);
  return busiest / (tree->leaf_up * nic_Bps_);
}

namespace {
// A well-mixed hash of a collective's instance key (splitmix64's finaliser): which member of a
// collective ends last, where that is chance, without a generator whose state depends on the
// order the actors run in.
std::uint64_t mixed(const std::tuple<int, std::int64_t, int>& key) {
  auto x = static_cast<std::uint64_t>(std::get<0>(key)) * 0x9E3779B97F4A7C15ULL ^
           static_cast<std::uint64_t>(std::get<1>(key)) * 0xBF58476D1CE4E5B9ULL ^
           static_cast<std::uint64_t>(std::get<2>(key));
  x ^= x >> 30;
  x *= 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 27;
  x *= 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
} // namespace

void Network::fused_plan(const Scope& s, const std::function<Plan()>& plan) {
  const std::tuple<int, std::int64_t, int> key{s.group.id, s.seq, s.tag};
  auto& slot = instances_[key];
  if (!slot)
    slot = std::make_shared<Instance>();
  const auto instance = slot; // keep it alive while waiting
  const std::vector<int>& members = simulated_members(s.group);
  const int n = static_cast<int>(members.size());
  if (const int arrival = instance->arrived++; arrival + 1 < n) {
    instance->done->acquire();
    if (arrival == instance->late_arrival)
      sg4::this_actor::sleep_for(instance->late_by);
    return;
  }
  instances_.erase(key);
  const RankClasses& classes = platform_.classes;
  // Every rank is in: data moves from now on, on every member's GPU.
  const double comm_share_of_op = comm_share(s);
  for (const int r : members)
    interference_.begin(r, comm_share_of_op);
  const auto computed = compute_interference_.snapshot(members);
  // The latencies of every step but the last (which each flow pays itself), then one flow per
  // sender with all its steps' bytes, between the ranks' own hosts. Folded, the flows the
  // representative node sends stand for every node's (sim/rank_classes.h).
  const auto [wait, flows] = plan();
  if (wait > 0)
    sg4::this_actor::sleep_for(wait);
  std::vector<sg4::CommPtr> comms;
  comms.reserve(flows.size());
  for (const auto& [src, dst, bytes] : flows) {
    if (!classes.simulated(src))
      continue;
    start_flow(src, dst, bytes, comms);
  }
  sg4::Comm::wait_all(comms);
  compute_interference_.make_up(members, computed, compute_share(s));
  for (const int r : members)
    interference_.end(r, comm_share_of_op);
  // The member that called last ends last where the profile measured a lag: its peers' pieces
  // waited for it, its own reach them one after the other (Gloo's pieced reduce-scatter over an
  // emulated 100 Mbit/s link: the late caller ended 5-10 ms after the other in 501 of 502 steps,
  // whatever the gap between the calls). Where it measured only a spread of the ends, which
  // member ends last is chance: one picked from the instance's key, the same in every rerun.
  // Read before the release: the released members drop it.
  if (const auto late = late_ends_.find(key); late != late_ends_.end()) {
    instance->late_by = late->second.seconds;
    instance->late_arrival =
        late->second.last_caller ? n - 1 : static_cast<int>(mixed(key) % static_cast<unsigned>(n));
  }
  for (int i = 1; i < n; ++i)
    instance->done->release();
  if (instance->late_arrival == n - 1)
    sg4::this_actor::sleep_for(instance->late_by);
}

void Network::start_flow(int src, int dst, double bytes, std::vector<sg4::CommPtr>& comms) {
  for (int k = 0; k < platform_.lanes(src, dst); ++k) {
    const Platform::Lane lane = platform_.lane(src, dst, k);
    auto comm = sg4::Comm::sendto_init(lane.from, lane.to);
    comm->set_payload_size(static_cast<std::uint64_t>(bytes * lane.share));
    comm->start();
    comms.push_back(std::move(comm));
  }
}

const std::vector<int>& Network::simulated_members(const Group& g) {
  if (!platform_.classes.folded)
    return g.ranks;
  auto [it, fresh] = simulated_members_.try_emplace(g.id);
  if (fresh)
    for (const int r : g.ranks)
      if (platform_.classes.simulated(r))
        it->second.push_back(r);
  return it->second;
}

void Network::point_to_point(const Scope& s, int self, int src, int dst, double bytes) {
  const PairKey pair{s.group.id, s.tag, src, dst};
  const std::int64_t k = self == src ? sends_posted_[pair]++ : recvs_posted_[pair]++;
  const std::tuple<int, int, int, int, std::int64_t> key{s.group.id, s.tag, src, dst, k};
  auto& slot = messages_[key];
  if (!slot)
    slot = std::make_shared<Instance>();
  const auto instance = slot;
  if (self == src)
    instance->bytes = bytes;
  if (++instance->arrived < 2) {
    instance->done->acquire();
    return;
  }
  messages_.erase(key);
  // Over TCP a message whose opposite direction carries one starts late (the receiver's notice
  // and the acknowledgements queue behind that data) and ramps up slowly: measured as a delay.
  const std::pair nodes{topology_.node_of(src), topology_.node_of(dst)};
  const double delay = reverse_busy_s_[static_cast<std::size_t>(link_class(src, dst))];
  if (delay > 0 && messages_moving_[{nodes.second, nodes.first}] > 0)
    sg4::this_actor::sleep_for(delay);
  ++messages_moving_[nodes];
  const double comm_share_of_op = comm_share(s);
  interference_.begin(src, comm_share_of_op);
  interference_.begin(dst, comm_share_of_op);
  const std::vector<int> ends{src, dst};
  const auto computed = compute_interference_.snapshot(ends);
  std::vector<sg4::CommPtr> comms;
  start_flow(src, dst, instance->bytes, comms);
  sg4::Comm::wait_all(comms);
  compute_interference_.make_up(ends, computed, compute_share(s));
  interference_.end(src, comm_share_of_op);
  interference_.end(dst, comm_share_of_op);
  --messages_moving_[nodes];
  instance->done->release();
}

void Network::exchange(const Scope& s, int self, int dst, double send_bytes, int src) {
  // A ring step of the `steps` fidelity: its GPU counts as moving data for the whole step (the
  // wait for the neighbour's message included; the fused default tells the two apart).
  const double comm_share_of_op = comm_share(s);
  interference_.begin(self, comm_share_of_op);
  const std::vector<int> me{self};
  const auto computed = compute_interference_.snapshot(me);
  sg4::CommPtr send, recv;
  if (dst >= 0) {
    send = mailbox(s, self, dst)->put_async(&payload_token, static_cast<std::uint64_t>(send_bytes));
  }
  if (src >= 0)
    recv = mailbox(s, src, self)->get_async<char>(&payload_sink);
  if (send)
    send->wait();
  if (recv)
    recv->wait();
  compute_interference_.make_up(me, computed, compute_share(s));
  interference_.end(self, comm_share_of_op);
}

CollectiveOutcome Network::ring_steps(int rank, const Scope& s, int steps, double chunk) {
  const Group& g = s.group;
  const int n = g.size();
  if (fidelity_ == scenario::CollectiveFidelity::steps) {
    const int i = g.index_of(rank);
    const int next = g.ranks[static_cast<std::size_t>((i + 1) % n)];
    const int prev = g.ranks[static_cast<std::size_t>((i + n - 1) % n)];
    for (int k = 0; k < steps; ++k)
      exchange(s, rank, next, chunk, prev);
    return {chunk * steps, "ring/steps"};
  }
  // Each step waits for the slowest hop, so the steps but the last cost its latency; the last is
  // paid by the flows themselves.
  fused(s, (steps - 1) * ring_max_latency(g), [&] {
    std::vector<Flow> flows;
    for (int k = 0; k < n; ++k)
      flows.push_back({g.ranks[static_cast<std::size_t>(k)],
                       g.ranks[static_cast<std::size_t>((k + 1) % n)], chunk * steps});
    return flows;
  });
  return {chunk * steps, "ring/fused"};
}

// Pipelined chain along the ring: broadcast flows away from the root, reduce towards it. Every rank
// but the chain's end forwards the whole array; the pipeline costs (n-1) latencies plus one
// transfer of S at the bottleneck (NCCL's ring broadcast with many small chunks).
CollectiveOutcome Network::ring_of(int rank, const Scope& s, double array) {
  // The ring's steps and what each carries, as comm/ring_shape.h states them for s.op.
  const comm::RingShape r = comm::ring_shape(s.op, s.group.size());
  return ring_steps(rank, s, static_cast<int>(r.steps),
                    r.steps > 0 ? r.bus_factor * array / r.steps : 0.0);
}

CollectiveOutcome Network::ring_chain(int rank, const Scope& s, double bytes, int root,
                                      bool reduce) {
  const Group& g = s.group;
  const int n = g.size();
  const int r = g.index_of(root);
  auto distance = [&](int index) { return (index - r + n) % n; };
  // Broadcast: root -> ... -> root-1 (the last does not send). Reduce: root+1 -> ... -> root.
  auto sends = [&](int index) { return reduce ? distance(index) != 0 : distance(index) != n - 1; };
  auto receives = [&](int index) { return reduce ? distance(index) != 1 : distance(index) != 0; };
  const int i = g.index_of(rank);
  if (fidelity_ == scenario::CollectiveFidelity::steps) {
    // C chunks, each forwarded as soon as it has arrived: (n-2+C) chunk steps of alpha + S/(C B).
    // C = sqrt((n-2) S / (B alpha)) minimises that; the fused form is its limit with free latency
    // pipelining, so the two differ by about (n-2+C) alpha + (n-2) S / (C B).
    const int next = g.ranks[static_cast<std::size_t>((i + 1) % n)];
    const int prev = g.ranks[static_cast<std::size_t>((i + n - 1) % n)];
    const double alpha = std::max(ring_max_latency(g), 1e-9);
    const int chunks = std::clamp(
        static_cast<int>(std::sqrt(std::max(1, n - 2) * bytes / (ring_min_bandwidth(g) * alpha))),
        1, 4096);
    sg4::CommPtr pending;
    for (int k = 0; k < chunks; ++k) {
      if (receives(i))
        mailbox(s, prev, rank)->get<char>();
      if (sends(i)) {
        if (pending)
          pending->wait();
        pending = mailbox(s, rank, next)
                      ->put_async(&payload_token, static_cast<std::uint64_t>(bytes / chunks));
      }
    }
    if (pending)
      pending->wait();
    return {sends(i) ? bytes : 0.0, "ring/steps"};
  }
  fused(s, (n - 2) * ring_max_latency(g), [&] {
    std::vector<Flow> flows;
    for (int k = 0; k < n; ++k)
      if (sends(k))
        flows.push_back({g.ranks[static_cast<std::size_t>(k)],
                         g.ranks[static_cast<std::size_t>((k + 1) % n)], bytes});
    return flows;
  });
  return {sends(i) ? bytes : 0.0, "ring/fused"};
}

std::vector<Network::Flow> Network::tree_flows(const Group& g, double bytes, double* worst_latency,
                                               int* depth, bool nvls_intra) {
  // Chains inside the nodes carry the whole array each way; the two trees over the nodes' first
  // GPUs carry half each, up (reduce) and down (broadcast), all pipelined.
  const Split* sp = split(g);
  std::vector<std::vector<int>> nodes; // members per node
  if (sp)
    for (const Group* intra : sp->intra)
      nodes.push_back(intra->ranks);
  else
    nodes.push_back(g.ranks); // one node (or uneven): a single chain
  std::vector<Flow> flows;    // every rank builds it: trees serve small messages and groups
  double worst = 0;
  auto edge = [&](int a, int b, double amount) {
    flows.push_back({a, b, amount});
    flows.push_back({b, a, amount});
    worst = std::max(worst, latency(a, b));
  };
  for (const auto& members : nodes) {
    if (nvls_intra && members.size() > 1) {
      // NVLink SHARP: every GPU sends S to the switch and gets S back (as a ring of S flows).
      for (std::size_t i = 0; i < members.size(); ++i)
        flows.push_back({members[i], members[(i + 1) % members.size()], bytes});
      continue;
    }
    for (std::size_t i = 0; i + 1 < members.size(); ++i)
      edge(members[i], members[i + 1], bytes);
  }
  const int m = static_cast<int>(nodes.size());
  for (int tree : {0, 1}) // NCCL's double binary tree over the nodes
    for (int i = 0; i < m; ++i) {
      const int p = comm::nccl_tree_parent(i, tree, m);
      if (p < 0)
        continue;
      // NCCL runs a tree per channel and spreads the channels over the node's GPUs and NICs: the
      // tree edges between two nodes join every pair of same-position GPUs, each with its share.
      const auto& child = nodes[static_cast<std::size_t>(i)];
      const auto& parent = nodes[static_cast<std::size_t>(p)];
      const std::size_t lanes = std::min(child.size(), parent.size());
      for (std::size_t k = 0; k < lanes; ++k)
        edge(child[k], parent[k], bytes / 2 / static_cast<double>(lanes));
    }
  *worst_latency = worst;
  *depth = static_cast<int>(nodes.front().size()) - 1 + tree_depth(m);
  // Each member's bytes by link class, once per group: a tree's flows scale with the array, so
  // the shares hold for every size (classify splits a tree all-reduce's bytes with them).
  if (auto [it, fresh] = tree_shares_.try_emplace({g.id, nvls_intra}); fresh) {
    std::vector<std::array<double, 3>> own(static_cast<std::size_t>(g.size()));
    for (const auto& f : flows)
      own[static_cast<std::size_t>(g.index_of(f.src))]
         [static_cast<std::size_t>(link_class(f.src, f.dst))] += f.bytes;
    for (auto& shares : own)
      if (const double total = shares[0] + shares[1] + shares[2]; total > 0)
        for (double& x : shares)
          x /= total;
    it->second = std::move(own);
  }
  return flows;
}

bool Network::aggregate_nvls_tree_flows(const Group& g, std::vector<Flow>& flows) {
  // Only on a star (a node's NICs pooled into one link): a fat tree routes each GPU position's
  // flow on its own rail, which these flows would mix.
  const Split* sp = split(g);
  if (!platform_.nics.empty() || !sp || !site_of_node_.empty())
    return false;
  const std::size_t per_node = sp->intra.front()->ranks.size();
  const int m = static_cast<int>(sp->intra.size());
  // A node takes part in at most 6 tree edges (a parent and two children per tree): each gets a
  // GPU of its own, so no GPU link carries two of them in one direction.
  if (per_node < 6 || m < 2)
    return false;
  // NVLS inside the nodes: NCCL's model prices it (the wait nccl_collective sleeps); its flows
  // would share nothing with the tree's but the GPUs' own NVLink links (issue 64.1). A tree edge
  // between two nodes: one flow each way with the edge's bytes, where NCCL's channels (a flow
  // per same-position GPU pair) cross the same pooled NIC links with the same bytes in all.
  std::vector<Flow> fewer;
  std::vector<std::size_t> used(static_cast<std::size_t>(m), 0);
  const auto gpu = [&](int node) {
    const auto& ranks = sp->intra[static_cast<std::size_t>(node)]->ranks;
    return ranks[used[static_cast<std::size_t>(node)]++ % per_node];
  };
  for (int tree : {0, 1})
    for (int i = 0; i < m; ++i) {
      const int p = comm::nccl_tree_parent(i, tree, m);
      if (p < 0)
        continue;
      const int child = gpu(i), parent = gpu(p);
      fewer.push_back({child, parent, 0.5});
      fewer.push_back({parent, child, 0.5});
    }
  flows = std::move(fewer);
  return true;
}

CollectiveOutcome Network::tree_all_reduce(const Scope& s, double bytes) {
  double worst = 0;
  int depth = 0;
  const auto flows = tree_flows(s.group, bytes, &worst, &depth, false);
  fused(s, (2 * depth - 1) * worst, [&] { return flows; });
  return {bytes, "tree/fused"};
}

const NcclShape& Network::nccl_shape(const Group& g) {
  auto [it, fresh] = nccl_shapes_.try_emplace(g.id);
  if (!fresh)
    return it->second;
  NcclShape& shape = it->second;
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
  return shape;
}

NcclCost Network::nccl_cost(const Group& g, double bytes, std::optional<NcclAlgorithm> only) {
  return comm::nccl_best_collective(nccl_generation_, nccl_shape(g), CollectiveOp::all_reduce,
                                    bytes, only, nccl_protocol_);
}

CollectiveOutcome Network::nccl_collective(int rank, const Scope& s, CollectiveOp collective,
                                           double bytes, std::optional<NcclAlgorithm> only,
                                           int root) {
  const Group& g = s.group;
  const int n = g.size();
  const NcclCost cost = comm::nccl_best_collective(nccl_generation_, nccl_shape(g), collective,
                                                   bytes, only, nccl_protocol_);
  const NcclShape& shape = nccl_shape(g);
  // Trees between nodes: NCCL's tree (chains inside the nodes) and NVLSTree (NVLS inside).
  const bool nvls_tree = cost.algorithm == NcclAlgorithm::nvls && shape.nodes > 1;
  const bool tree = cost.algorithm == NcclAlgorithm::tree || nvls_tree;
  const bool broadcast = collective == CollectiveOp::broadcast;
  // What this rank sends: a tree S; a broadcast chain S but its last rank; a ring 2(n-1)/n S
  // (all-reduce) or (n-1)/n S (reduce-scatter, all-gather) to the next rank; NVLS S to the switch
  // and back (the next rank's link).
  const double ring_share =
      cost.algorithm == NcclAlgorithm::nvls ? 1.0 : comm::bus_factor(collective, n);
  const int r = broadcast ? g.index_of(root) : 0;
  const double sent = tree        ? bytes
                      : broadcast ? ((g.index_of(rank) - r + n) % n == n - 1 ? 0.0 : bytes)
                                  : ring_share * bytes;
  // The flows and their pacing, by the last rank to arrive only (fused_plan).
  fused_plan(s, [&] {
    // Flows that move what the algorithm moves, each paced to end `bytes / algbw` after the
    // latency: alone they take the model's time; sharing links with other traffic, longer.
    const double transfer = cost.algbw_Bps > 0 ? bytes / cost.algbw_Bps : 0;
    // The flows' shape depends on the group and the algorithm only, their bytes scale with the
    // array: built once per shape for S = 1 (O(N) each time made a 16k-GPU run crawl).
    const std::tuple<int, int, int, int> key{g.id, static_cast<int>(collective),
                                             static_cast<int>(cost.algorithm), broadcast ? r : -1};
    auto [it, fresh] = nccl_flow_shapes_.try_emplace(key);
    FlowShape& shape_of_flows = it->second;
    if (fresh) {
      std::vector<Flow> flows;
      auto next = [&](int k) { return g.ranks[static_cast<std::size_t>((k + 1) % n)]; };
      if (tree) {
        double worst = 0;
        int depth = 0;
        flows = tree_flows(g, 1.0, &worst, &depth, nvls_tree);
      } else if (broadcast) {
        for (int d = 0; d + 1 < n; ++d) // a chain from the root along the ring
          flows.push_back({g.ranks[static_cast<std::size_t>((r + d) % n)], next((r + d) % n), 1.0});
      } else {
        for (int k = 0; k < n; ++k)
          flows.push_back({g.ranks[static_cast<std::size_t>(k)], next(k), ring_share});
      }
      // Folded fat tree: the busiest leaf's uplinks, over every node's flows.
      if (!platform_.nics.empty())
        shape_of_flows.uplink_s_per_byte = uplink_time(flows);
      // NVLSTree on a star: SimGrid runs one flow per tree edge and direction (the NVLS inside the
      // nodes is priced by the model), from here on: what the flows take alone is theirs.
      const bool aggregated = nvls_tree && aggregate_nvls_tree_flows(g, flows);
      // SimGrid 3.32 ignores a host-to-host comm's rate, so the pace is slept: the flows run at
      // link speed after a wait of the model's latency plus the time its pace adds to theirs
      // (alone). Sharing links with other traffic, they still take longer than the model says.
      for (const auto& f : flows) {
        shape_of_flows.route_s = std::max(shape_of_flows.route_s, latency(f.src, f.dst));
        shape_of_flows.unpaced_s_per_byte =
            std::max(shape_of_flows.unpaced_s_per_byte, f.bytes / bandwidth(f.src, f.dst));
      }
      if (tree) {
        // Both trees cross a node's NICs (S each way on 2 nodes, 2S from 4 on:
        // nccl_tree_nic_load); a chain's middle GPU sends 2S.
        auto& u = shape_of_flows.unpaced_s_per_byte;
        if (!nvls_tree)
          u = std::max(u, 2 / shape.intra_Bps);
        // The model's net_Bps is the route's narrowest link, a GPU's where that is below the
        // pooled NICs; the aggregated flows each cross their own GPU link, and their node's NIC
        // link with the node's whole load: at the NIC link's own rate.
        const double nic_link_Bps = aggregated ? nic_Bps_ * platform_.nics_per_node : shape.net_Bps;
        if (shape.nodes > 1)
          u = std::max(u, comm::nccl_tree_nic_load(shape.nodes) / nic_link_Bps);
      }
      // Only the flows that run: all, or the representative node's (sim/rank_classes.h).
      std::erase_if(flows, [&](const Flow& f) { return !platform_.classes.simulated(f.src); });
      shape_of_flows.flows = std::move(flows);
    }
    std::vector<Flow> flows = shape_of_flows.flows;
    for (auto& f : flows)
      f.bytes *= bytes;
    const double unpaced = shape_of_flows.unpaced_s_per_byte * bytes;
    // Folded on an oversubscribed fat tree: no shorter than the busiest leaf's uplinks allow.
    const double uplinks = shape_of_flows.uplink_s_per_byte * bytes;
    return Plan{std::max(0.0, cost.latency_s - shape_of_flows.route_s) +
                    std::max(0.0, transfer - unpaced) +
                    std::max(0.0, uplinks - std::max(transfer, unpaced)),
                std::move(flows)};
  });
  return {sent, comm::nccl_label(cost.algorithm, cost.protocol, shape.nodes > 1)};
}

CollectiveOutcome Network::tree_broadcast(const Scope& s, double bytes, int root) {
  // Two binary trees rooted at the root (group order rotated so the root is index 0), half each.
  const Group& g = s.group;
  const int n = g.size();
  const int r = g.index_of(root);
  auto rank_at = [&](int i) { return g.ranks[static_cast<std::size_t>((i + r) % n)]; };
  std::vector<Flow> flows;
  double worst = 0;
  for (bool mirrored : {false, true})
    for (int i = 1; i < n; ++i) {
      // The mirrored tree over indices 1..n-1 keeps the root at 0 on top of both.
      const int j = mirrored ? n - i : i;
      const int p = (j - 1) / 2;
      const int parent_index = mirrored && p > 0 ? n - p : p;
      flows.push_back({rank_at(parent_index), rank_at(i), bytes / 2});
      worst = std::max(worst, latency(rank_at(parent_index), rank_at(i)));
    }
  fused(s, (tree_depth(n) - 1) * worst, [&] { return flows; });
  return {bytes, "tree/fused"};
}

CollectiveOutcome Network::hierarchical_all_reduce(int rank, const Scope& s, double bytes) {
  return two_level_all_reduce(rank, s, bytes, *split(s.group), "hierarchical/fused",
                              "hierarchical/steps");
}

CollectiveOutcome Network::site_hierarchical_all_reduce(int rank, const Scope& s, double bytes) {
  return two_level_all_reduce(rank, s, bytes, *site_split(s.group), "sites/fused", "sites/steps");
}

int Network::link_class(int a, int b) const {
  const int na = topology_.node_of(a), nb = topology_.node_of(b);
  if (na == nb)
    return 0;
  if (site_of_node_.empty() ||
      site_of_node_[static_cast<std::size_t>(na)] == site_of_node_[static_cast<std::size_t>(nb)])
    return 1;
  return 2;
}

void Network::add_class(CollectiveOutcome& out, int a, int b, double bytes) const {
  const int c = link_class(a, b);
  if (c == 1)
    out.inter_node_bytes += bytes;
  else if (c == 2)
    out.wan_bytes += bytes;
}

void Network::classify(int rank, const CollectiveCall& call, CollectiveOutcome& out) const {
  if (out.bytes_sent <= 0 || out.classified)
    return; // nothing sent, or split where it ran (two-level all-reduces)
  const Group& g = *call.group;
  const std::string_view algorithm = out.algorithm;
  if (call.op == CollectiveOp::send) {
    add_class(out, rank, call.peer, out.bytes_sent);
    return;
  }
  if (call.op == CollectiveOp::all_reduce &&
      (algorithm.starts_with("tree/") || algorithm.starts_with("nvlstree/"))) {
    // As the rank's own chain and tree flows: trees chain inside nodes, NVLSTree uses NVLS.
    const bool nvls = algorithm.starts_with("nvlstree/");
    if (const auto it = tree_shares_.find({g.id, nvls}); it != tree_shares_.end()) {
      const auto& shares = it->second[static_cast<std::size_t>(g.index_of(rank))];
      out.inter_node_bytes += out.bytes_sent * shares[1];
      out.wan_bytes += out.bytes_sent * shares[2];
      return;
    }
  }
  if (call.op == CollectiveOp::all_to_all) { // bytes / n to every other member
    std::array<double, 3> peers{};
    for (int m : g.ranks)
      if (m != rank)
        peers[static_cast<std::size_t>(link_class(rank, m))] += 1;
    const double others = g.size() - 1.0;
    out.inter_node_bytes += out.bytes_sent * peers[1] / others;
    out.wan_bytes += out.bytes_sent * peers[2] / others;
    return;
  }
  // Alpha-beta rings and NCCL's, NVLS (S to the switch and back) and a per-layer table's time
  // (it reports a ring's bytes): to the next rank.
  if (algorithm.starts_with("ring/") || algorithm.starts_with("nvls/") || algorithm == "table") {
    const int i = g.index_of(rank);
    add_class(out, rank, g.ranks[static_cast<std::size_t>((i + 1) % g.size())], out.bytes_sent);
    return;
  }
  int worst = 0, far = rank;
  for (int m : g.ranks)
    if (const int c = link_class(rank, m); c > worst)
      worst = c, far = m;
  add_class(out, rank, far, out.bytes_sent);
}

CollectiveOutcome Network::two_level_all_reduce(int rank, const Scope& s, double bytes,
                                                const Split& sp, const char* label_fused,
                                                const char* label_steps) {
  const int i = s.group.index_of(rank);
  const Group& intra =
      *sp.intra[static_cast<std::size_t>(sp.node_index[static_cast<std::size_t>(i)])];
  const Group& cross =
      *sp.cross[static_cast<std::size_t>(sp.position[static_cast<std::size_t>(i)])];
  // Sub-collectives of this group's collective number s.seq; site and node splits of one group
  // never run the same collective, so they share the tag.
  const int tag = s.group.id + 1;
  const int G = intra.size(), M = cross.size();
  CollectiveOutcome a{0, ""}, c{0, ""};
  if (G > 1)
    a = ring_steps(rank, Scope{intra, s.seq * 3 + 0, tag, s.op}, G - 1, bytes / G);
  const auto b =
      ring_steps(rank, Scope{cross, s.seq * 3 + 1, tag, s.op}, 2 * (M - 1), bytes / G / M);
  if (G > 1)
    c = ring_steps(rank, Scope{intra, s.seq * 3 + 2, tag, s.op}, G - 1, bytes / G);
  CollectiveOutcome out{a.bytes_sent + b.bytes_sent + c.bytes_sent,
                        fidelity_ == scenario::CollectiveFidelity::steps ? label_steps
                                                                         : label_fused};
  const auto next = [rank](const Group& ring) {
    return ring.ranks[static_cast<std::size_t>((ring.index_of(rank) + 1) % ring.size())];
  };
  add_class(out, rank, next(intra), a.bytes_sent + c.bytes_sent);
  add_class(out, rank, next(cross), b.bytes_sent);
  out.classified = true;
  return out;
}

CollectiveOutcome Network::site_hierarchical_half_op(int rank, const Scope& s, double bytes,
                                                     bool gather) {
  const Split& sp = *site_split(s.group);
  const int i = s.group.index_of(rank);
  const Group& intra =
      *sp.intra[static_cast<std::size_t>(sp.node_index[static_cast<std::size_t>(i)])];
  const Group& cross =
      *sp.cross[static_cast<std::size_t>(sp.position[static_cast<std::size_t>(i)])];
  const int tag = s.group.id + 1; // as two_level_all_reduce: one collective per s.seq
  const int L = intra.size(), K = cross.size();
  CollectiveOutcome in_site{0, ""}, across{0, ""};
  if (gather) {
    // Each shard to its peers in the other sites first, then the site gathers K shards a rank.
    across = ring_steps(rank, Scope{cross, s.seq * 3 + 1, tag, s.op}, K - 1, bytes);
    if (L > 1)
      in_site = ring_steps(rank, Scope{intra, s.seq * 3 + 2, tag, s.op}, L - 1, bytes * K);
  } else {
    if (L > 1)
      in_site = ring_steps(rank, Scope{intra, s.seq * 3 + 0, tag, s.op}, L - 1, bytes / L);
    across = ring_steps(rank, Scope{cross, s.seq * 3 + 1, tag, s.op}, K - 1, bytes / L / K);
  }
  CollectiveOutcome out{in_site.bytes_sent + across.bytes_sent,
                        fidelity_ == scenario::CollectiveFidelity::steps ? "sites/steps"
                                                                         : "sites/fused"};
  const auto next = [rank](const Group& ring) {
    return ring.ranks[static_cast<std::size_t>((ring.index_of(rank) + 1) % ring.size())];
  };
  add_class(out, rank, next(intra), in_site.bytes_sent);
  add_class(out, rank, next(cross), across.bytes_sent);
  out.classified = true;
  return out;
}

CollectiveOutcome Network::all_to_all(int rank, const Scope& s, double bytes) {
  const Group& g = s.group;
  const int n = g.size();
  if (!platform_.nics.empty()) {
    // A fat tree routes between NICs, not GPUs (Platform::lane): every pair's flow at once.
    fused(s, 0, [&] {
      std::vector<Flow> flows;
      for (int a : g.ranks)
        for (int b : g.ranks)
          if (a != b)
            flows.push_back({a, b, bytes / n});
      return flows;
    });
    return {comm::ring_bytes_sent(CollectiveOp::all_to_all, n, bytes), "direct"};
  }
  std::vector<sg4::CommPtr> comms;
  for (int peer : g.ranks) {
    if (peer == rank)
      continue;
    comms.push_back(
        mailbox(s, rank, peer)->put_async(&payload_token, static_cast<std::uint64_t>(bytes / n)));
    comms.push_back(mailbox(s, peer, rank)->get_async<char>(&payload_sink));
  }
  sg4::Comm::wait_all(comms);
  return {comm::ring_bytes_sent(CollectiveOp::all_to_all, n, bytes), "direct"};
}

CollectiveOutcome Network::run(int rank, const CollectiveCall& call, double bytes,
                               std::int64_t seq) {
  const Group& g = *call.group;
  if (!g.contains(rank))
    throw std::logic_error(
        fmt::format("rank {} runs '{}' on a group it is not in", rank, call.name));
  switch (call.op) {
  case CollectiveOp::send: {
    // A calibrated message runs with the bytes that give its measured time (as below).
    double on_wire = bytes;
    if (const auto it = collective_bytes_.find(calibration_op_name(call.op));
        it != collective_bytes_.end())
      on_wire = it->second.bytes_for(bytes, g.size());
    point_to_point(Scope{g, seq, -1 - call.tag, call.op}, rank, rank, call.peer, on_wire);
    return {bytes, "p2p"};
  }
  case CollectiveOp::recv:
    point_to_point(Scope{g, seq, -1 - call.tag, call.op}, rank, call.peer, rank, 0);
    return {0, "p2p"};
  default:
    break;
  }
  if (g.size() == 1) {
    // Nothing crosses a link, but the library still launches, copies or averages (measured, in
    // the form the call has; the other form where only that one was measured).
    const std::string name = calibration_op_name(call.op);
    auto it = local_collectives_.find({name, in_place(call)});
    if (it == local_collectives_.end())
      it = local_collectives_.find({name, !in_place(call)});
    if (it != local_collectives_.end())
      fused(Scope{g, seq, 0, call.op}, it->second.local_seconds_for(bytes),
            [] { return std::vector<Flow>{}; });
    return {0, "local"};
  }
  // A calibrated op runs with the bytes that make the link's model give its own measured time
  // (scenario::CollectiveBytesMap; S is the full array, all-gather's data is the shard); what it
  // reports as sent stays the op's real volume.
  if (collective_bytes_.empty())
    return run_uncalibrated(rank, call, bytes, seq);
  if (const auto it = collective_bytes_.find(calibration_op_name(call.op));
      it != collective_bytes_.end()) {
    const double per_array = call.op == CollectiveOp::all_gather ? g.size() : 1.0;
    const double mapped = it->second.bytes_for(bytes * per_array, g.size()) / per_array;
    const std::tuple<int, std::int64_t, int> key{g.id, seq, 0};
    if (const double lag = it->second.last_caller_lag_for(bytes * per_array, g.size()); lag > 0)
      late_ends_[key] = LateEnd{lag, true};
    else if (const double spread = it->second.end_spread_for(bytes * per_array, g.size());
             spread > 0)
      late_ends_[key] = LateEnd{spread, false};
    auto outcome = run_uncalibrated(rank, call, mapped, seq);
    late_ends_.erase(key);
    outcome.bytes_sent = mapped > 0 ? outcome.bytes_sent * bytes / mapped : 0.0;
    return outcome;
  }
  return run_uncalibrated(rank, call, bytes, seq);
}

CollectiveOutcome Network::run_fixed(int rank, const CollectiveCall& call, double seconds,
                                     double bytes, std::int64_t seq) {
  const Group& g = *call.group;
  if (!g.contains(rank))
    throw std::logic_error(
        fmt::format("rank {} runs '{}' on a group it is not in", rank, call.name));
  const int n = g.size();
  if (n == 1)
    return {0, "local"};
  fused(Scope{g, seq, 0, call.op}, seconds, [] { return std::vector<Flow>{}; });
  // What a ring would send (all-gather's data is the shard: comm/ring_shape.h).
  return {comm::ring_bytes_sent(call.op, n, comm::array_bytes(call.op, n, bytes)), "table"};
}

CollectiveOutcome Network::run_uncalibrated(int rank, const CollectiveCall& call, double bytes,
                                            std::int64_t seq) {
  const Group& g = *call.group;
  const Scope s{g, seq, 0, call.op};
  using Algo = scenario::CollectiveAlgorithm;
  Algo algo = algorithm_;
  if (call.op == CollectiveOp::all_reduce && algo == Algo::automatic &&
      fidelity_ != scenario::CollectiveFidelity::nccl) {
    // The network views have no NCCL model: the closed-form price picks (comm/collective_price.h).
    algo = comm::cheapest_network_all_reduce(nccl_shape(g), bytes);
  }
  const int n = g.size();
  switch (call.op) {
  case CollectiveOp::all_reduce:
    // Across WAN sites, auto and hierarchical reduce inside each site first (issue 25.5): a flat
    // ring or tree would wait out the WAN latency on every one of its steps.
    if ((algorithm_ == Algo::automatic || algorithm_ == Algo::hierarchical) && site_split(g))
      return site_hierarchical_all_reduce(rank, s, bytes);
    if (algo == Algo::hierarchical && split(g))
      return hierarchical_all_reduce(rank, s, bytes);
    if (fidelity_ != scenario::CollectiveFidelity::nccl) {
      // Flows at link speed: the network's view, without NCCL's protocol costs.
      if (algo == Algo::tree)
        return tree_all_reduce(s, bytes);
      return ring_of(rank, s, bytes);
    }
    if (algo == Algo::ring)
      return nccl_collective(rank, s, CollectiveOp::all_reduce, bytes, NcclAlgorithm::ring);
    if (algo == Algo::tree)
      return nccl_collective(rank, s, CollectiveOp::all_reduce, bytes, NcclAlgorithm::tree);
    return nccl_collective(rank, s, CollectiveOp::all_reduce, bytes, std::nullopt);
  case CollectiveOp::reduce_scatter:
    // Across WAN sites, site by site; NCCL runs the rest on rings (its tuner has no tree for
    // them): the model under nccl, the network's ring otherwise.
    if ((algorithm_ == Algo::automatic || algorithm_ == Algo::hierarchical) && site_split(g))
      return site_hierarchical_half_op(rank, s, bytes, false);
    if (fidelity_ == scenario::CollectiveFidelity::nccl)
      return nccl_collective(rank, s, CollectiveOp::reduce_scatter, bytes, std::nullopt);
    return ring_of(rank, s, bytes);
  case CollectiveOp::all_gather:
    if ((algorithm_ == Algo::automatic || algorithm_ == Algo::hierarchical) && site_split(g))
      return site_hierarchical_half_op(rank, s, bytes, true);
    if (fidelity_ == scenario::CollectiveFidelity::nccl) // `bytes` is the shard; S = n shards
      return nccl_collective(rank, s, CollectiveOp::all_gather, bytes * n, std::nullopt);
    return ring_of(rank, s, comm::array_bytes(call.op, n, bytes));
  case CollectiveOp::broadcast:
    if (algo == Algo::tree)
      return tree_broadcast(s, bytes, call.peer);
    if (fidelity_ == scenario::CollectiveFidelity::nccl)
      return nccl_collective(rank, s, CollectiveOp::broadcast, bytes, std::nullopt, call.peer);
    return ring_chain(rank, s, bytes, call.peer, false);
  case CollectiveOp::reduce:
    return ring_chain(rank, s, bytes, call.peer, true);
  case CollectiveOp::all_to_all:
    return all_to_all(rank, s, bytes);
  case CollectiveOp::barrier:
    return ring_of(rank, s, 0);
  default:
    break;
  }
  throw std::logic_error("unhandled collective");
}

} // namespace overlapsim::sim
