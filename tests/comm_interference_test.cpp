// cluster.gpu.comm_interference: while a collective runs on a GPU, it takes that share of the
// GPU's compute speed (NCCL's kernels hold SMs; Gloo's threads hold cores). Pinned by hand.
#include "scenario/calibration.h"
#include "test_util.h"

#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "sim/child_process.h"
#include "sim/comm_interference.h"
#include "sim/platform.h"
#include "trace/analysis.h"

#include "trace/metrics.h"
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

namespace overlapsim {
namespace {

using testing::scenario_from;
using testing::simulate;

// Two nodes of one 100 TFLOP/s GPU on a 10 GB/s, 10 us network. l1 (100M params, 200 MB of bf16
// gradients, its own bucket at a 200 MB cap) ends the backward; its all-reduce, 2 x (10 us +
// 100 MB / 10 GB/s) = 20.02 ms, runs while l0's 20 ms backward (1 TFLOP x 2) computes.
std::string scenario_text(const std::string& interference) {
  return R"(name: interference
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: {peak_tflops: 100, efficiency: 1.0, memory: 80GB, hbm_bandwidth: 1TB/s)" +
         interference + R"(}
  inter_node: {bandwidth: 10GB/s, latency: 10us}
  collectives: fused
model:
  layers:
    - {name: l0, params: 1M, fwd_flops_per_sample: 1T}
    - {name: l1, params: 100M, fwd_flops_per_sample: 100G}
training: {micro_batch: 1, seq_len: 1, steps: 3}
algorithms: [ddp]
)";
}

double duration_of(const Trace& t, const std::string& name, int step) {
  for (const auto& e : t.events)
    if (e.worker == 0 && e.step == step && t.name_of(e.name) == name)
      return e.end - e.start;
  ADD_FAILURE() << "no event " << name;
  return 0;
}

TEST(CommInterference, ARunningCollectiveSlowsTheComputeBesideIt) {
  const std::map<std::string, std::string> options = {{"bucket_cap", "200MB"}};
  const auto free = simulate(scenario_from(scenario_text("")), "ddp", options);
  const auto slowed =
      simulate(scenario_from(scenario_text(", comm_interference: 0.25")), "ddp", options);
  // Without interference l0's backward takes its 20 ms.
  EXPECT_NEAR(duration_of(free.trace, "bwd l0", 1), 0.020, 1e-6);
  // With 0.25: for the all-reduce's 20.02 ms l0 computes at 75% (15.015 ms of work), then the
  // remaining 4.985 ms at full speed: 25.005 ms.
  EXPECT_NEAR(duration_of(slowed.trace, "bwd l0", 1), 0.025005, 1e-6);
  // The collective itself is not slowed, and forwards (nothing running beside them) are not.
  EXPECT_NEAR(duration_of(slowed.trace, "all-reduce bucket 0", 1),
              duration_of(free.trace, "all-reduce bucket 0", 1), 1e-9);
  EXPECT_NEAR(duration_of(slowed.trace, "fwd l0..l1", 1), 0.011, 1e-6);
}

// GPU 0's `bwd l0` of step 1 against the rule of sim/comm_interference.h: it does W = 20 ms of
// work at full speed, except while some collective moves GPU 0's data (after the op's last peer
// arrived, peer_arrivals), when it runs at 1 - share however many collectives do. So it lasts
// W + share x L, L the time in it during which GPU 0's data moves.
struct BackwardUnderTransfers {
  double duration = 0;
  double moving = 0; // L
};

BackwardUnderTransfers bwd_l0_of_gpu0(const Trace& t) {
  BackwardUnderTransfers b;
  double start = 0, end = 0;
  for (const auto& e : t.events)
    if (e.worker == 0 && e.step == 1 && t.name_of(e.name) == "bwd l0")
      start = e.start, end = e.end;
  const auto arrival = peer_arrivals(t);
  std::vector<Interval> moving;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (e.worker == 0 && e.category == OpCategory::comm) {
      const double from = std::max({e.start, arrival[i], start}), to = std::min(e.end, end);
      if (to > from)
        moving.push_back({from, to});
    }
  }
  b.duration = end - start;
  b.moving = union_length(moving);
  return b;
}

// Issue 25.4: waiting for a slower peer slows nothing. GPU 1 (slowdown 2) reaches the all-reduce
// of l1's gradients ~15 ms after GPU 0 posted it; GPU 0 computes l0's backward meanwhile at full
// speed, and at 75% only once the data moves (the old rule slowed it from the post: 26.7 ms).
TEST(CommInterference, WaitingForAPeerDoesNotSlowTheCompute) {
  auto text = scenario_text(", comm_interference: 0.25");
  text.replace(text.find("  inter_node"), 0, "  stragglers: [{gpu: 1, slowdown: 2}]\n");
  const auto r = simulate(scenario_from(text), "ddp", {{"bucket_cap", "200MB"}});
  const auto b = bwd_l0_of_gpu0(r.trace);
  EXPECT_GT(b.moving, 0.001);
  EXPECT_LT(b.moving, 0.015); // the wait is not in it
  EXPECT_NEAR(b.duration, 0.020 + 0.25 * b.moving, 1e-6);
  EXPECT_LT(b.duration, 0.024);
}

// Runs `actors(platform, interference)` on a SimGrid platform of two single-GPU nodes at
// comm_interference `share`, in a child process (SimGrid runs one engine per process); returns
// what it prints.
std::string on_platform(
    double share,
    const std::function<std::string(const sim::Platform&, sim::CommInterference&)>& actors) {
  namespace sg4 = simgrid::s4u;
  auto cluster = testing::four_blocks_on_two_nodes(0, 1).cluster;
  cluster.gpu.comm_interference = share;
  sim::ChildProcess child([&] {
    int argc = 1;
    char name[] = "interference";
    char* argv[] = {name, nullptr};
    sg4::Engine engine(&argc, argv);
    xbt_log_control_set("root.thres:critical");
    sim::configure_engine(engine, cluster);
    const auto platform = sim::build_platform(cluster);
    sim::CommInterference interference(platform, cluster.gpu.any_comm_interference());
    return actors(platform, interference);
  });
  return child.collect();
}

// `seconds` of work at `priority` (a stream's weight: 1 compute, share / (1 - share) comm) on
// `gpu`; its end time into `done`.
void work(simgrid::s4u::Host* gpu, double seconds, double priority, double& done) {
  namespace sg4 = simgrid::s4u;
  sg4::Actor::create("work", gpu, [gpu, seconds, priority, &done] {
    sg4::this_actor::execute(gpu->get_speed() * seconds, priority);
    done = sg4::Engine::get_clock();
  });
}

// Issue 25.4: bounded per GPU. On GPU 0 of a SimGrid platform, 10 ms of compute runs while two
// transfers are open for the first 4 ms and one until 6 ms: bounded, it runs at 75% for 6 ms
// (4.5 ms of work), then the remaining 5.5 ms: it ends at 11.5 ms. Summed per open op (the old
// rule) it ran at 50% for 4 ms, 75% for 2 ms, and ended at 12.5 ms.
TEST(CommInterference, ConcurrentTransfersDoNotAddUp) {
  namespace sg4 = simgrid::s4u;
  const auto done = on_platform(0.25, [](const auto& platform, auto& interference) {
    double end = -1;
    work(platform.gpus[0], 0.010, 1, end);
    sg4::Actor::create("comm", platform.gpus[0], [&interference] {
      interference.begin(0, 0.25);
      interference.begin(0, 0.25);
      sg4::this_actor::sleep_for(0.004);
      interference.end(0, 0.25);
      sg4::this_actor::sleep_for(0.002);
      interference.end(0, 0.25);
    });
    sg4::Engine::get_instance()->run();
    return std::to_string(end);
  });
  EXPECT_NEAR(std::stod(done), 0.0115, 1e-9);
}

// The slowdown outlives the actor that opened the transfer (a collective's last arrival opens it
// for every member and may finish first): opened by an actor that exits at once and closed 4 ms
// later by another, 10 ms of work runs at 75% for 4 ms and ends at 11 ms. The background Exec this
// replaced was cancelled with the actor that started it, and the work ended at 10 ms.
TEST(CommInterference, OutlivesTheActorThatOpenedIt) {
  namespace sg4 = simgrid::s4u;
  const auto done = on_platform(0.25, [](const auto& platform, auto& interference) {
    double end = -1;
    work(platform.gpus[0], 0.010, 1, end);
    sg4::Actor::create("opener", platform.gpus[1],
                       [&interference] { interference.begin(0, 0.25); });
    sg4::Actor::create("closer", platform.gpus[1], [&interference] {
      sg4::this_actor::sleep_for(0.004);
      interference.end(0, 0.25);
    });
    sg4::Engine::get_instance()->run();
    return std::to_string(end);
  });
  EXPECT_NEAR(std::stod(done), 0.011, 1e-9);
}

// The transfer weighs share / (1 - share) = 1/3 at 0.25 beside the streams' weights (1 compute,
// 4 comm at comm_stream_share 0.8), a transfer open from 0 to 20 ms on GPU 0, by hand:
// - the comm stream's 10 ms alone keeps 4 / (4 + 1/3) = 12/13 of the GPU: ends at 130/12 =
//   10.833 ms (the power state this replaced slowed it to 75% like the compute stream: 13.333 ms);
// - both streams' 10 ms from 0: the comm stream keeps 4 / (5 + 1/3) = 0.75 and ends at 13.333 ms,
//   the compute stream 0.1875 (2.5 ms done by then), then 0.75 until 20 ms (5 ms more), then the
//   last 2.5 ms alone: 22.5 ms;
// - and GPU 1, whose data does not move, runs its 10 ms in 10 ms.
TEST(CommInterference, TheTransferSharesTheGpuWithTheStreamsByWeight) {
  namespace sg4 = simgrid::s4u;
  const auto ends = on_platform(0.25, [](const auto& platform, auto& interference) {
    double comm_alone = -1, comm = -1, compute = -1, other_gpu = -1;
    sg4::Actor::create("transfer", platform.gpus[0], [&] {
      interference.begin(0, 0.25);
      work(platform.gpus[0], 0.010, 4, comm_alone);
      sg4::this_actor::sleep_for(0.020);
      interference.end(0, 0.25);
      // Again, with both streams computing.
      interference.begin(0, 0.25);
      work(platform.gpus[0], 0.010, 4, comm);
      work(platform.gpus[0], 0.010, 1, compute);
      work(platform.gpus[1], 0.010, 1, other_gpu);
      sg4::this_actor::sleep_for(0.020);
      interference.end(0, 0.25);
    });
    sg4::Engine::get_instance()->run();
    return fmt::format("{} {} {} {}", comm_alone, comm - 0.020, compute - 0.020, other_gpu - 0.020);
  });
  std::istringstream in(ends);
  double comm_alone = 0, comm = 0, compute = 0, other_gpu = 0;
  in >> comm_alone >> comm >> compute >> other_gpu;
  EXPECT_NEAR(comm_alone, 0.130 / 12, 1e-9);
  EXPECT_NEAR(comm, 0.040 / 3, 1e-9);
  EXPECT_NEAR(compute, 0.0225, 1e-9);
  EXPECT_NEAR(other_gpu, 0.010, 1e-9);
}

// Kinds measured apart weigh their own: a transfer at 0.25 (weight 1/3) open from 0 to 20 ms and
// one at 0.5 (weight 1) from 0 to 4 ms weigh as the heavier while both are open. 10 ms of
// compute runs at 1 / (1 + 1) for 4 ms (2 ms of work), then at 0.75: the other 8 ms end at
// 4 + 10.667 = 14.667 ms. (At the lighter weight throughout: 13.333 ms.)
TEST(CommInterference, TransfersOfSeveralKindsWeighAsTheHeaviest) {
  namespace sg4 = simgrid::s4u;
  const auto done = on_platform(0.25, [](const auto& platform, auto& interference) {
    double end = -1;
    work(platform.gpus[0], 0.010, 1, end);
    sg4::Actor::create("comm", platform.gpus[0], [&interference] {
      interference.begin(0, 0.25);
      interference.begin(0, 0.5);
      sg4::this_actor::sleep_for(0.004);
      interference.end(0, 0.5);
      sg4::this_actor::sleep_for(0.016);
      interference.end(0, 0.25);
    });
    sg4::Engine::get_instance()->run();
    return fmt::format("{}", end);
  });
  EXPECT_NEAR(std::stod(done), 0.004 + 0.008 / 0.75, 1e-9);
}

// A profile's share for one collective kind applies to that kind only. DDP's all-reduce beside
// l0's 20 ms backward (as in ARunningCollectiveSlowsTheComputeBesideIt, at 0.25: 25.005 ms): a
// profile that measured the all-reduce at 0.5 (its kind's own) slows the backward to
// 0.5 x 20.02 = 10.01 ms of work during the all-reduce, 9.99 ms after: 30.01 ms; one that measured
// only the reduce-scatter at 0.5 leaves it at 25.005 ms.
TEST(CommInterference, AProfilesShareForOneKindAppliesToThatKind) {
  const testing::ScratchDir dir;
  const auto backward_with = [&dir](const std::string& op) {
    scenario::Calibration c;
    c.model = "interference";
    c.layers = {{"l0", 0.01, 0.02}, {"l1", 0.001, 0.002}};
    c.comm_interference = 0.25;
    c.interference_by_op[op].comm_interference = 0.5;
    const auto path = dir / (op + ".json");
    std::ofstream(path) << scenario::calibration_json(c);
    auto text = scenario_text("");
    text.replace(text.find("training:"), 0, "  profile: " + path.string() + "\n");
    const auto result = simulate(scenario_from(text), "ddp", {{"bucket_cap", "200MB"}});
    return duration_of(result.trace, "bwd l0", 1);
  };
  EXPECT_NEAR(backward_with("all_reduce"), 0.03001, 1e-6);
  EXPECT_NEAR(backward_with("reduce_scatter"), 0.025005, 1e-6);
}

TEST(CommInterference, ComesFromTheScenarioOrAMeasuredProfileAndIsBounded) {
  EXPECT_EQ(scenario_from(scenario_text("")).cluster.gpu.comm_interference, 0.0);
  EXPECT_EQ(scenario_from(scenario_text(", comm_interference: 0.3")).cluster.gpu.comm_interference,
            0.3);
  EXPECT_THROW(scenario_from(scenario_text(", comm_interference: 0.95")), std::runtime_error);
  // A profile carries it in its model section, and a scenario that loads the profile uses it.
  scenario::Calibration c;
  c.model = "interference";
  c.layers = {{"l0", 0.01, 0.02}, {"l1", 0.001, 0.002}};
  c.comm_interference = 0.125;
  const testing::ScratchDir dir;
  const auto path = dir / "interference.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(scenario::read_calibration(path.string()).comm_interference, 0.125);
  auto with_profile = scenario_text("");
  with_profile.replace(with_profile.find("training:"), 0, "  profile: " + path.string() + "\n");
  EXPECT_EQ(scenario_from(with_profile).cluster.gpu.comm_interference, 0.125);
  // And its shares by collective kind, which the GPU's take for those kinds only.
  c.interference_by_op["reduce_scatter"] = {0.5, 0.0625};
  c.interference_by_op["all_gather"].compute_interference = 0.25;
  std::ofstream(path) << scenario::calibration_json(c);
  const auto back = scenario::read_calibration(path.string());
  EXPECT_EQ(back.interference_by_op.at("reduce_scatter").comm_interference, 0.5);
  EXPECT_EQ(back.interference_by_op.at("reduce_scatter").compute_interference, 0.0625);
  EXPECT_FALSE(back.interference_by_op.at("all_gather").comm_interference.has_value());
  const auto gpu = scenario_from(with_profile).cluster.gpu;
  EXPECT_EQ(gpu.comm_interference_of("reduce_scatter"), 0.5);
  EXPECT_EQ(gpu.compute_interference_of("reduce_scatter"), 0.0625);
  EXPECT_EQ(gpu.comm_interference_of("all_gather"), 0.125);
  EXPECT_EQ(gpu.compute_interference_of("all_gather"), 0.25);
  EXPECT_EQ(gpu.comm_interference_of("all_reduce"), 0.125);
  EXPECT_TRUE(gpu.any_compute_interference());
  // Bad entries name the key and what was expected.
  const auto rejects = [&](const std::string& by_op, const std::string& message) {
    const auto bad = dir / "bad.json";
    auto j = nlohmann::json::parse(scenario::calibration_json(c));
    j["model"]["interference_by_op"] = nlohmann::json::parse(by_op);
    std::ofstream(bad) << j.dump();
    try {
      scenario::read_calibration(bad.string());
      ADD_FAILURE() << "accepted " << by_op;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
    }
  };
  rejects(R"({"all_to_one": {"comm_interference": 0.1}})",
          "interference_by_op.all_to_one: unknown");
  rejects(R"({"all_gather": {"comm_interference": 0.95}})", "comm_interference is 0.95");
  rejects(R"({"all_gather": 0.3})", "interference_by_op.all_gather: expected");
  rejects(R"([1])", "interference_by_op: expected a map");
}

} // namespace
} // namespace overlapsim
