// The critical path's dependency graph (trace/analysis.cpp): each vertex's in-edges, in the order
// they were added, and whether the graph has a cycle. Issue 64.1: Boost.Graph's bidirectional
// adjacency list took ~250 bytes a vertex (an edge list node, out- and in-edge vectors), ~130 MB
// for the 521,000 ops of one step at 1,024 GPUs. Boost.Graph's compressed sparse row graph of the
// reversed edges (each vertex's out-edges there are its in-edges here) with 4-byte vertex and edge
// numbers takes 4 bytes a vertex and 5 an edge; its construction from an unsorted edge list is a
// stable counting sort, so a vertex's in-edges keep the order they were added in.
#pragma once

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/iterator/transform_iterator.hpp>
#include <boost/range/iterator_range.hpp>

#include <cstddef>
#include <cstdint>
#include <utility>
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

  // Edges go in until finish().
  void add_edge(std::size_t from, std::size_t to, std::uint8_t kind);
  void finish();

  std::size_t vertices() const { return vertices_; }
  // After finish(): v's in-edges, in the order they were added.
  auto in_edges(std::size_t v) const {
    const auto [first, last] = boost::out_edges(static_cast<std::uint32_t>(v), reversed_);
    const ToInEdge to_in_edge{&reversed_};
    return boost::make_iterator_range(boost::make_transform_iterator(first, to_in_edge),
                                      boost::make_transform_iterator(last, to_in_edge));
  }
  // Whether some path leads from a vertex back to itself (then no topological order exists).
  bool has_cycle() const;

private:
  struct Kind {
    std::uint8_t kind = 0;
  };
  using Reversed =
      boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, Kind,
                                         boost::no_property, std::uint32_t, std::uint32_t>;
  struct ToInEdge {
    const Reversed* graph;
    InEdge operator()(const Reversed::edge_descriptor& e) const {
      return {boost::target(e, *graph), (*graph)[e].kind};
    }
  };
  std::size_t vertices_;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> pending_; // (to, from) until finish()
  std::vector<Kind> pending_kinds_;
  Reversed reversed_;
};

} // namespace overlapsim
