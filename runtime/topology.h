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

  // The topology a data-parallel group sees inside a 3D-parallel job (issue 65): its `members`
  // (global ranks, ascending) are the world; nodes() are the nodes they span, gpus_per_node()
  // the members on each (the first node's), node_of() and local_of() a member's node among those
  // and its place among that node's members, intra_node() and replication() the members on one
  // node and those at one place on every node. Groups stay interned in this topology's table, so
  // a group has one id in the whole job whoever names it.
  Topology view(std::vector<int> members) const;

  int world_size() const { return static_cast<int>(members_.size()); }
  int nodes() const { return static_cast<int>(node_members_.size()); }
  int gpus_per_node() const { return view_per_node_; }
  int node_of(int rank) const;
  int local_of(int rank) const;

  const Group& world() const;
  const Group& intra_node(int node) const;          // the GPUs of one node
  const Group& replication(int local) const;        // GPUs with the same local index, one per node
  const Group& group(std::vector<int> ranks) const; // any subset, in the given order

private:
  struct Registry {
    std::mutex mutex; // the real runtime's two threads may both intern groups
    std::map<std::vector<int>, std::unique_ptr<Group>> groups;
  };
  Topology() = default;
  void index_members();

  int cluster_nodes_ = 1;
  int cluster_gpus_per_node_ = 1;
  std::shared_ptr<Registry> registry_;
  std::vector<int> members_;                   // the world, ascending
  std::vector<std::vector<int>> node_members_; // per node of the view, its members
  std::map<int, std::pair<int, int>> place_;   // member -> (view node, place on it)
  std::map<int, int> view_node_;               // cluster node -> view node
  int view_per_node_ = 1;
};

} // namespace overlapsim
