// Collectives as point-to-point flows on the SimGrid platform, so that links of different speeds and
// concurrent collectives sharing a link come out of SimGrid's network model, not a formula.
//
// Two fidelities (cluster.collectives):
//  - steps: every step of the algorithm is its own flow (a ring all-reduce is 2(N-1) steps of S/N
//    bytes to the next rank), exact and slow at scale;
//  - fused: each rank sleeps the latency of all steps but the last, then sends one flow carrying the
//    algorithm's total bytes, and the ranks leave together (the data of every rank must have crossed
//    the slowest link). When one bottleneck paces the ring this matches `steps` (tests/collectives).
#pragma once

#include "algorithms/runtime.h"
#include "sim/platform.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace overlapsim::sim {

struct CollectiveOutcome {
  double bytes_sent = 0;      // by this rank
  const char* algorithm = ""; // e.g. "ring/fused", for the trace
};

class Network {
public:
  Network(const Platform& platform, const spec::ClusterSpec& cluster);

  // Runs rank `rank`'s part of `call`, whose data is `bytes` long (NCCL's convention: the full array
  // for all-reduce, reduce-scatter, broadcast, reduce and all-to-all; the shard for all-gather).
  // `seq` numbers the collectives of this rank on this group (the same on every member).
  // Blocks the calling actor until this rank's part is done.
  CollectiveOutcome run(int rank, const CollectiveCall& call, double bytes, std::int64_t seq);

  // One-way latency of the route between two ranks.
  double latency(int src, int dst);

private:
  struct Instance;

  simgrid::s4u::Mailbox* mailbox(int group, int src, int dst);
  double ring_max_latency(const Group& group);
  // Fused execution of a collective: the last rank to arrive sleeps `wait`, runs `flows`
  // (src, dst rank pairs) of `bytes` each, and releases the others.
  void fused(const Group& group, std::int64_t seq, double wait,
             const std::vector<std::pair<int, int>>& flows, double bytes);
  // Sends `bytes` to `dst` and receives from `src` at the same time (either may be -1 for none).
  void exchange(const Group& group, int self, int dst, double send_bytes, int src);

  CollectiveOutcome ring_all_reduce(int rank, const Group& g, double bytes, std::int64_t seq);
  CollectiveOutcome ring_reduce_scatter(int rank, const Group& g, double bytes, std::int64_t seq);
  CollectiveOutcome ring_all_gather(int rank, const Group& g, double shard_bytes, std::int64_t seq);
  CollectiveOutcome ring_broadcast(int rank, const Group& g, double bytes, int root, std::int64_t seq,
                                   bool reduce);
  CollectiveOutcome all_to_all(int rank, const Group& g, double bytes);
  // Ring pattern shared by all-reduce, reduce-scatter, all-gather and barrier: `steps` steps of
  // `chunk` bytes to the next rank.
  CollectiveOutcome ring_steps(int rank, const Group& g, int steps, double chunk, std::int64_t seq);

  const Platform& platform_;
  spec::CollectiveFidelity fidelity_;
  bool cap_flows_; // several NICs per node: one flow is capped at one NIC's bandwidth
  std::unordered_map<std::uint64_t, simgrid::s4u::Mailbox*> mailboxes_;
  std::unordered_map<std::uint64_t, double> latency_;
  std::unordered_map<int, double> ring_latency_;
  std::map<std::pair<int, std::int64_t>, std::shared_ptr<Instance>> instances_;
};

} // namespace overlapsim::sim
