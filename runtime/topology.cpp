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

Topology::Topology(int nodes, int gpus_per_node)
    : cluster_nodes_(nodes), cluster_gpus_per_node_(gpus_per_node),
      registry_(std::make_shared<Registry>()) {
  if (nodes < 1 || gpus_per_node < 1)
    throw std::invalid_argument("Topology: nodes and gpus_per_node must be >= 1");
  members_.resize(static_cast<std::size_t>(nodes) * static_cast<std::size_t>(gpus_per_node));
  std::iota(members_.begin(), members_.end(), 0);
  index_members();
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

Topology Topology::view(std::vector<int> members) const {
  if (members.empty())
    throw std::invalid_argument("Topology::view: no members");
  std::sort(members.begin(), members.end());
  for (int r : members)
    if (r < 0 || r >= cluster_nodes_ * cluster_gpus_per_node_)
      throw std::invalid_argument("Topology::view: rank out of range");
  Topology v;
  v.cluster_nodes_ = cluster_nodes_;
  v.cluster_gpus_per_node_ = cluster_gpus_per_node_;
  v.registry_ = registry_;
  v.members_ = std::move(members);
  v.index_members();
  return v;
}

void Topology::index_members() {
  node_members_.clear();
  place_.clear();
  view_node_.clear();
  for (const int r : members_) {
    const int node = r / cluster_gpus_per_node_;
    const auto [it, fresh] = view_node_.try_emplace(node, static_cast<int>(node_members_.size()));
    if (fresh)
      node_members_.emplace_back();
    auto& on_node = node_members_[static_cast<std::size_t>(it->second)];
    place_[r] = {it->second, static_cast<int>(on_node.size())};
    on_node.push_back(r);
  }
  view_per_node_ = static_cast<int>(node_members_.front().size());
}

int Topology::node_of(int rank) const {
  if (const auto it = place_.find(rank); it != place_.end())
    return it->second.first;
  // Not a member: its cluster node's place among the view's nodes, else its cluster node.
  const int node = rank / cluster_gpus_per_node_;
  const auto it = view_node_.find(node);
  return it != view_node_.end() ? it->second : node;
}

int Topology::local_of(int rank) const {
  const auto it = place_.find(rank);
  return it != place_.end() ? it->second.second : rank % cluster_gpus_per_node_;
}

const Group& Topology::world() const {
  return group(members_);
}

const Group& Topology::intra_node(int node) const {
  if (node < 0 || node >= nodes())
    throw std::invalid_argument("Topology::intra_node: node out of range");
  return group(node_members_[static_cast<std::size_t>(node)]);
}

const Group& Topology::replication(int local) const {
  std::vector<int> ranks;
  for (const auto& on_node : node_members_)
    if (local >= 0 && local < static_cast<int>(on_node.size()))
      ranks.push_back(on_node[static_cast<std::size_t>(local)]);
  if (ranks.empty())
    throw std::invalid_argument("Topology::replication: no member at that place");
  return group(std::move(ranks));
}

const Group& Topology::group(std::vector<int> ranks) const {
  if (ranks.empty())
    throw std::invalid_argument("Topology::group: empty rank list");
  for (int r : ranks)
    if (r < 0 || r >= cluster_nodes_ * cluster_gpus_per_node_)
      throw std::invalid_argument("Topology::group: rank out of range");
  std::lock_guard lock(registry_->mutex);
  auto& groups = registry_->groups;
  auto& slot = groups[ranks]; // the key is copied before `ranks` moves into the group
  if (!slot)
    slot = std::make_unique<Group>(static_cast<int>(groups.size()) - 1, std::move(ranks));
  return *slot;
}

} // namespace overlapsim
