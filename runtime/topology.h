// Who is where: ranks, nodes, and the process groups collectives run on. Shared by both runtimes so
// that an algorithm names its groups the same way in simulation and for real.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace overlapsim {

// An ordered set of global ranks. Groups are interned by Topology: the same rank list is always the
// same Group object with the same id, in every runtime.
struct Group {
  Group(int group_id, std::vector<int> members);

  int id = 0;
  std::vector<int> ranks;

  int size() const { return static_cast<int>(ranks.size()); }
  int index_of(int rank) const; // -1 when the rank is not a member; O(log n)
  bool contains(int rank) const { return index_of(rank) >= 0; }

private:
  std::vector<std::pair<int, int>> by_rank_; // (rank, index), sorted: collectives ask per call
};

class Topology {
public:
  Topology(int nodes, int gpus_per_node);

  int world_size() const { return nodes_ * gpus_per_node_; }
  int nodes() const { return nodes_; }
  int gpus_per_node() const { return gpus_per_node_; }
  int node_of(int rank) const { return rank / gpus_per_node_; }
  int local_of(int rank) const { return rank % gpus_per_node_; }

  const Group& world() const;
  const Group& intra_node(int node) const;          // the GPUs of one node
  const Group& replication(int local) const;        // GPUs with the same local index, one per node
  const Group& group(std::vector<int> ranks) const; // any subset, in the given order

private:
  int nodes_;
  int gpus_per_node_;
  mutable std::mutex mutex_; // the real runtime's two threads may both intern groups
  mutable std::map<std::vector<int>, std::unique_ptr<Group>> groups_;
};

} // namespace overlapsim
