// cluster.<link>.reverse_busy_delay (hw::LinkSpec::reverse_busy_s): a message that starts while
// the opposite direction between its two nodes carries a message waits that long before it moves
// (over TCP the receiver's notice and the acknowledgements queue behind the other direction's
// data). Pinned by hand on two 10 MB messages over a 1 GB/s link.
#include "algorithms/algorithm.h"
#include "scenario/calibration.h"
#include "test_util.h"

#include <fstream>
#include <gtest/gtest.h>

namespace overlapsim {
namespace {

using testing::scenario_from;

constexpr std::int64_t kMessage = 2'500'000; // fp32 elements: 10 MB, 10 ms at 1 GB/s

// GPU 0 sends GPU 1 a message at 0; GPU 1 sends one back after a 2 ms fill (2 MB at 1 GB/s; at 0
// with `together`), and with `third` a second one after that, when the link is quiet again.
class CrossingMessages final : public Algorithm {
public:
  explicit CrossingMessages(bool third, bool together = false)
      : third_(third), together_(together) {}
  std::string name() const override { return "crossing-messages"; }
  std::unique_ptr<WorkerProgram> program(Worker& w) const override {
    class P final : public WorkerProgram {
    public:
      P(Worker& worker, bool third, bool together)
          : w_(worker), third_(third), together_(together),
            data_(w_.declare({"data", MemoryCategory::buffers, kMessage, 4})),
            pair_(w_.topology().group({0, 1})) {}
      // Rank 0: the message out. Rank 1: its receive.
      void run_compute() override {
        w_.run(message(w_.rank() == 0 ? CollectiveOp::send : CollectiveOp::recv, 1, "out"));
      }
      // Rank 1: after the fill, the message back (and the third). Rank 0: their receives.
      void run_comm() override {
        const bool sender = w_.rank() == 1;
        if (sender && !together_)
          w_.fill(Slice{data_, 0, kMessage / 5}, 0);
        const auto op = sender ? CollectiveOp::send : CollectiveOp::recv;
        w_.run(message(op, 2, "back"));
        if (third_)
          w_.run(message(op, 2, "third"));
      }

    private:
      CollectiveCall message(CollectiveOp op, int tag, const char* name) const {
        CollectiveCall c;
        c.op = op;
        c.group = &pair_;
        c.peer = 1 - w_.rank();
        c.tag = tag;
        c.data = Slice{data_, 0, kMessage};
        c.name = name;
        return c;
      }
      Worker& w_;
      bool third_, together_;
      BufferId data_;
      const Group& pair_;
    };
    return std::make_unique<P>(w, third_, together_);
  }

private:
  bool third_, together_;
};

std::string scenario_text(const std::string& link_extra, const std::string& cluster_extra = "") {
  return "name: crossing\ncluster: {nodes: 2, gpus_per_node: 1, gpu: {name: g, peak_tflops: 100, "
         "memory: 80GB, hbm_bandwidth: 1GB/s}, inter_node: {bandwidth: 1GB/s, latency: 0us" +
         link_extra + "}, collectives: fused" + cluster_extra +
         "}\nmodel: {preset: mlp, width: 64, depth: 2}\ntraining: {micro_batch: 1, seq_len: 1}\n"
         "algorithms: [ddp]\n";
}

// When each of rank 0's messages ended, by name.
std::map<std::string, double> message_ends(const std::string& link_extra, bool third,
                                           const std::string& cluster_extra = "",
                                           bool together = false) {
  const auto result = sim::simulate(scenario_from(scenario_text(link_extra, cluster_extra)),
                                    CrossingMessages(third, together));
  std::map<std::string, double> ends;
  for (const auto& e : result.trace.events)
    if (e.worker == 0 && e.category == OpCategory::comm)
      ends[result.trace.name_of(e.name)] = e.end;
  return ends;
}

// Without a delay: out 0-10 ms, back 2-12 ms (each direction its own 1 GB/s). With 5 ms: out
// starts on a quiet link (10 ms); back starts while out moves, so at 7 ms: 17 ms; the third
// starts at 17 ms with nothing coming the other way: 27 ms, not 32.
TEST(ReverseBusyDelay, AMessageStartingAgainstAMovingOneWaits) {
  const auto free = message_ends("", true);
  EXPECT_NEAR(free.at("out"), 0.010, 1e-6);
  EXPECT_NEAR(free.at("back"), 0.012, 1e-6);
  EXPECT_NEAR(free.at("third"), 0.022, 1e-6);
  const auto delayed = message_ends(", reverse_busy_delay: 5ms", true);
  EXPECT_NEAR(delayed.at("out"), 0.010, 1e-6);
  EXPECT_NEAR(delayed.at("back"), 0.017, 1e-6);
  EXPECT_NEAR(delayed.at("third"), 0.027, 1e-6);
}

// The full fat tree (sim/platform.cpp, build_fat_tree: NIC hosts on SimGrid's FatTreeZone) gives
// each direction of a cable its own 1 GB/s too, also to two messages that start at the same
// instant: out and back both end at 10 ms (back once moved in its latency alone, ending at 0.3 us:
// SimGrid's lazy update and a link both routes crossed, see build_fat_tree). Latency 0 and two
// 150 ns hops (the leaf switch's) leave 1e-6 s of slack.
TEST(ReverseBusyDelay, FatTreeCarriesOppositeMessagesAtLinkSpeed) {
  const std::string tree = ", fabric: fat_tree";
  const auto together = message_ends("", false, tree, true);
  EXPECT_NEAR(together.at("out"), 0.010, 1e-6);
  EXPECT_NEAR(together.at("back"), 0.010, 1e-6);
  const auto apart = message_ends("", true, tree);
  EXPECT_NEAR(apart.at("out"), 0.010, 1e-6);
  EXPECT_NEAR(apart.at("back"), 0.012, 1e-6);
  EXPECT_NEAR(apart.at("third"), 0.022, 1e-6);
}

TEST(ReverseBusyDelay, KeyAndProfileSetIt) {
  EXPECT_EQ(scenario_from(scenario_text("")).cluster.inter_node.reverse_busy_s, 0);
  EXPECT_EQ(
      scenario_from(scenario_text(", reverse_busy_delay: 30ms")).cluster.inter_node.reverse_busy_s,
      0.030);
  EXPECT_THROW(scenario_from(scenario_text(", reverse_busy_delay: 11s")), std::runtime_error);
  EXPECT_THROW(scenario_from(scenario_text(", reverse_busy_delay: fast")), std::runtime_error);
  // A profile's measured delay (on its send_recv fit) reaches the link that carries the job's
  // messages, and survives the file's round trip.
  const testing::ScratchDir dir;
  scenario::Calibration c;
  c.inter_node = scenario::LinkFit{.op = "all_reduce", .ranks = 2, .bandwidth_Bps = 1e9};
  c.inter_node_ops.push_back(scenario::LinkFit{
      .op = "send_recv", .ranks = 2, .bandwidth_Bps = 1e9, .reverse_busy_s = 0.02});
  const auto path = dir / "profile.json";
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_EQ(scenario::read_calibration(path.string()).inter_node_ops.at(0).reverse_busy_s, 0.02);
  EXPECT_EQ(scenario_from(scenario_text("", ", calibration: " + path.string()))
                .cluster.inter_node.reverse_busy_s,
            0.02);
  c.inter_node_ops.back().reverse_busy_s = 11;
  std::ofstream(path) << scenario::calibration_json(c);
  EXPECT_THROW(scenario::read_calibration(path.string()), std::runtime_error);
}

} // namespace
} // namespace overlapsim
