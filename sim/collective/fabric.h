// What every collective algorithm runs on: the routes between ranks and the group shapes read off
// them (fabric.cpp), and the machinery that moves a collective's flows over SimGrid (flows.cpp):
// ranks meeting, the last to arrive running every member's flows, messages, ring-step exchanges,
// and the interference a transfer has with its GPU's streams. Algorithms (algorithm.h) decide
// which flows move and what they wait; they never talk to SimGrid's network themselves.
#pragma once

#include "comm/nccl_model.h"
#include "runtime/runtime.h"
#include "runtime/topology.h"
#include "sim/comm_interference.h"
#include "sim/compute_interference.h"
#include "sim/platform.h"

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <vector>

namespace overlapsim::sim {

struct CollectiveOutcome {
  double bytes_sent = 0;      // by this rank
  const char* algorithm = ""; // e.g. "ring/fused", for the trace
  // Of bytes_sent, what crossed a network between nodes (inter) or a WAN between sites (wan); the
  // rest stayed inside a node. Set by Network::classify (issue 25.6).
  double inter_node_bytes = 0;
  double wan_bytes = 0;
  bool classified = false; // split where it ran
};

namespace collective {

// Flows carry no data, only a size; every put sends this address and every get writes it here.
inline char payload_token;
inline char* payload_sink;

// One collective as every member sees it: the group, its sequence number, and a tag telling the
// sub-collectives of a hierarchical all-reduce apart from calls made on the group directly
// (positive), and point-to-point tags (-1 - tag) apart from both.
struct Scope {
  const Group& group;
  std::int64_t seq;
  int tag;
  CollectiveOp op; // the call's kind: the shares of compute it takes and loses
};

// The member after `rank` in `ring`'s order: where a ring step sends.
inline int next_rank(const Group& ring, int rank) {
  return ring.ranks[static_cast<std::size_t>((ring.index_of(rank) + 1) % ring.size())];
}

struct Flow {
  int src;
  int dst;
  double bytes;
};

// A group whose members spread evenly over nodes: `intra` holds the members of each node (in group
// order), `cross` the members at the same position on every node.
struct Split {
  std::vector<const Group*> intra; // per node
  std::vector<const Group*> cross; // per position
  std::vector<int> node_index;     // per member: which intra group
  std::vector<int> position;       // per member: which cross group
};

// The ranks of one fused collective or message: every rank but the last to arrive waits on
// `done`; the last one drives the flows of all ranks and releases them.
struct Instance {
  Instance();
  int arrived = 0;
  double bytes = 0; // a message's size, from its sender
  simgrid::s4u::SemaphorePtr done;
  // The member (by order of arrival) that ends `late_by` after the others; -1: none.
  int late_arrival = -1;
  double late_by = 0;
};

// Calibrated ops one of whose members ends after the others: the last caller
// (scenario::SizeTime::last_caller_lag_s), or where the profile measured only how far apart the
// ends fall (end_spread_s), a member picked from the instance key.
struct LateEnd {
  double seconds = 0;
  bool last_caller = true;
};
using InstanceKey = std::tuple<int, std::int64_t, int>; // group, seq, tag

class Fabric {
public:
  Fabric(const Platform& platform, const scenario::ClusterSpec& cluster, const Topology& topology);
  ~Fabric();

  const Platform& platform() const { return platform_; }
  const Topology& topology() const { return topology_; }
  bool steps() const { return fidelity_ == scenario::CollectiveFidelity::steps; }
  bool nccl() const { return fidelity_ == scenario::CollectiveFidelity::nccl; }
  double nic_Bps() const { return nic_Bps_; }
  comm::NcclGeneration nccl_generation() const { return nccl_generation_; }
  std::optional<comm::NcclProtocol> nccl_protocol() const { return nccl_protocol_; }
  // What a message pays before it moves while the opposite direction carries one, by link class
  // (hw::LinkSpec::reverse_busy_s).
  double reverse_busy_s(int link_class) const {
    return reverse_busy_s_[static_cast<std::size_t>(link_class)];
  }

  // --- Routes and shapes (fabric.cpp) ---
  // One-way latency and bottleneck bandwidth of the route between two ranks.
  double latency(int src, int dst);
  double bandwidth(int src, int dst);
  double ring_max_latency(const Group& group);
  double ring_min_bandwidth(const Group& group);
  // The group cut into nodes; nullptr where that gains nothing (uneven, one node, one per node).
  const Split* split(const Group& group);
  // The group cut by WAN site (intra: each site's members, cross: same position in every site);
  // nullptr unless it spans several sites, each holding as many of its members.
  const Split* site_split(const Group& group);
  bool has_sites() const { return !site_of_node_.empty(); }
  // The WAN site of `rank`'s node (0 without sites).
  int site_of(int rank) const {
    return site_of_node_.empty() ? 0
                                 : site_of_node_[static_cast<std::size_t>(topology_.node_of(rank))];
  }
  // The group's shape as comm/'s prices take it, from its routes.
  const comm::NcclShape& nccl_shape(const Group& group);
  // 0: a and b share a node, 1: they share a site (or there are no sites), 2: the WAN joins them.
  int link_class(int a, int b) const;
  // Adds `bytes` of `out` as crossing the link class of a -> b.
  void add_class(CollectiveOutcome& out, int a, int b, double bytes) const;
  // Folded on an oversubscribed fat tree, the least time `flows` (every node's, not only the
  // running ones') take on the cables above their leaves: the busiest leaf's bytes up or down over
  // its uplinks' capacity, spread evenly. 0 elsewhere (the platform carries those cables).
  double uplink_time(const std::vector<Flow>& flows) const;
  // The group's ranks that run (all but under rank classes: the representative node's).
  const std::vector<int>& simulated_members(const Group& group);
  // Per (group, NVLS inside nodes): each member's tree all-reduce bytes by link class, as shares
  // (written by tree_flows, read by Network::classify).
  std::map<std::pair<int, bool>, std::vector<std::array<double, 3>>>& tree_shares() {
    return tree_shares_;
  }
  const std::map<std::pair<int, bool>, std::vector<std::array<double, 3>>>& tree_shares() const {
    return tree_shares_;
  }

  // --- Moving flows (flows.cpp) ---
  simgrid::s4u::Mailbox* mailbox(const Scope& s, int src, int dst);
  // The last rank to arrive sleeps `wait`, runs the flows `make_flows` lists (called by that rank
  // only: building the list costs O(N)) and releases the others when they have all ended; it
  // leaves itself the op's last caller's lag later, or one member a measured spread later
  // (late_ends).
  void fused(const Scope& s, double wait, const std::function<std::vector<Flow>()>& make_flows);
  // The same for a ring over s.group, each member sending `bytes` to the next (ring.h), with what
  // the ring's O(N) flows give kept: its running flows per group, its hold on a folded fat tree's
  // uplinks per (group, bytes). Every phase of a collective over WAN sites re-routed every flow
  // (issue 64.4: 51% of a 16,368-GPU run); the same numbers, computed once.
  void fused_ring(const Scope& s, double wait, double bytes);
  // The same, where the wait follows from the flows too: `plan` (called by the last rank only)
  // returns both. Every rank building them made an N-rank collective cost O(N^2).
  struct Plan {
    double wait = 0;
    std::vector<Flow> flows;
  };
  void fused_plan(const Scope& s, const std::function<Plan()>& plan);
  // Starts a flow of `bytes` from rank `src` to `dst`: a comm per lane (Platform::lane).
  // `direct`: a point-to-point message (Platform::lane).
  void start_flow(int src, int dst, double bytes, std::vector<simgrid::s4u::CommPtr>& comms,
                  bool direct = false);
  // Starts `flows` (start_flow) at this instant and waits until they have all ended.
  void run_flows(const std::vector<Flow>& flows);
  // A ring step of the `steps` fidelity: sends `send_bytes` to `dst`, receives from `src`.
  void exchange(const Scope& s, int self, int dst, double send_bytes, int src);
  // A transfer between `ends` (the members of a message) under the GPUs' interference: `move`
  // runs the flows.
  void interfered(const Scope& s, const std::vector<int>& ends, const std::function<void()>& move);
  // Set by every member of a calibrated op before it joins, read by the last to arrive, dropped
  // as they leave.
  void set_late_end(const InstanceKey& key, LateEnd late) { late_ends_[key] = late; }
  void drop_late_end(const InstanceKey& key) { late_ends_.erase(key); }

  // Where workers report their compute, which slows their transfers (sim/compute_interference.h).
  ComputeInterference& compute_interference() { return compute_interference_; }

private:
  std::pair<double, double> route(int src, int dst); // latency, bandwidth over the lanes
  // What `fused` adds to the wait of `flows` on a folded oversubscribed fat tree (uplink_time
  // past the flows' own time at link speed); none where uplink_time is 0.
  std::optional<double> hold(const std::vector<Flow>& flows);
  // fused_ring's ring per group: the (src, dst) of its flows that run, its hold per bytes.
  struct RingShape {
    bool made = false;
    std::vector<std::pair<int, int>> running;
    std::map<double, std::optional<double>> holds;
  };
  const Split* make_split(const Group& group, bool by_site, std::unique_ptr<Split>& slot);
  // The interference shares of `s`'s kind on `rank`'s GPU (cluster.node_types: its own GPU's).
  double comm_share(const Scope& s, int rank) const;
  double compute_share(const Scope& s, int rank) const;
  const hw::GpuSpec& gpu_of(int rank) const;

  const Platform& platform_;
  const Topology& topology_;
  scenario::CollectiveFidelity fidelity_;
  std::unordered_map<std::string, simgrid::s4u::Mailbox*> mailboxes_;
  std::unordered_map<std::uint64_t, std::pair<double, double>> routes_; // latency, bandwidth
  // Folded (rank classes), by the lane's two hosts: the flows of a collective over a million GPUs
  // map onto the few hosts of the folded platform, so this stays small where routes_ by rank pair
  // grew to millions of entries (issue 63.5a: seconds per collective shape).
  std::map<std::pair<const simgrid::s4u::Host*, const simgrid::s4u::Host*>,
           std::pair<double, double>>
      lane_routes_;
  std::unordered_map<int, double> ring_latency_;
  std::unordered_map<int, std::vector<int>> simulated_members_;
  std::unordered_map<int, double> ring_bandwidth_;
  std::unordered_map<int, RingShape> ring_shapes_;
  std::map<int, std::unique_ptr<Split>> splits_, site_splits_;
  std::vector<int> site_of_node_; // empty without WAN sites
  std::array<double, 3> reverse_busy_s_{};
  const comm::NcclGeneration nccl_generation_;
  std::optional<comm::NcclProtocol> nccl_protocol_; // the scenario's NCCL_PROTO; none: the tuner
  double nic_Bps_ = 0;                              // a fat tree's cables run at the NIC's rate
  std::map<int, comm::NcclShape> nccl_shapes_;
  std::map<std::pair<int, bool>, std::vector<std::array<double, 3>>> tree_shares_;
  std::map<InstanceKey, std::shared_ptr<Instance>> instances_;
  std::map<InstanceKey, LateEnd> late_ends_;
  hw::GpuSpec gpu_; // the interference shares by collective kind
  // cluster.node_types: each type's GPU, and each node's type (-1: gpu_); empty without types.
  std::vector<hw::GpuSpec> type_gpus_;
  std::vector<int> node_type_;
  int gpus_per_node_ = 1;
  CommInterference interference_;
  ComputeInterference compute_interference_;
};

} // namespace collective
} // namespace overlapsim::sim
