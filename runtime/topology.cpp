#include "runtime/topology.h"

#include <algorithm>
#include <numeric>
#include <stdexcept>

namespace overlapsim {

Group::Group(int group_id, std::vector<int> members) : id(group_id), ranks(std::move(members)) {
  for (int i = 0; i < size(); ++i)
    by_rank_.emplace_back(ranks[static_cast<std::size_t>(i)], i);
  std::sort(by_rank_.begin(), by_rank_.end());
}

int Group::index_of(int rank) const {
  const auto it = std::lower_bound(by_rank_.begin(), by_rank_.end(), std::pair{rank, -1});
  return it != by_rank_.end() && it->first == rank ? it->second : -1;
}

Topology::Topology(int nodes, int gpus_per_node) : nodes_(nodes), gpus_per_node_(gpus_per_node) {
  if (nodes < 1 || gpus_per_node < 1)
    throw std::invalid_argument("Topology: nodes and gpus_per_node must be >= 1");
  // Ids are handed out in creation order: the standard groups are made here, in one order, so
  // that every process of a real job gives them the same ids (a process creating only its own
  // node's group first would give node 0's and node 1's groups the same id, and their process
  // groups the same rendezvous prefix).
  (void)world();
  for (int n = 0; n < nodes; ++n)
    (void)intra_node(n);
  for (int l = 0; l < gpus_per_node; ++l)
    (void)replication(l);
}

const Group& Topology::world() const {
  std::vector<int> ranks(static_cast<std::size_t>(world_size()));
  std::iota(ranks.begin(), ranks.end(), 0);
  return group(std::move(ranks));
}

const Group& Topology::intra_node(int node) const {
  std::vector<int> ranks;
  for (int g = 0; g < gpus_per_node_; ++g)
    ranks.push_back(node * gpus_per_node_ + g);
  return group(std::move(ranks));
}

const Group& Topology::replication(int local) const {
  std::vector<int> ranks;
  for (int n = 0; n < nodes_; ++n)
    ranks.push_back(n * gpus_per_node_ + local);
  return group(std::move(ranks));
}

const Group& Topology::group(std::vector<int> ranks) const {
  if (ranks.empty())
    throw std::invalid_argument("Topology::group: empty rank list");
  for (int r : ranks)
    if (r < 0 || r >= world_size())
      throw std::invalid_argument("Topology::group: rank out of range");
  std::lock_guard lock(mutex_);
  auto& slot = groups_[ranks]; // the key is copied before `ranks` moves into the group
  if (!slot)
    slot = std::make_unique<Group>(static_cast<int>(groups_.size()) - 1, std::move(ranks));
  return *slot;
}

} // namespace overlapsim
