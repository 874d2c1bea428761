// The critical path's compact dependency graph (trace/dependency_graph.h): in-edges in the order
// added, and cycles found as Boost's topological sort found them (issue 64.1).
#include "trace/dependency_graph.h"

#include <gtest/gtest.h>
#include <utility>
#include <vector>

namespace overlapsim {
namespace {

std::vector<std::pair<unsigned, unsigned>> in_of(const DependencyGraph& g, std::size_t v) {
  std::vector<std::pair<unsigned, unsigned>> out;
  for (const auto& e : g.in_edges(v))
    out.emplace_back(e.from, e.kind);
  return out;
}

TEST(DependencyGraph, InEdgesKeepTheOrderTheyWereAdded) {
  // 0 -> 2 (kind 1), 3 -> 2 (kind 0), 1 -> 2 (kind 2), 0 -> 1 (kind 0), 3 -> 2 again (kind 2).
  DependencyGraph g(4);
  g.add_edge(0, 2, 1);
  g.add_edge(3, 2, 0);
  g.add_edge(1, 2, 2);
  g.add_edge(0, 1, 0);
  g.add_edge(3, 2, 2);
  g.finish();
  EXPECT_TRUE(in_of(g, 0).empty());
  EXPECT_EQ(in_of(g, 1), (std::vector<std::pair<unsigned, unsigned>>{{0, 0}}));
  EXPECT_EQ(in_of(g, 2),
            (std::vector<std::pair<unsigned, unsigned>>{{0, 1}, {3, 0}, {1, 2}, {3, 2}}));
  EXPECT_TRUE(in_of(g, 3).empty());
  EXPECT_FALSE(g.has_cycle()); // parallel edges 3 -> 2 are no cycle
}

TEST(DependencyGraph, FindsCycles) {
  DependencyGraph chain(3); // 0 -> 1 -> 2
  chain.add_edge(0, 1, 0);
  chain.add_edge(1, 2, 0);
  chain.finish();
  EXPECT_FALSE(chain.has_cycle());

  DependencyGraph loop(4); // 0 -> 1 -> 2 -> 0, and 3 hanging off 2
  loop.add_edge(0, 1, 0);
  loop.add_edge(1, 2, 0);
  loop.add_edge(2, 0, 0);
  loop.add_edge(2, 3, 0);
  loop.finish();
  EXPECT_TRUE(loop.has_cycle());

  DependencyGraph self(2); // 1 -> 1
  self.add_edge(0, 1, 0);
  self.add_edge(1, 1, 0);
  self.finish();
  EXPECT_TRUE(self.has_cycle());

  DependencyGraph empty(0);
  empty.finish();
  EXPECT_FALSE(empty.has_cycle());
}

} // namespace
} // namespace overlapsim
