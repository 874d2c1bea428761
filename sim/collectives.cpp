#include "sim/collectives.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim::sim {

namespace sg4 = simgrid::s4u;

// The ranks of one fused collective: every rank but the last to arrive waits on `done`; the last
// one drives the flows of all ranks and releases them.
struct Network::Instance {
  int arrived = 0;
  sg4::SemaphorePtr done = sg4::Semaphore::create(0);
};

namespace {
char payload_token; // flows carry no data, only a size; every put sends this address
char* payload_sink; // and every get writes it here
} // namespace

Network::Network(const Platform& platform, const spec::ClusterSpec& cluster)
    : platform_(platform), fidelity_(cluster.collectives),
      cap_flows_(cluster.nics_per_node > 1 && cluster.nodes > 1) {}

sg4::Mailbox* Network::mailbox(int group, int src, int dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(group) << 42) ^
                            (static_cast<std::uint64_t>(src) << 21) ^ static_cast<std::uint64_t>(dst);
  auto& slot = mailboxes_[key];
  if (!slot)
    slot = sg4::Mailbox::by_name(fmt::format("g{}:{}>{}", group, src, dst));
  return slot;
}

double Network::latency(int src, int dst) {
  const std::uint64_t key = (static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst);
  const auto it = latency_.find(key);
  if (it != latency_.end())
    return it->second;
  std::vector<sg4::Link*> links;
  double lat = 0;
  platform_.gpus[static_cast<std::size_t>(src)]->route_to(platform_.gpus[static_cast<std::size_t>(dst)],
                                                          links, &lat);
  latency_.emplace(key, lat);
  return lat;
}

double Network::ring_max_latency(const Group& g) {
  const auto it = ring_latency_.find(g.id);
  if (it != ring_latency_.end())
    return it->second;
  double worst = 0;
  for (int i = 0; i < g.size(); ++i)
    worst = std::max(worst, latency(g.ranks[static_cast<std::size_t>(i)],
                                    g.ranks[static_cast<std::size_t>((i + 1) % g.size())]));
  ring_latency_.emplace(g.id, worst);
  return worst;
}

void Network::fused(const Group& g, std::int64_t seq, double wait,
                    const std::vector<std::pair<int, int>>& flows, double bytes) {
  const std::pair<int, std::int64_t> key{g.id, seq};
  auto& slot = instances_[key];
  if (!slot)
    slot = std::make_shared<Instance>();
  const auto instance = slot; // keep it alive while waiting
  if (++instance->arrived < g.size()) {
    instance->done->acquire();
    return;
  }
  instances_.erase(key);
  // All ranks are in: the latencies of every step but the last (which each flow pays itself), then
  // one flow per sender with all its steps' bytes, from the hosts of the ranks themselves.
  if (wait > 0)
    sg4::this_actor::sleep_for(wait);
  std::vector<sg4::CommPtr> comms;
  comms.reserve(flows.size());
  for (const auto& [src, dst] : flows) {
    auto* from = platform_.gpus[static_cast<std::size_t>(src)];
    auto* to = platform_.gpus[static_cast<std::size_t>(dst)];
    auto comm = sg4::Comm::sendto_init(from, to);
    comm->set_payload_size(static_cast<std::uint64_t>(bytes));
    if (cap_flows_ && from->get_englobing_zone() != to->get_englobing_zone())
      comm->set_rate(platform_.per_flow_nic_cap_Bps);
    comm->start();
    comms.push_back(std::move(comm));
  }
  sg4::Comm::wait_all(comms);
  for (int i = 1; i < g.size(); ++i)
    instance->done->release();
}

void Network::exchange(const Group& g, int self, int dst, double send_bytes, int src) {
  sg4::CommPtr send, recv;
  if (dst >= 0) {
    send = mailbox(g.id, self, dst)->put_init(&payload_token, static_cast<std::uint64_t>(send_bytes));
    if (cap_flows_ && platform_.gpus[static_cast<std::size_t>(self)]->get_englobing_zone() !=
                          platform_.gpus[static_cast<std::size_t>(dst)]->get_englobing_zone())
      send->set_rate(platform_.per_flow_nic_cap_Bps);
    send->start();
  }
  if (src >= 0)
    recv = mailbox(g.id, src, self)->get_async<char>(&payload_sink);
  if (send)
    send->wait();
  if (recv)
    recv->wait();
}

CollectiveOutcome Network::ring_steps(int rank, const Group& g, int steps, double chunk,
                                      std::int64_t seq) {
  const int n = g.size();
  const int i = g.index_of(rank);
  const int next = g.ranks[static_cast<std::size_t>((i + 1) % n)];
  const int prev = g.ranks[static_cast<std::size_t>((i + n - 1) % n)];
  if (fidelity_ == spec::CollectiveFidelity::steps) {
    for (int s = 0; s < steps; ++s)
      exchange(g, rank, next, chunk, prev);
    return {chunk * steps, "ring/steps"};
  }
  // Fused: each step waits for the slowest hop, so the steps but the last cost the slowest hop's
  // latency; the last is paid by the flows themselves.
  std::vector<std::pair<int, int>> flows;
  for (int k = 0; k < n; ++k)
    flows.emplace_back(g.ranks[static_cast<std::size_t>(k)], g.ranks[static_cast<std::size_t>((k + 1) % n)]);
  fused(g, seq, (steps - 1) * ring_max_latency(g), flows, chunk * steps);
  return {chunk * steps, "ring/fused"};
}

CollectiveOutcome Network::ring_all_reduce(int rank, const Group& g, double bytes, std::int64_t seq) {
  const int n = g.size();
  return ring_steps(rank, g, 2 * (n - 1), bytes / n, seq);
}

CollectiveOutcome Network::ring_reduce_scatter(int rank, const Group& g, double bytes,
                                               std::int64_t seq) {
  const int n = g.size();
  return ring_steps(rank, g, n - 1, bytes / n, seq);
}

CollectiveOutcome Network::ring_all_gather(int rank, const Group& g, double shard_bytes,
                                           std::int64_t seq) {
  return ring_steps(rank, g, g.size() - 1, shard_bytes, seq);
}

// Pipelined chain along the ring: broadcast flows away from the root, reduce flows towards it.
// Every rank but the chain's end forwards the whole array; the pipeline costs (n-1) latencies plus
// one transfer of S at the bottleneck (NCCL's ring broadcast with many small chunks).
CollectiveOutcome Network::ring_broadcast(int rank, const Group& g, double bytes, int root,
                                          std::int64_t seq, bool reduce) {
  const int n = g.size();
  const int i = g.index_of(rank);
  const int r = g.index_of(root);
  const int d = (i - r + n) % n; // distance from the root along the ring
  const int next = g.ranks[static_cast<std::size_t>((i + 1) % n)];
  const int prev = g.ranks[static_cast<std::size_t>((i + n - 1) % n)];
  // Broadcast: the root's chain runs root -> ... -> root-1. Reduce: root+1 -> ... -> root.
  const bool sends = reduce ? d != 0 : d != n - 1;
  const bool receives = reduce ? d != 1 : d != 0;
  if (fidelity_ == spec::CollectiveFidelity::steps) {
    // n chunks of S/n: a rank forwards chunk k as soon as it has received it, so the chain is a
    // pipeline of (n-1) + (n-1) chunk steps.
    const int chunks = n;
    sg4::CommPtr pending;
    for (int k = 0; k < chunks; ++k) {
      if (receives)
        mailbox(g.id, prev, rank)->get<char>();
      if (sends) {
        if (pending)
          pending->wait();
        pending = mailbox(g.id, rank, next)
                      ->put_async(&payload_token, static_cast<std::uint64_t>(bytes / chunks));
      }
    }
    if (pending)
      pending->wait();
    return {sends ? bytes : 0.0, "ring/steps"};
  }
  std::vector<std::pair<int, int>> flows;
  for (int k = 0; k < n; ++k) {
    const int dk = (k - r + n) % n;
    if (reduce ? dk != 0 : dk != n - 1)
      flows.emplace_back(g.ranks[static_cast<std::size_t>(k)], g.ranks[static_cast<std::size_t>((k + 1) % n)]);
  }
  fused(g, seq, (n - 2) * ring_max_latency(g), flows, bytes);
  return {sends ? bytes : 0.0, "ring/fused"};
}

CollectiveOutcome Network::all_to_all(int rank, const Group& g, double bytes) {
  const int n = g.size();
  std::vector<sg4::CommPtr> comms;
  for (int peer : g.ranks) {
    if (peer == rank)
      continue;
    comms.push_back(mailbox(g.id, rank, peer)->put_async(&payload_token,
                                                         static_cast<std::uint64_t>(bytes / n)));
    comms.push_back(mailbox(g.id, peer, rank)->get_async<char>(&payload_sink));
  }
  for (auto& c : comms)
    c->wait();
  return {bytes * (n - 1) / n, "direct"};
}

CollectiveOutcome Network::run(int rank, const CollectiveCall& call, double bytes, std::int64_t seq) {
  const Group& g = *call.group;
  if (!g.contains(rank))
    throw std::logic_error(fmt::format("rank {} runs '{}' on a group it is not in", rank, call.name));
  switch (call.op) {
  case CollectiveOp::send:
    exchange(g, rank, call.peer, bytes, -1);
    return {bytes, "p2p"};
  case CollectiveOp::recv:
    exchange(g, rank, -1, 0, call.peer);
    return {0, "p2p"};
  default:
    break;
  }
  if (g.size() == 1)
    return {0, "local"};
  switch (call.op) {
  case CollectiveOp::all_reduce: return ring_all_reduce(rank, g, bytes, seq);
  case CollectiveOp::reduce_scatter: return ring_reduce_scatter(rank, g, bytes, seq);
  case CollectiveOp::all_gather: return ring_all_gather(rank, g, bytes, seq);
  case CollectiveOp::broadcast: return ring_broadcast(rank, g, bytes, call.peer, seq, false);
  case CollectiveOp::reduce: return ring_broadcast(rank, g, bytes, call.peer, seq, true);
  case CollectiveOp::all_to_all: return all_to_all(rank, g, bytes);
  case CollectiveOp::barrier: return ring_steps(rank, g, 2 * (g.size() - 1), 0, seq);
  default: break;
  }
  throw std::logic_error("unhandled collective");
}

} // namespace overlapsim::sim
