// sim/stream_exec.h: one SimGrid execution run again for each of a stream's compute ops (issue
// 64.1, fifth pass) ends each op when a fresh execution would. Pinned by hand.
#include "sim/child_process.h"
#include "sim/platform.h"
#include "sim/stream_exec.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <simgrid/s4u.hpp>
#include <sstream>
#include <vector>
#include <xbt/log.h>

namespace overlapsim {
namespace {

namespace sg4 = simgrid::s4u;

// On one GPU: the compute stream's three 1-second ops through one StreamExec; from 0.5 s an op of
// 1 s at priority 3 beside them; after them a helper actor's 1-second op through the same
// StreamExec (an execution of its own: one keeps a pointer to its creator). Returns the ends.
std::vector<double> ends() {
  const auto cluster = testing::four_blocks_on_two_nodes(0, 1).cluster;
  sim::ChildProcess child([&cluster] {
    int argc = 1;
    char name[] = "stream-exec";
    char* argv[] = {name, nullptr};
    sg4::Engine engine(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    sim::configure_engine(engine, cluster);
    const auto platform = sim::build_platform(cluster);
    auto* gpu = platform.gpus[0];
    const double second = gpu->get_speed();
    sim::StreamExec stream;
    std::vector<double> out;
    sg4::Actor::create("compute", gpu, [&] {
      for (int i = 0; i < 3; ++i) {
        stream.run(gpu, second);
        out.push_back(sg4::Engine::get_clock());
      }
      sg4::Actor::create("helper", gpu, [&] {
        stream.run(gpu, second);
        out.push_back(sg4::Engine::get_clock());
      })->join();
      stream.run(gpu, second, 3); // the creator's own again, at another priority
      out.push_back(sg4::Engine::get_clock());
    });
    sg4::Actor::create("other", gpu, [&] {
      sg4::this_actor::sleep_for(0.5);
      stream.run(gpu, second, 3);
      out.push_back(sg4::Engine::get_clock());
    });
    engine.run();
    std::ostringstream text;
    for (const double t : out)
      text << fmt::format("{:.17g} ", t);
    return text.str();
  });
  std::istringstream in(child.collect());
  std::vector<double> out;
  for (double t = 0; in >> t;)
    out.push_back(t);
  return out;
}

// The first op runs alone for 0.5 s, then at 1/4 of the GPU beside the other's priority 3 (3/4)
// until that one's 1 s of work ends at 0.5 + 4/3 s; by then it has done 0.5 + 1/3 s of work, the
// last 1/6 s alone: it ends at 2 s. The other ends at 0.5 + 4/3 = 1.8333 s, the next two ops at 3
// and 4 s, the helper's at 5 s, the last (alone, whatever its priority) at 6 s.
TEST(StreamExec, EachOpEndsWhenAFreshExecutionWould) {
  const auto t = ends();
  ASSERT_EQ(t.size(), 6u);
  EXPECT_NEAR(t[0], 0.5 + 4.0 / 3.0, 1e-9); // the other actor's
  EXPECT_NEAR(t[1], 2.0, 1e-9);
  EXPECT_NEAR(t[2], 3.0, 1e-9);
  EXPECT_NEAR(t[3], 4.0, 1e-9);
  EXPECT_NEAR(t[4], 5.0, 1e-9);
  EXPECT_NEAR(t[5], 6.0, 1e-9);
}

} // namespace
} // namespace overlapsim
