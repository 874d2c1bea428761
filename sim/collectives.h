// Collectives as point-to-point flows on the SimGrid platform, so that links of different speeds
// and concurrent collectives sharing a link come out of SimGrid's network model, not a formula.
//
// Algorithms (cluster.collective_algorithm, or per call from `overlapsim collective`):
//  - ring: every op; all-reduce is 2(N-1) steps of S/N to the next rank;
//  - tree: NCCL's double binary tree for all-reduce and broadcast: inside a node the GPUs form a
//    chain, across nodes two complementary binary trees over the nodes each carry half the data
//    (reduce up, broadcast down, pipelined); a group within one node is a single chain;
//  - hierarchical: all-reduce as reduce-scatter inside each node, all-reduce of the shard across
//  the
//    nodes (the "replication group" of GPUs with the same local index), all-gather inside the node;
//  - auto: the cheapest of the three by the alpha-beta model NCCL's tuner uses
//    (time = latency x steps + bytes / bandwidth), per call, from the group's size and links.
//
// Two fidelities (cluster.collectives):
//  - steps: every ring step is its own flow (exact, slow at scale);
//  - fused: once every rank has arrived, the latencies of all steps but the last are slept, then
//  one
//    flow per sender carries all its steps' bytes, and the ranks leave together when the last flow
//    ends. When one bottleneck paces the ring this matches `steps` (tests/collectives_test.cpp).
//    Trees always run fused (NCCL pipelines them in small chunks; fused is that pipeline's limit).
#pragma once

#include "comm/collective_price.h"
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

// NCCL's model lives in comm/ (the one owner of collective prices); the simulator runs it.
using comm::NcclAlgorithm;
using comm::NcclCost;
using comm::NcclGeneration;
using comm::NcclProtocol;
using comm::NcclShape;

struct CollectiveOutcome {
  double bytes_sent = 0;      // by this rank
  const char* algorithm = ""; // e.g. "ring/fused", for the trace
  // Of bytes_sent, what crossed a network between nodes (inter) or a WAN between sites (wan); the
  // rest stayed inside a node. Set by Network::classify (issue 25.6).
  double inter_node_bytes = 0;
  double wan_bytes = 0;
  bool classified = false; // split where it ran
};

class Network {
public:
  // Splits an outcome's bytes by the link class they cross: a ring (chains too), NVLS and a
  // per-layer table's time send to the next rank of the group, a message to its peer, an
  // all-to-all to every member, a tree all-reduce as the rank's own chain and tree flows, a
  // two-level all-reduce as its phases did (already split); a broadcast tree counts as the
  // group's most remote class.
  void classify(int rank, const CollectiveCall& call, CollectiveOutcome& outcome) const;
  Network(const Platform& platform, const scenario::ClusterSpec& cluster, const Topology& topology);
  ~Network();

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

  // One-way latency and bottleneck bandwidth of the route between two ranks.
  double latency(int src, int dst);
  double bandwidth(int src, int dst);

  // Where workers report their compute, which slows their transfers (sim/compute_interference.h).
  ComputeInterference& compute_interference() { return compute_interference_; }

  // The NCCL model's choice and cost for an all-reduce of `bytes` on `group` (no simulation).
  NcclCost nccl_cost(const Group& group, double bytes,
                     std::optional<NcclAlgorithm> only = std::nullopt);

private:
  struct Instance;
  // One collective as every member sees it: the group, its sequence number, and a tag telling the
  // sub-collectives of a hierarchical all-reduce apart from calls made on the group directly
  // (positive), and point-to-point tags (-1 - tag) apart from both.
  struct Scope {
    const Group& group;
    std::int64_t seq;
    int tag;
    CollectiveOp op; // the call's kind: the shares of compute it takes and loses
  };
  struct Split; // a group cut into nodes (intra) and same-position ranks (cross)
  CollectiveOutcome run_uncalibrated(int rank, const CollectiveCall& call, double bytes,
                                     std::int64_t seq);

  simgrid::s4u::Mailbox* mailbox(const Scope& s, int src, int dst);
  struct Flow {
    int src;
    int dst;
    double bytes;
  };
  // The last rank to arrive sleeps `wait`, runs the flows `make_flows` lists (called by that rank
  // only: building the list costs O(N)) and releases the others when they have all ended; it
  // leaves itself the op's last caller's lag later, or one member a measured spread later
  // (late_ends_).
  void fused(const Scope& s, double wait, const std::function<std::vector<Flow>()>& make_flows);
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
  // The group's ranks that run (all but under rank classes: the representative node's).
  const std::vector<int>& simulated_members(const Group& group);
  // An NCCL-model collective's flows for an array of 1 byte (those that run) and what they take
  // alone: the latency of their slowest route and their time per byte at link speed.
  struct FlowShape {
    std::vector<Flow> flows;
    double route_s = 0;
    double unpaced_s_per_byte = 0;
    double uplink_s_per_byte = 0; // folded fat tree: uplink_time for 1 byte
  };
  // Folded on an oversubscribed fat tree, the least time `flows` (every node's, not only the
  // running ones') take on the cables above their leaves: the busiest leaf's bytes up or down over
  // its uplinks' capacity, spread evenly. 0 elsewhere (the platform carries those cables).
  double uplink_time(const std::vector<Flow>& flows) const;
  void exchange(const Scope& s, int self, int dst, double send_bytes, int src);
  // A message from `src` to `dst`: the k-th send between them on this group and tag meets the
  // k-th receive; the last of the two to arrive moves `bytes` (given by the sender) between their
  // hosts, and both leave when it is done.
  void point_to_point(const Scope& s, int self, int src, int dst, double bytes);
  double ring_max_latency(const Group& group);
  double ring_min_bandwidth(const Group& group);
  const Split* split(const Group& group);
  // The group cut by WAN site (intra: each site's members, cross: same position in every site);
  // nullptr unless it spans several sites, each holding as many of its members.
  const Split* site_split(const Group& group);
  const Split* make_split(const Group& group, bool by_site, std::unique_ptr<Split>& slot);

  CollectiveOutcome ring_steps(int rank, const Scope& s, int steps, double chunk);
  // A ring of s.op over s.group on an array of `array` bytes (comm/ring_shape.h's steps).
  CollectiveOutcome ring_of(int rank, const Scope& s, double array);
  CollectiveOutcome ring_chain(int rank, const Scope& s, double bytes, int root, bool reduce);
  CollectiveOutcome tree_all_reduce(const Scope& s, double bytes);
  // NCCL's double binary tree; `nvls_intra`: NVLS inside the nodes instead of chains.
  std::vector<Flow> tree_flows(const Group& g, double bytes, double* worst_latency, int* depth,
                               bool nvls_intra);
  // The flows SimGrid runs for an NVLSTree all-reduce of 1 byte on a star, in place of tree_flows'
  // (which split its bytes by link class): one flow each way per tree edge between nodes, no NVLS
  // flows; ~5,100 flows became ~500 on 1,024 GPUs (issue 64.1). Unchanged elsewhere (fat trees,
  // WAN sites, under 6 GPUs a node): false.
  bool aggregate_nvls_tree_flows(const Group& g, std::vector<Flow>& flows);
  // A collective timed by the NCCL model (comm/nccl_model.h): the cheapest (algorithm, protocol)
  // pair, or the cheapest protocol of `only`; its latency is slept, its flows run at its pace.
  // `bytes` is the whole array S (all-gather's output); `root` is broadcast's.
  CollectiveOutcome nccl_collective(int rank, const Scope& s, CollectiveOp collective, double bytes,
                                    std::optional<NcclAlgorithm> only, int root = 0);
  const NcclShape& nccl_shape(const Group& g);
  CollectiveOutcome tree_broadcast(const Scope& s, double bytes, int root);
  CollectiveOutcome hierarchical_all_reduce(int rank, const Scope& s, double bytes);
  // 0: a and b share a node, 1: they share a site (or there are no sites), 2: the WAN joins them.
  int link_class(int a, int b) const;
  // Adds `bytes` of `out` as crossing the link class of a -> b.
  void add_class(CollectiveOutcome& out, int a, int b, double bytes) const;
  // Over WAN sites: reduce-scatter inside each site, all-reduce across the sites among the ranks
  // at the same position, all-gather inside each site; the WAN latency is paid on the 2(S-1)
  // crossing steps only, not on every step of a flat ring.
  CollectiveOutcome site_hierarchical_all_reduce(int rank, const Scope& s, double bytes);
  // Reduce-scatter (the array `bytes`: inside each site, then across the sites among the ranks at
  // the same position) and all-gather (the shard `bytes`: its mirror) over WAN sites: the WAN
  // latency is paid on S-1 steps, not N-1 (FSDP and ZeRO shard over the whole group).
  CollectiveOutcome site_hierarchical_half_op(int rank, const Scope& s, double bytes, bool gather);
  // Three ring phases (reduce-scatter in `sp`'s intra groups, all-reduce across, all-gather).
  CollectiveOutcome two_level_all_reduce(int rank, const Scope& s, double bytes, const Split& sp,
                                         const char* label_fused, const char* label_steps);
  CollectiveOutcome all_to_all(int rank, const Scope& s, double bytes);

  const Platform& platform_;
  const Topology& topology_;
  scenario::CollectiveFidelity fidelity_;
  scenario::CollectiveAlgorithm algorithm_;
  std::map<std::string, scenario::CollectiveBytesMap> collective_bytes_;        // calibrated ops
  std::map<std::pair<std::string, bool>, scenario::LinkFit> local_collectives_; // op, in place
  std::unordered_map<std::string, simgrid::s4u::Mailbox*> mailboxes_;
  std::unordered_map<std::uint64_t, std::pair<double, double>> routes_; // latency, bandwidth
  // Folded (rank classes), by the lane's two hosts: the flows of a collective over a million GPUs
  // map onto the few hosts of the folded platform, so this stays small where routes_ by rank pair
  // grew to millions of entries (issue 63.5a: seconds per collective shape).
  std::map<std::pair<const simgrid::s4u::Host*, const simgrid::s4u::Host*>,
           std::pair<double, double>>
      lane_routes_;
  std::pair<double, double> route(int src, int dst); // latency, bandwidth over the lanes
  std::unordered_map<int, double> ring_latency_;
  std::unordered_map<int, std::vector<int>> simulated_members_;
  std::map<std::tuple<int, int, int, int>, FlowShape> nccl_flow_shapes_;
  std::unordered_map<int, double> ring_bandwidth_;
  std::map<int, std::unique_ptr<Split>> splits_, site_splits_;
  std::vector<int> site_of_node_; // empty without WAN sites
  // By link class (link_class): what a message pays before it moves while the opposite direction
  // carries one (hw::LinkSpec::reverse_busy_s); the messages moving, by (source, destination) node.
  std::array<double, 3> reverse_busy_s_{};
  std::map<std::pair<int, int>, int> messages_moving_;
  const NcclGeneration nccl_generation_;
  std::optional<NcclProtocol> nccl_protocol_; // the scenario's NCCL_PROTO; none: the tuner picks
  double nic_Bps_ = 0;                        // a fat tree's cables run at the NIC's rate
  std::map<int, NcclShape> nccl_shapes_;
  // Per (group, NVLS inside nodes): each member's tree all-reduce bytes by link class, as shares.
  std::map<std::pair<int, bool>, std::vector<std::array<double, 3>>> tree_shares_;
  std::map<std::tuple<int, std::int64_t, int>, std::shared_ptr<Instance>> instances_;
  // Calibrated ops one of whose members ends after the others, by instance key: set by every
  // member before it joins, read by the last to arrive, dropped as they leave. The last caller
  // (scenario::SizeTime::last_caller_lag_s), or where the profile measured only how far apart
  // the ends fall (end_spread_s), a member picked from the key.
  struct LateEnd {
    double seconds = 0;
    bool last_caller = true;
  };
  std::map<std::tuple<int, std::int64_t, int>, LateEnd> late_ends_;
  // Messages: how many each side has posted per (group, tag, src, dst), and the open meetings.
  using PairKey = std::tuple<int, int, int, int>;
  std::map<PairKey, std::int64_t> sends_posted_, recvs_posted_;
  std::map<std::tuple<int, int, int, int, std::int64_t>, std::shared_ptr<Instance>> messages_;
  hw::GpuSpec gpu_; // the interference shares by collective kind
  CommInterference interference_;
  ComputeInterference compute_interference_;
  double comm_share(const Scope& s) const;
  double compute_share(const Scope& s) const;
};

} // namespace overlapsim::sim
