// The trace streamed from a simulation's child process in blocks (issue 64.1): the same events, in
// the same order, as the trace the simulation keeps whole; and ChildProcess's parts.
#include "algorithms/algorithm.h"
#include "scenario/loader.h"
#include "sim/child_process.h"
#include "sim/sim_runtime.h"
#include "sim/sim_worker.h"
#include "trace/trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace {

using namespace overlapsim;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(ChildProcess, PartsArriveInOrderBeforeTheReply) {
  sim::ChildProcess child([](const sim::ChildProcess::SendPart& send) {
    send("first");
    send("");
    send(std::string(100000, 'x')); // past one read of the pipe
    return std::string("reply");
  });
  std::vector<std::string> parts;
  const std::string reply = child.collect([&](std::string_view p) { parts.emplace_back(p); });
  EXPECT_EQ(reply, "reply");
  EXPECT_THAT(parts, ElementsAre("first", "", std::string(100000, 'x')));
}

TEST(ChildProcess, AnErrorAfterPartsIsTheBodysError) {
  sim::ChildProcess child([](const sim::ChildProcess::SendPart& send) -> std::string {
    send("part");
    throw std::runtime_error("bad collective");
  });
  int parts = 0;
  try {
    child.collect([&](std::string_view) { ++parts; });
    ADD_FAILURE() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "bad collective");
  }
  EXPECT_EQ(parts, 1);
}

TEST(ChildProcess, APartNobodyCollectsIsAnError) {
  sim::ChildProcess child([](const sim::ChildProcess::SendPart& send) {
    send("part");
    return std::string("reply");
  });
  EXPECT_THROW(child.collect(), std::logic_error);
}

TEST(TraceStream, TheStreamedTraceIsTheTraceKeptWhole) {
  // 4 x 8 GPUs simulated in full, GPT-Neo 125M: per GPU and step a forward, 7 backward ops, the
  // optimizer step, 10 bucket all-reduces and 11 bucket copies (30 events), so 32 x 30 x 81 steps
  // (one of warm-up) = 77,760 events, past one block of 65,536.
  const auto s = scenario::load_scenario_text(R"(name: stream
cluster: {nodes: 4, gpus_per_node: 8, gpu: a100-80gb, intra_node: nvlink3,
          inter_node: omnipath-100, rank_classes: off}
model: {preset: gpt-neo-125m, dtype: bf16}
training: {micro_batch: 8, seq_len: 2048, steps: 80}
algorithms: [ddp]
)",
                                              "stream.yaml");
  const Trace streamed = sim::simulate(s, s.algorithms[0]).trace;
  ASSERT_EQ(streamed.events.size(), 77760u);
  ASSERT_GT(streamed.events.size(), sim::kEventBlock);
  sim::ChildProcess child([&s] {
    return sim::simulate_in_process(s, *make_algorithm(s.algorithms[0])).trace.serialize();
  });
  const Trace kept = Trace::deserialize(child.collect());
  ASSERT_EQ(streamed.events.size(), kept.events.size());
  EXPECT_EQ(streamed.names, kept.names);
  EXPECT_EQ(streamed.end_time, kept.end_time);
  for (std::size_t i = 0; i < kept.events.size(); ++i) {
    const auto &a = streamed.events[i], &b = kept.events[i];
    ASSERT_TRUE(a.start == b.start && a.end == b.end && a.worker == b.worker &&
                a.stream == b.stream && a.category == b.category && a.name == b.name &&
                a.detail == b.detail && a.step == b.step && a.bytes == b.bytes &&
                a.flops == b.flops && a.group == b.group)
        << "event " << i;
  }
}

} // namespace
