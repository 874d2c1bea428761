// The critical path's dependency graph (trace/analysis.cpp): each vertex's in-edges, in the order
// they were added, and whether the graph has a cycle. Issue 64.1: Boost.Graph's bidirectional
// adjacency list took ~250 bytes a vertex (an edge list node, out- and in-edge vectors), ~130 MB
// for the 521,000 ops of one step at 1,024 GPUs; this takes 4 bytes a vertex and 8 an edge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace overlapsim {

class DependencyGraph {
public:
  struct InEdge {
    std::uint32_t from;
    std::uint8_t kind; // the caller's label
  };

  // Vertices 0 .. vertices - 1 (fewer than 2^32).
  explicit DependencyGraph(std::size_t vertices);

  // Edges go in until finish(); each vertex's in-edges keep the order they were added in.
  void add_edge(std::size_t from, std::size_t to, std::uint8_t kind);
  void finish();

  std::size_t vertices() const { return vertices_; }
  // After finish().
  std::span<const InEdge> in_edges(std::size_t v) const {
    return {in_.data() + first_[v], first_[v + 1] - first_[v]};
  }
  // Whether some path leads from a vertex back to itself (then no topological order exists).
  bool has_cycle() const;

private:
  struct Edge {
    std::uint32_t from, to;
    std::uint8_t kind;
  };
  std::size_t vertices_;
  std::vector<Edge> pending_;        // until finish()
  std::vector<std::uint32_t> first_; // v's in-edges are in_[first_[v]] .. in_[first_[v + 1]]
  std::vector<InEdge> in_;
};

} // namespace overlapsim
