#include "sim/collective/network.h"

#include "comm/collective_price.h"
#include "comm/ring_shape.h"
#include "runtime/collective_size.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>
#include <string_view>

namespace overlapsim::sim {

using collective::Flow;
using collective::Scope;

Network::Network(const Platform& platform, const scenario::ClusterSpec& cluster,
                 const Topology& topology)
    : fabric_(platform, cluster, topology), algorithm_(cluster.collective_algorithm),
      collective_bytes_(cluster.collective_bytes), local_collectives_(cluster.local_collectives),
      unequal_sites_(fabric_,
                     std::any_of(cluster.sites.begin(), cluster.sites.end(), [&](const auto& site) {
                       return site.nodes.size() != cluster.sites.front().nodes.size();
                     })) {}

void Network::classify(int rank, const CollectiveCall& call, CollectiveOutcome& out) const {
  if (out.bytes_sent <= 0 || out.classified)
    return; // nothing sent, or split where it ran (two-level all-reduces)
  const Group& g = *call.group;
  const std::string_view algorithm = out.algorithm;
  if (call.op == CollectiveOp::send) {
    fabric_.add_class(out, rank, call.peer, out.bytes_sent);
    return;
  }
  if (call.op == CollectiveOp::all_reduce &&
      (algorithm.starts_with("tree/") || algorithm.starts_with("nvlstree/"))) {
    // As the rank's own chain and tree flows: trees chain inside nodes, NVLSTree uses NVLS.
    const bool nvls = algorithm.starts_with("nvlstree/");
    if (const auto it = fabric_.tree_shares().find({g.id, nvls});
        it != fabric_.tree_shares().end()) {
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
        peers[static_cast<std::size_t>(fabric_.link_class(rank, m))] += 1;
    const double others = g.size() - 1.0;
    out.inter_node_bytes += out.bytes_sent * peers[1] / others;
    out.wan_bytes += out.bytes_sent * peers[2] / others;
    return;
  }
  // Alpha-beta rings and NCCL's, NVLS (S to the switch and back) and a per-layer table's time
  // (it reports a ring's bytes): to the next rank.
  if (algorithm.starts_with("ring/") || algorithm.starts_with("nvls/") || algorithm == "table") {
    fabric_.add_class(out, rank, collective::next_rank(g, rank), out.bytes_sent);
    return;
  }
  int worst = 0, far = rank;
  for (int m : g.ranks)
    if (const int c = fabric_.link_class(rank, m); c > worst)
      worst = c, far = m;
  fabric_.add_class(out, rank, far, out.bytes_sent);
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
    auto out = point_to_point_.run(rank, Scope{g, seq, -1 - call.tag, call.op}, on_wire, call.peer);
    out.bytes_sent = bytes; // the message's own size, whatever the calibration ran
    return out;
  }
  case CollectiveOp::recv:
    return point_to_point_.run(rank, Scope{g, seq, -1 - call.tag, call.op}, 0, call.peer);
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
      fabric_.fused(Scope{g, seq, 0, call.op}, it->second.local_seconds_for(bytes),
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
    const collective::InstanceKey key{g.id, seq, 0};
    if (const double lag = it->second.last_caller_lag_for(bytes * per_array, g.size()); lag > 0)
      fabric_.set_late_end(key, collective::LateEnd{lag, true});
    else if (const double spread = it->second.end_spread_for(bytes * per_array, g.size());
             spread > 0)
      fabric_.set_late_end(key, collective::LateEnd{spread, false});
    auto outcome = run_uncalibrated(rank, call, mapped, seq);
    fabric_.drop_late_end(key);
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
  fabric_.fused(Scope{g, seq, 0, call.op}, seconds, [] { return std::vector<Flow>{}; });
  // What a ring would send (all-gather's data is the shard: comm/ring_shape.h).
  return {comm::ring_bytes_sent(call.op, n, comm::array_bytes(call.op, n, bytes)), "table"};
}

CollectiveOutcome Network::run_uncalibrated(int rank, const CollectiveCall& call, double bytes,
                                            std::int64_t seq) {
  return choose(call, bytes).run(rank, Scope{*call.group, seq, 0, call.op}, bytes, call.peer);
}

collective::Algorithm& Network::choose(const CollectiveCall& call, double bytes) {
  const Group& g = *call.group;
  using Algo = scenario::CollectiveAlgorithm;
  Algo algo = algorithm_;
  if (call.op == CollectiveOp::all_reduce && algo == Algo::automatic && !fabric_.nccl()) {
    // The network views have no NCCL model: the closed-form price picks (comm/collective_price.h).
    algo = comm::cheapest_network_all_reduce(fabric_.nccl_shape(g), bytes);
  }
  // Across WAN sites, auto and hierarchical go site by site (issue 25.5): a flat ring or tree
  // would wait out the WAN latency on every one of its steps.
  const auto by_site = [&] {
    return (algorithm_ == Algo::automatic || algorithm_ == Algo::hierarchical) &&
           fabric_.site_split(g);
  };
  // Sites of unequal size: their slices (unequal_sites.h), where the group spans them unevenly.
  const auto by_unequal_sites = [&] {
    return (algorithm_ == Algo::automatic || algorithm_ == Algo::hierarchical) &&
           unequal_sites_.slices(g);
  };
  switch (call.op) {
  case CollectiveOp::all_reduce:
    if (by_site())
      return sites_;
    if (by_unequal_sites())
      return unequal_sites_;
    if (algo == Algo::hierarchical && fabric_.split(g))
      return hierarchical_;
    if (!fabric_.nccl()) // flows at link speed: the network's view, without NCCL's protocols
      return algo == Algo::tree ? static_cast<collective::Algorithm&>(tree_) : ring_;
    if (algo == Algo::ring)
      return nccl_ring_;
    if (algo == Algo::tree)
      return nccl_tree_;
    if (algo == Algo::collnet)
      return nccl_collnet_;
    return nccl_auto_;
  case CollectiveOp::reduce_scatter:
  case CollectiveOp::all_gather:
    // Across WAN sites, site by site; the rest by NCCL's tuner (rings, PAT, NVLS, CollNetDirect;
    // no tree), a scenario's ring or collnet as asked: the model under nccl, the network's ring
    // otherwise.
    if (by_site())
      return sites_;
    if (by_unequal_sites())
      return unequal_sites_;
    if (fabric_.nccl())
      return algo == Algo::ring ? nccl_ring_ : algo == Algo::collnet ? nccl_collnet_ : nccl_auto_;
    return ring_;
  case CollectiveOp::broadcast:
    if (algo == Algo::tree)
      return tree_;
    if (fabric_.nccl())
      return nccl_auto_;
    return chain_;
  case CollectiveOp::reduce:
    return chain_;
  case CollectiveOp::all_to_all:
    return all_to_all_;
  case CollectiveOp::barrier:
    return ring_;
  default:
    break;
  }
  throw std::logic_error("unhandled collective");
}

} // namespace overlapsim::sim
