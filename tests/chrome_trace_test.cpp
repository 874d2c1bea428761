// The Chrome trace's tracks: the ops of one stream that overlap go to tracks of their own, so that
// the events of every thread nest as Perfetto and chrome://tracing need; receives carry bytes.
#include "test_util.h"
#include "trace/chrome_trace.h"

#include <algorithm>
#include <cmath>
#include <gtest/gtest.h>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace overlapsim {
namespace {

struct Op {
  const char* name;
  std::int32_t worker;
  StreamKind stream;
  double start, end; // seconds
};

Trace hand_built(const std::vector<Op>& ops) {
  Trace t;
  t.workers = 2;
  const auto p2p = t.intern("p2p");
  for (const auto& op : ops) {
    TraceEvent e;
    e.start = op.start;
    e.end = op.end;
    e.worker = op.worker;
    e.stream = op.stream;
    e.category = op.stream == StreamKind::comm ? OpCategory::comm : OpCategory::forward;
    e.name = t.intern(op.name);
    e.detail = op.stream == StreamKind::comm ? p2p : -1;
    e.step = 0;
    const bool recv = std::string(op.name).starts_with("recv");
    e.bytes = op.stream == StreamKind::comm && !recv ? 1000 : 0;
    e.received = recv ? 4096 : 0;
    t.events.push_back(e);
  }
  return t;
}

// Per pid: event name -> tid, and tid -> (thread name, sort index).
struct Layout {
  std::map<int, std::map<std::string, int>> tid;
  std::map<int, std::map<int, std::pair<std::string, int>>> threads;
  std::map<std::string, double> bytes;
};

Layout layout(const std::string& json) {
  Layout l;
  const auto doc = nlohmann::json::parse(json); // named: a temporary would die before the loop
  for (const auto& e : doc["traceEvents"]) {
    const int pid = e["pid"].get<int>();
    if (e["ph"] == "X") {
      l.tid[pid][e["name"].get<std::string>()] = e["tid"].get<int>();
      if (e["cat"] == "comm")
        l.bytes[e["name"].get<std::string>()] = e["args"]["bytes"].get<double>();
    } else if (e["ph"] == "M" && e["name"] == "thread_name") {
      l.threads[pid][e["tid"].get<int>()].first = e["args"]["name"].get<std::string>();
    } else if (e["ph"] == "M" && e["name"] == "thread_sort_index") {
      l.threads[pid][e["tid"].get<int>()].second = e["args"]["sort_index"].get<int>();
    }
  }
  return l;
}

TEST(ChromeTrace, OverlappingOpsGetTracksOfTheirOwn) {
  constexpr auto comm = StreamKind::comm, compute = StreamKind::compute;
  // Worker 0's comm stream, sorted by start (longer first) and each on the lowest track free at
  // its start: A track 0 [0, 10]; B track 1 [2, 4]; C track 2 [3, 6] (tracks 0 and 1 busy); D
  // reuses track 1 [4, 8] (B ended at 4); E track 0 again. G and F start together: the longer G
  // first. I ends at 0.1 + 0.2 s, a hair after J's 0.3 s start in doubles but not in the trace's
  // nanoseconds: J follows on track 0.
  const std::vector<Op> ops{{"fwd", 0, compute, 0, 20e-3},
                            {"recv A", 0, comm, 0, 10e-3},
                            {"send B", 0, comm, 2e-3, 4e-3},
                            {"send C", 0, comm, 3e-3, 6e-3},
                            {"send D", 0, comm, 4e-3, 8e-3},
                            {"send E", 0, comm, 10e-3, 12e-3},
                            {"send F", 0, comm, 12e-3, 13e-3},
                            {"send G", 0, comm, 12e-3, 15e-3},
                            {"send I", 0, comm, 0.1, 0.1 + 0.2},
                            {"send J", 0, comm, 0.3, 0.4},
                            // Worker 1: overlapping compute ops too (a comm stream's own compute
                            // would be on the comm stream; any stream gets tracks), and a comm op
                            // inside another, which goes to a track of its own as well.
                            {"fwd P", 1, compute, 0, 5e-3},
                            {"fwd Q", 1, compute, 4e-3, 6e-3},
                            {"send R", 1, comm, 0, 3e-3},
                            {"send S", 1, comm, 1e-3, 2e-3}};
  const auto t = hand_built(ops);
  const auto l = layout(chrome_trace_json(t, "t"));
  EXPECT_EQ(l.tid.at(0), (std::map<std::string, int>{{"fwd", 0},
                                                     {"recv A", 1},
                                                     {"send B", 2},
                                                     {"send C", 3},
                                                     {"send D", 2},
                                                     {"send E", 1},
                                                     {"send F", 2},
                                                     {"send G", 1},
                                                     {"send I", 1},
                                                     {"send J", 1}}));
  using Thread = std::pair<std::string, int>;
  EXPECT_EQ(l.threads.at(0),
            (std::map<int, Thread>{
                {0, {"compute", 0}}, {1, {"comm", 1}}, {2, {"comm 2", 2}}, {3, {"comm 3", 3}}}));
  // Worker 1: compute's second track takes tid 2, so comm's second takes 3; sorted by stream.
  EXPECT_EQ(l.tid.at(1),
            (std::map<std::string, int>{{"fwd P", 0}, {"fwd Q", 2}, {"send R", 1}, {"send S", 3}}));
  EXPECT_EQ(l.threads.at(1),
            (std::map<int, Thread>{
                {0, {"compute", 0}}, {2, {"compute 2", 1}}, {1, {"comm", 2}}, {3, {"comm 2", 3}}}));
  // A receive carries its message's bytes; a send what it sent.
  EXPECT_EQ(l.bytes.at("recv A"), 4096);
  EXPECT_EQ(l.bytes.at("send B"), 1000);

  // The tracks do not depend on the order events were recorded in, nor on the GPUs written.
  auto reversed = t;
  std::reverse(reversed.events.begin(), reversed.events.end());
  EXPECT_EQ(layout(chrome_trace_json(reversed, "t")).tid, l.tid);
  const auto only_1 = layout(chrome_trace_json(t, "t", {1}));
  EXPECT_EQ(only_1.tid, (std::map<int, std::map<std::string, int>>{{1, l.tid.at(1)}}));
  EXPECT_EQ(only_1.threads.at(1), l.threads.at(1));
}

TEST(ChromeTrace, TracksOfEveryThreadNestOnCdpV2) {
  // CDP-v2 on 8 GPUs keeps a receive open for a stage's gradients while it sends others: before
  // tracks, 207 pairs of events on the comm threads overlapped partially.
  const auto s =
      scenario::load_scenario(std::string(OVERLAPSIM_SOURCE_DIR) + "/scenarios/cdp-1x8-a100.yaml");
  const auto r = testing::simulate(s, "cdp-v2");
  const auto doc = nlohmann::json::parse(chrome_trace_json(r.trace, "cdp-v2"));
  struct Span {
    std::int64_t start, end; // ns
    std::string name;
  };
  std::map<std::pair<int, int>, std::vector<Span>> threads;
  std::map<std::pair<int, int>, std::string> thread_names;
  std::map<std::string, double> sent; // exchange -> bytes its sends sent
  std::vector<std::pair<std::string, double>> received;
  const auto ns = [](const nlohmann::json& us) { return std::llround(us.get<double>() * 1000); };
  for (const auto& e : doc["traceEvents"]) {
    const std::pair key{e["pid"].get<int>(), e.value("tid", 0)};
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread_names[key] = e["args"]["name"].get<std::string>();
    if (e["ph"] != "X")
      continue;
    const auto name = e["name"].get<std::string>();
    threads[key].push_back({ns(e["ts"]), ns(e["ts"]) + ns(e["dur"]), name});
    if (name.starts_with("send "))
      sent[name.substr(5)] = e["args"]["bytes"].get<double>();
    if (name.starts_with("recv "))
      received.emplace_back(name.substr(5), e["args"]["bytes"].get<double>());
  }
  int partial = 0, extra_tracks = 0;
  for (auto& [key, spans] : threads) {
    ASSERT_TRUE(thread_names.contains(key)) << key.first << "/" << key.second;
    extra_tracks += key.second > 1;
    if (key.second > 1) {
      EXPECT_TRUE(thread_names[key].starts_with("comm ")) << thread_names[key];
    }
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    // Sorted by start, longer first: an event partially overlaps an earlier one if it starts
    // before that one ends and ends after it.
    for (std::size_t i = 0; i < spans.size(); ++i)
      for (std::size_t j = i + 1; j < spans.size() && spans[j].start < spans[i].end; ++j)
        if (spans[j].end > spans[i].end && ++partial <= 3) {
          ADD_FAILURE() << "pid " << key.first << " tid " << key.second << ": '" << spans[i].name
                        << "' and '" << spans[j].name << "' overlap partially";
        }
  }
  EXPECT_EQ(partial, 0);
  EXPECT_GT(extra_tracks, 8); // the scenario does overlap its comm ops: at least one per GPU
  ASSERT_FALSE(received.empty());
  for (const auto& [exchange, bytes] : received) {
    EXPECT_GT(bytes, 0) << exchange;
    EXPECT_EQ(bytes, sent.at(exchange)) << exchange;
  }
}

} // namespace
} // namespace overlapsim
