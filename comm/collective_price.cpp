#include "comm/collective_price.h"

#include "comm/nccl_alltoall.h"
#include "comm/ring_shape.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <limits>

namespace overlapsim::comm {

namespace {

constexpr double kInfinity = std::numeric_limits<double>::infinity();

// The slowest hop of a ring through every rank: inside a node, and across nodes where it spans
// several.
double ring_latency(const NcclShape& s) {
  return s.nodes > 1 ? std::max(s.intra_latency_s, s.net_latency_s) : s.intra_latency_s;
}
double ring_bandwidth(const NcclShape& s) {
  if (s.nodes <= 1)
    return s.intra_Bps;
  return s.per_node > 1 ? std::min(s.intra_Bps, s.net_Bps) : s.net_Bps;
}

int binary_tree_depth(int n) {
  return n <= 1 ? 0 : static_cast<int>(std::floor(std::log2(n)));
}

} // namespace

std::optional<NcclProtocol> nccl_protocol_of(NcclProtocolChoice choice) {
  switch (choice) {
  case NcclProtocolChoice::ll:
    return NcclProtocol::ll;
  case NcclProtocolChoice::ll128:
    return NcclProtocol::ll128;
  case NcclProtocolChoice::simple:
    return NcclProtocol::simple;
  default:
    return std::nullopt;
  }
}

double network_all_reduce_seconds(CollectiveAlgorithm algorithm, const NcclShape& s, double bytes) {
  const int n = s.ranks;
  if (n < 2)
    return 0;
  switch (algorithm) {
  case CollectiveAlgorithm::tree: {
    // Trees between nodes need two or more GPUs on each; otherwise one chain through the group.
    const bool split = s.nodes > 1 && s.per_node > 1 && s.even;
    const double depth = split ? s.per_node - 1 + binary_tree_depth(s.nodes) : n - 1;
    return 2 * depth * ring_latency(s) + 2 * bytes / ring_bandwidth(s);
  }
  case CollectiveAlgorithm::hierarchical: {
    if (s.nodes < 2 || s.per_node < 2 || !s.even)
      return kInfinity;
    const double G = s.per_node, M = s.nodes;
    return 2 * (G - 1) * (s.intra_latency_s + bytes / (G * s.intra_Bps)) +
           2 * (M - 1) * (s.net_latency_s + bytes / (M * s.net_Bps));
  }
  default:
    return ring_seconds(CollectiveOp::all_reduce, n, bytes, ring_latency(s), ring_bandwidth(s));
  }
}

CollectiveAlgorithm cheapest_network_all_reduce(const NcclShape& shape, double bytes) {
  CollectiveAlgorithm best = CollectiveAlgorithm::ring;
  double best_s = network_all_reduce_seconds(best, shape, bytes);
  for (const CollectiveAlgorithm candidate :
       {CollectiveAlgorithm::tree, CollectiveAlgorithm::hierarchical}) {
    const double t = network_all_reduce_seconds(candidate, shape, bytes);
    if (t < best_s)
      best = candidate, best_s = t;
  }
  return best;
}

CollectivePrice price_message(const PriceRule& rule, const NcclShape& shape, double bytes,
                              bool across_nodes) {
  if (rule.fidelity == CollectiveFidelity::nccl) {
    const NcclP2pCost c = nccl_p2p_cost(rule.generation, shape, across_nodes, bytes);
    return {c.time_s, "p2p"};
  }
  const bool net = across_nodes && shape.nodes > 1;
  const double latency = net ? ring_latency(shape) : shape.intra_latency_s;
  const double bandwidth = net ? ring_bandwidth(shape) : shape.intra_Bps;
  return {latency + (bandwidth > 0 ? bytes / bandwidth : 0), "p2p"};
}

CollectivePrice price_collective(const PriceRule& rule, const NcclShape& shape, CollectiveOp op,
                                 double bytes, const SiteShape& sites) {
  if (shape.ranks < 2)
    return {0, "local"};
  if (is_point_to_point(op)) {
    // nccl-tests' sendrecv: the slowest neighbour pair; across nodes where the group spans them.
    CollectivePrice p = price_message(rule, shape, bytes, false);
    if (shape.nodes > 1)
      p.seconds = std::max(p.seconds, price_message(rule, shape, bytes, true).seconds);
    return p;
  }
  const bool by_site = sites.sites > 1 && (rule.algorithm == CollectiveAlgorithm::automatic ||
                                           rule.algorithm == CollectiveAlgorithm::hierarchical);
  if (by_site && (op == CollectiveOp::all_reduce || op == CollectiveOp::reduce_scatter ||
                  op == CollectiveOp::all_gather)) {
    // Inside each site on the site's part, then across the WAN: K sites' rings, one per rank of a
    // site, each on 1/L of the array and 1/L of the site's WAN link (sim/collective/sites.cpp,
    // two_level_all_reduce and Sites::half_op).
    const NcclShape& part = sites.site;
    const double L = part.ranks;
    const CollectiveOp inside =
        op == CollectiveOp::all_gather ? CollectiveOp::all_gather : CollectiveOp::reduce_scatter;
    const double in_site =
        L > 1 ? ring_seconds(inside, part.ranks, bytes, ring_latency(part), ring_bandwidth(part))
              : 0.0;
    const double across = ring_seconds(op, sites.sites, bytes, sites.wan_latency_s, sites.wan_Bps);
    return {(op == CollectiveOp::all_reduce ? 2 : 1) * in_site + across, "sites"};
  }
  if (rule.fidelity == CollectiveFidelity::nccl && op == CollectiveOp::all_to_all) {
    // NCCL's all-to-all: a group of sends and receives, one pair per peer (comm/nccl_alltoall.h).
    const NcclAllToAllCost c = nccl_all_to_all_cost(rule.generation, shape, bytes);
    return {c.time_s, fmt::format("nccl {}", nccl_all_to_all_label(c.protocol))};
  }
  if (rule.fidelity == CollectiveFidelity::nccl && nccl_prices(op)) {
    std::optional<NcclAlgorithm> only;
    if (rule.algorithm == CollectiveAlgorithm::ring)
      only = NcclAlgorithm::ring;
    else if (rule.algorithm == CollectiveAlgorithm::tree)
      only = NcclAlgorithm::tree;
    else if (rule.algorithm == CollectiveAlgorithm::collnet)
      only = NcclAlgorithm::collnet_direct; // and Chain: nccl_same_family
    const NcclCost cost = nccl_best_collective(rule.generation, shape, op, bytes, only,
                                               nccl_protocol_of(rule.protocol));
    return {cost.time_s,
            fmt::format("nccl {}", nccl_label(cost.algorithm, cost.protocol, shape.nodes > 1))};
  }
  if (op == CollectiveOp::all_reduce) {
    if (rule.algorithm != CollectiveAlgorithm::automatic) {
      const char* name = rule.algorithm == CollectiveAlgorithm::tree           ? "tree"
                         : rule.algorithm == CollectiveAlgorithm::hierarchical ? "hierarchical"
                                                                               : "ring";
      return {network_all_reduce_seconds(rule.algorithm, shape, bytes), name};
    }
    return price_collective(
        {rule.fidelity, cheapest_network_all_reduce(shape, bytes), rule.protocol, rule.generation},
        shape, op, bytes, sites);
  }
  const double t = ring_seconds(op, shape.ranks, bytes, ring_latency(shape), ring_bandwidth(shape));
  return {t, "ring"};
}

} // namespace overlapsim::comm
