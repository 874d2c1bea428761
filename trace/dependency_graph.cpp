#include "trace/dependency_graph.h"

#include <boost/graph/depth_first_search.hpp>

#include <limits>
#include <stdexcept>

namespace overlapsim {

DependencyGraph::DependencyGraph(std::size_t vertices) : vertices_(vertices) {
  if (vertices >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("DependencyGraph: 2^32 vertices or more");
}

void DependencyGraph::add_edge(std::size_t from, std::size_t to, std::uint8_t kind) {
  pending_.emplace_back(static_cast<std::uint32_t>(to), static_cast<std::uint32_t>(from));
  pending_kinds_.push_back({kind});
}

void DependencyGraph::finish() {
  if (pending_.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("DependencyGraph: 2^32 edges or more");
  reversed_ = Reversed(boost::edges_are_unsorted_multi_pass, pending_.begin(), pending_.end(),
                       pending_kinds_.begin(), static_cast<std::uint32_t>(vertices_));
  decltype(pending_){}.swap(pending_);
  decltype(pending_kinds_){}.swap(pending_kinds_);
}

namespace {

// A depth-first search meets a back edge exactly where the graph has a cycle.
struct BackEdgeSeen : boost::default_dfs_visitor {
  bool* seen;
  template <class Edge, class Graph> void back_edge(const Edge&, const Graph&) const {
    *seen = true;
  }
};

} // namespace

bool DependencyGraph::has_cycle() const {
  // A cycle here is one in the reversed graph too. Boost's search keeps its own stack, so a long
  // chain of ops does not recurse.
  bool seen = false;
  BackEdgeSeen visitor;
  visitor.seen = &seen;
  boost::depth_first_search(reversed_, boost::visitor(visitor));
  return seen;
}

} // namespace overlapsim
