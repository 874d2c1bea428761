// Collectives as point-to-point flows on the SimGrid platform, so that links of different speeds
// and concurrent collectives sharing a link come out of SimGrid's network model, not a formula.
// Network is what workers call; it picks, per call, which algorithm of this folder runs it
// (algorithm.h), maps calibrated sizes, and classifies the bytes each rank sent by link class.
//
// Algorithms (cluster.collective_algorithm, or per call from `overlapsim collective`):
//  - ring (ring.h): every op; broadcast and reduce as a pipelined chain (chain.h);
//  - tree (tree.h): NCCL's double binary tree for all-reduce and broadcast;
//  - hierarchical (hierarchical.h): all-reduce in two levels, nodes then across;
//  - auto: the cheapest of the three by the alpha-beta model NCCL's tuner uses
//    (comm/collective_price.h), per call, from the group's size and links;
//  - across WAN sites (sites.h) auto and hierarchical go site by site; over sites of unequal
//    size by unequal_sites.h's slices;
//  - under `collectives: nccl`, NCCL's model picks algorithm and protocol (nccl.h);
//  - all-to-all as direct messages (all_to_all.h), send/recv as messages (point_to_point.h).
//
// Two fidelities (cluster.collectives): steps (every ring step its own flow) and fused (one flow
// per sender carrying all its steps' bytes): ring.h.
#pragma once

#include "sim/collective/all_to_all.h"
#include "sim/collective/chain.h"
#include "sim/collective/fabric.h"
#include "sim/collective/hierarchical.h"
#include "sim/collective/nccl.h"
#include "sim/collective/point_to_point.h"
#include "sim/collective/ring.h"
#include "sim/collective/sites.h"
#include "sim/collective/tree.h"
#include "sim/collective/unequal_sites.h"

#include <map>
#include <string>
#include <utility>

namespace overlapsim::sim {

class Network {
public:
  Network(const Platform& platform, const scenario::ClusterSpec& cluster, const Topology& topology);

  // Runs rank `rank`'s part of `call`, whose data is `bytes` long (NCCL's convention: the full
  // array for all-reduce, reduce-scatter, broadcast, reduce and all-to-all; the shard for
  // all-gather). `seq` numbers the collectives of this rank on this group (the same on every
  // member). Blocks the calling actor until this rank's part is done.
  CollectiveOutcome run(int rank, const CollectiveCall& call, double bytes, std::int64_t seq);

  // Runs rank `rank`'s part of a collective whose duration is given (a per-layer time table,
  // sim/table_comm_time.h): the ranks meet, `seconds` pass from the last arrival, and they leave
  // together. Reports the bytes a ring would send for `bytes` of data.
  CollectiveOutcome run_fixed(int rank, const CollectiveCall& call, double seconds, double bytes,
                              std::int64_t seq);

  // Splits an outcome's bytes by the link class they cross: a ring (chains too), NVLS and a
  // per-layer table's time send to the next rank of the group, a message to its peer, an
  // all-to-all to every member, a tree all-reduce as the rank's own chain and tree flows, a
  // two-level all-reduce as its phases did (already split); a broadcast tree counts as the
  // group's most remote class.
  void classify(int rank, const CollectiveCall& call, CollectiveOutcome& outcome) const;

  // Where workers report their compute, which slows their transfers (sim/compute_interference.h).
  ComputeInterference& compute_interference() { return fabric_.compute_interference(); }

private:
  CollectiveOutcome run_uncalibrated(int rank, const CollectiveCall& call, double bytes,
                                     std::int64_t seq);
  // The algorithm that runs `call` on an array of `bytes` (the scenario's choice, `auto`'s per
  // call, WAN sites, the fidelity).
  collective::Algorithm& choose(const CollectiveCall& call, double bytes);

  collective::Fabric fabric_;
  scenario::CollectiveAlgorithm algorithm_;
  std::map<std::string, scenario::CollectiveBytesMap> collective_bytes_;        // calibrated ops
  std::map<std::pair<std::string, bool>, scenario::LinkFit> local_collectives_; // op, in place
  collective::NcclFlowShapes nccl_flow_shapes_;
  collective::Ring ring_{fabric_};
  collective::Chain chain_{fabric_};
  collective::Tree tree_{fabric_};
  collective::Hierarchical hierarchical_{fabric_};
  collective::Sites sites_{fabric_};
  collective::UnequalSites unequal_sites_;
  collective::NcclModel nccl_auto_{fabric_, nccl_flow_shapes_, std::nullopt};
  collective::NcclModel nccl_ring_{fabric_, nccl_flow_shapes_, comm::NcclAlgorithm::ring};
  collective::NcclModel nccl_tree_{fabric_, nccl_flow_shapes_, comm::NcclAlgorithm::tree};
  collective::NcclModel nccl_collnet_{fabric_, nccl_flow_shapes_,
                                      comm::NcclAlgorithm::collnet_direct}; // and Chain
  collective::AllToAll all_to_all_{fabric_};
  collective::PointToPoint point_to_point_{fabric_};
};

} // namespace overlapsim::sim
