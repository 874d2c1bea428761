#include "trace/dependency_graph.h"

#include <limits>
#include <stdexcept>

namespace overlapsim {

DependencyGraph::DependencyGraph(std::size_t vertices) : vertices_(vertices) {
  if (vertices >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("DependencyGraph: 2^32 vertices or more");
}

void DependencyGraph::add_edge(std::size_t from, std::size_t to, std::uint8_t kind) {
  pending_.push_back({static_cast<std::uint32_t>(from), static_cast<std::uint32_t>(to), kind});
}

void DependencyGraph::finish() {
  if (pending_.size() >= std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("DependencyGraph: 2^32 edges or more");
  // A counting sort by target: stable, so each vertex's in-edges keep the order they were added.
  first_.assign(vertices_ + 1, 0);
  for (const auto& e : pending_)
    ++first_[e.to + 1];
  for (std::size_t v = 1; v < first_.size(); ++v)
    first_[v] += first_[v - 1];
  in_.resize(pending_.size());
  std::vector<std::uint32_t> next(first_.begin(), first_.end() - 1);
  for (const auto& e : pending_)
    in_[next[e.to]++] = {e.from, e.kind};
  std::vector<Edge>{}.swap(pending_);
}

bool DependencyGraph::has_cycle() const {
  // Kahn's algorithm on the reversed graph: take vertices no edge leaves, then those whose every
  // out-edge led to a vertex taken. Whatever is never taken lies on a cycle or leads to one.
  std::vector<std::uint32_t> out_degree(vertices_, 0);
  for (const auto& e : in_)
    ++out_degree[e.from];
  std::vector<std::uint32_t> ready;
  for (std::size_t v = 0; v < vertices_; ++v)
    if (out_degree[v] == 0)
      ready.push_back(static_cast<std::uint32_t>(v));
  std::size_t taken = 0;
  while (!ready.empty()) {
    const std::uint32_t v = ready.back();
    ready.pop_back();
    ++taken;
    for (const auto& e : in_edges(v))
      if (--out_degree[e.from] == 0)
        ready.push_back(e.from);
  }
  return taken < vertices_;
}

} // namespace overlapsim
