#include "trace/analysis.h"

#include "runtime/op_label.h"
#include "trace/events_by_worker.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <cmath>
#include <cstddef>
#include <map>
#include <tuple>
#include <unordered_map>

namespace overlapsim {

namespace {

constexpr double kEps = 1e-9;

bool is_p2p(const Trace& t, const TraceEvent& e) {
  return e.detail >= 0 && t.name_of(e.detail) == "p2p";
}

// A collective instance: the k-th op with this name and step on each participating GPU of its group
// (an algorithm may run the same-named collective twice in a step, like ZeRO's all-gathers before
// the forward and the backward; under 3D parallelism each stage's data-parallel group runs its own
// "all-reduce bucket 3").
struct InstanceKey {
  std::int32_t name;
  std::int32_t step;
  std::int32_t group;
  std::int32_t occurrence;
  auto operator<=>(const InstanceKey&) const = default;
};

std::vector<InstanceKey> instance_keys(const Trace& t) {
  // Each GPU's collectives numbered per (name, step, group) in the order they started, ties in
  // trace order. Worker by worker: the numbers one pass over the whole trace in start order gives,
  // with a count per collective of one worker at a time instead of the whole trace's (issue 64.1:
  // 2.6 million map entries, ~170 MB, at 1,024 GPUs).
  std::vector<InstanceKey> keys(t.events.size(), InstanceKey{-1, -1, -1, -1});
  std::int32_t workers = 0;
  for (const auto& e : t.events)
    workers = std::max(workers, e.worker + 1);
  auto grouped = events_by_worker(t, static_cast<std::size_t>(workers), [&t](const auto& e) {
    return e.category == OpCategory::comm && !is_p2p(t, e);
  });
  auto& order = grouped.index; // each worker's part sorted by start in place
  std::map<std::tuple<std::int32_t, std::int32_t, std::int32_t>, std::int32_t> seen;
  for (std::size_t w = 0; w < static_cast<std::size_t>(workers); ++w) {
    const auto begin = order.begin() + static_cast<std::ptrdiff_t>(grouped.first[w]);
    const auto end = order.begin() + static_cast<std::ptrdiff_t>(grouped.first[w + 1]);
    std::stable_sort(begin, end,
                     [&](auto a, auto b) { return t.events[a].start < t.events[b].start; });
    seen.clear();
    for (auto it = begin; it != end; ++it) {
      const auto& e = t.events[*it];
      keys[*it] = {e.name, e.step, e.group, seen[{e.name, e.step, e.group}]++};
    }
  }
  return keys;
}

constexpr std::ptrdiff_t kNoSend = -1;

// Per event, the send a point-to-point receive completes with (same exchange name, step and end):
// the receive waited for it. kNoSend for any other event and for a receive without one.
std::vector<std::ptrdiff_t> matched_sends(const Trace& t) {
  std::map<std::tuple<std::string, int, double>, std::size_t> sends;
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (is_p2p(t, e) && t.name_of(e.name).starts_with("send "))
      sends[{t.name_of(e.name).substr(5), e.step, e.end}] = i;
  }
  std::vector<std::ptrdiff_t> out(t.events.size(), kNoSend);
  for (std::size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (!is_p2p(t, e) || !t.name_of(e.name).starts_with("recv "))
      continue;
    const std::string exchange = t.name_of(e.name).substr(5);
    auto it = sends.lower_bound({exchange, e.step, e.end - kEps});
    if (it != sends.end() && std::get<0>(it->first) == exchange &&
        std::get<1>(it->first) == e.step && std::get<2>(it->first) <= e.end + kEps)
      out[i] = static_cast<std::ptrdiff_t>(it->second);
  }
  return out;
}

// peer_arrivals() from the collective instances and the matched sends, which the critical path
// needs too.
std::vector<double> arrivals(const Trace& t, const std::vector<InstanceKey>& keys,
                             const std::vector<std::ptrdiff_t>& sends) {
  std::map<InstanceKey, double> latest;
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (keys[i].name >= 0) {
      auto [it, fresh] = latest.try_emplace(keys[i], t.events[i].start);
      if (!fresh)
        it->second = std::max(it->second, t.events[i].start);
    }
  std::vector<double> out(t.events.size(), -1);
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (keys[i].name >= 0)
      out[i] = latest.at(keys[i]);
    else if (sends[i] != kNoSend) {
      // A message moves once both ends are posted: the receive waits for its send, and the send
      // for its receive (a rendezvous, as NCCL's send/recv and SimGrid's mailboxes).
      const auto send = static_cast<std::size_t>(sends[i]);
      out[i] = t.events[send].start;
      out[send] = t.events[i].start;
    }
  return out;
}

enum class EdgeKind : std::uint8_t { stream, cross_stream, collective };
struct EdgeProps {
  EdgeKind kind;
};
using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                    boost::no_property, EdgeProps>;

CriticalPath critical_path(const Trace& t, const Metrics& m, const std::vector<InstanceKey>& keys,
                           const std::vector<std::ptrdiff_t>& sends) {
  CriticalPath cp;
  // The last steady-state step: enough to show what paces a step, and bounded in size.
  const double hi = m.window_end_s, lo = hi - m.iteration_time_s;
  std::vector<std::size_t> ops; // trace indices of the vertices
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.events[i].end > lo - kEps && t.events[i].start < hi + kEps)
      ops.push_back(i);
  if (ops.empty())
    return cp;
  Graph g(ops.size());
  const auto ev = [&](std::size_t v) -> const TraceEvent& { return t.events[ops[v]]; };

  // Stream order, and the cross-stream dependency that released an op: the other stream's op of
  // the same GPU that ended when this one started.
  std::map<std::pair<int, int>, std::vector<std::size_t>> by_stream;
  std::map<int, std::vector<std::size_t>> by_worker_end;
  for (std::size_t v = 0; v < ops.size(); ++v) {
    by_stream[{ev(v).worker, static_cast<int>(ev(v).stream)}].push_back(v);
    by_worker_end[ev(v).worker].push_back(v);
  }
  // Stream order: each op follows the op of its stream that ended last before it started (a stream
  // may hold concurrent ops, like CDP's send and receive of one exchange).
  for (auto& [key, list] : by_stream) {
    std::sort(list.begin(), list.end(), [&](auto a, auto b) { return ev(a).end < ev(b).end; });
    for (const std::size_t v : list) {
      auto it = std::upper_bound(list.begin(), list.end(), ev(v).start + kEps,
                                 [&](double x, std::size_t a) { return x < ev(a).end; });
      while (it != list.begin()) {
        --it;
        if (*it == v || ev(*it).start > ev(v).start || (ev(*it).start == ev(v).start && *it > v))
          continue; // not before v: ties between instantaneous ops are broken by trace order
        boost::add_edge(*it, v, EdgeProps{EdgeKind::stream}, g);
        break;
      }
    }
  }
  for (auto& [worker, list] : by_worker_end) {
    const std::vector<std::size_t> own = list; // this GPU's ops, in trace order
    std::sort(list.begin(), list.end(), [&](auto a, auto b) { return ev(a).end < ev(b).end; });
    for (const std::size_t v : own) {
      auto it = std::lower_bound(list.begin(), list.end(), ev(v).start - kEps,
                                 [&](std::size_t a, double x) { return ev(a).end < x; });
      for (; it != list.end() && ev(*it).end <= ev(v).start + kEps; ++it) {
        // Ties between instantaneous ops are broken by trace order, so no edge pair makes a cycle.
        const bool before =
            ev(*it).start < ev(v).start || (ev(*it).start == ev(v).start && *it < v);
        if (ev(*it).stream != ev(v).stream && before)
          boost::add_edge(*it, v, EdgeProps{EdgeKind::cross_stream}, g);
      }
    }
  }
  // Collective participation: every rank's op completes after the last rank arrived.
  std::map<InstanceKey, std::size_t> last_in;
  for (std::size_t v = 0; v < ops.size(); ++v)
    if (keys[ops[v]].name >= 0) {
      auto [it, fresh] = last_in.try_emplace(keys[ops[v]], v);
      if (!fresh && ev(v).start > ev(it->second).start)
        it->second = v;
    }
  for (std::size_t v = 0; v < ops.size(); ++v)
    if (keys[ops[v]].name >= 0) {
      const std::size_t last = last_in.at(keys[ops[v]]);
      if (last != v && ev(last).start > ev(v).start)
        boost::add_edge(last, v, EdgeProps{EdgeKind::collective}, g);
    }
  // Point-to-point: a receive completes with its matched send, which it waited for; like a
  // collective, the data moved from when the send started.
  std::unordered_map<std::size_t, std::size_t> vertex_of; // trace index -> vertex
  for (std::size_t v = 0; v < ops.size(); ++v)
    vertex_of.emplace(ops[v], v);
  for (std::size_t v = 0; v < ops.size(); ++v) {
    if (sends[ops[v]] == kNoSend)
      continue;
    const auto send = vertex_of.find(static_cast<std::size_t>(sends[ops[v]]));
    if (send != vertex_of.end() && ev(send->second).start > ev(v).start)
      boost::add_edge(send->second, v, EdgeProps{EdgeKind::collective}, g);
  }
  try {
    std::vector<std::size_t> order;
    boost::topological_sort(g, std::back_inserter(order));
  } catch (const boost::not_a_dag&) {
    return cp; // dependencies inferred from an unusual trace loop: report no path rather than fail
  }

  // Walk back from the op that ends last, each time to the dependency that released it.
  std::size_t v = 0;
  for (std::size_t u = 1; u < ops.size(); ++u)
    if (ev(u).end > ev(v).end)
      v = u;
  std::map<std::pair<std::string, int>, CriticalOp> contributions;
  bool joined_collective = false; // reached through a collective edge: the same collective
  double first_start = std::max(ev(v).start, lo); // an op may begin before the step
  for (;;) {
    const auto& e = ev(v);
    double gate = -1;
    std::size_t next = v;
    EdgeKind next_kind = EdgeKind::stream;
    for (auto [it, end] = boost::in_edges(v, g); it != end; ++it) {
      const std::size_t u = boost::source(*it, g);
      const EdgeKind kind = g[*it].kind;
      const double when = kind == EdgeKind::collective ? ev(u).start : ev(u).end;
      if (when > gate)
        gate = when, next = u, next_kind = kind;
    }
    if (!joined_collective) {
      const double from = std::max({e.start, gate, lo});
      const double share = std::max(0.0, std::min(e.end, hi) - from);
      // "all-reduce bucket 17" and its siblings add up under "all-reduce bucket *".
      std::string name = t.name_of(e.name);
      const auto digits = name.find_last_not_of("0123456789");
      if (digits != std::string::npos && digits + 1 < name.size() && name[digits] == ' ')
        name = name.substr(0, digits + 1) + "*";
      auto& c = contributions[{name, e.worker}];
      c.name = name;
      c.worker = t.gpu_of(e.worker); // the GPU (a class's representative under rank classes)
      c.category = e.category;
      c.seconds += share;
      c.op_seconds = std::max(c.op_seconds, e.end - e.start);
      cp.by_category[static_cast<std::size_t>(e.category)] += share;
      cp.busy_s += share;
    }
    first_start = std::min(first_start, std::max(e.start, lo));
    if (next == v || gate < lo)
      break;
    joined_collective = next_kind == EdgeKind::collective;
    v = next;
  }
  cp.length_s = hi - first_start;
  for (auto& [key, c] : contributions)
    cp.top.push_back(c);
  std::sort(cp.top.begin(), cp.top.end(),
            [](const CriticalOp& a, const CriticalOp& b) { return a.seconds > b.seconds; });
  if (cp.top.size() > 10)
    cp.top.resize(10);
  return cp;
}

} // namespace

Analysis analyze(const Trace& t, const Metrics& m) {
  Analysis a;
  std::vector<double> arrival;
  {
    const auto keys = instance_keys(t);
    const auto sends = matched_sends(t);
    arrival = arrivals(t, keys, sends);
    a.critical_path = critical_path(t, m, keys, sends);
  } // freed before the per-GPU pass: the keys are 16 bytes an event (issue 64.1)

  // One GPU's events at a time (trace/events_by_worker.h).
  const auto workers = static_cast<std::size_t>(t.workers);
  const auto grouped = events_by_worker(t, workers, [](const TraceEvent&) { return true; });
  a.idle.resize(workers);
  const std::vector<double> size = t.class_sizes();
  std::vector<Interval> busy, comm;
  std::vector<CommSpan> spans;
  for (std::size_t w = 0; w < workers; ++w) {
    busy.clear(), comm.clear(), spans.clear();
    for (const std::size_t i : grouped.of(w)) {
      const auto& e = t.events[i];
      if (e.category == OpCategory::comm) {
        comm.push_back({e.start, e.end});
        // A receive waits for its peer's send to its end.
        const double arrived = is_p2p(t, e) && e.bytes == 0 ? e.end
                               : arrival[i] < 0             ? e.start
                                                            : arrival[i];
        spans.push_back({e.start, std::clamp(arrived, e.start, e.end), e.end,
                         is_pipeline_receive(t.name_of(e.name))});
      } else if (e.stream == StreamKind::compute && e.category != OpCategory::idle) {
        busy.push_back({e.start, e.end});
      }
    }
    // Metrics' per-GPU windows: worker w is GPU gpu_of(w) (rank classes) or GPU w.
    const auto gpu = static_cast<std::size_t>(t.gpu_of(static_cast<int>(w)));
    const Interval window = gpu < m.worker_window.size()
                                ? m.worker_window[gpu]
                                : Interval{m.window_start_s, m.window_end_s};
    const double length = window.end - window.start;
    if (length <= 0)
      continue;
    std::vector<Interval> b;
    for (const auto& i : busy)
      b.push_back({std::clamp(i.start, window.start, window.end),
                   std::clamp(i.end, window.start, window.end)});
    const double computing = union_length(b);
    // Idle time a faster network would remove, then waits for peers, then the rest (split_idle).
    const auto split =
        split_idle(b, spans, window, length - m.steps * m.slowest_compute_s_per_step);
    IdleBreakdown& d = a.idle[w];
    d.compute = computing / length;
    d.exposed_comm = split.exposed / length;
    d.waiting = split.waiting / length;
    d.pipeline_bubble = split.bubble / length;
    d.idle_other = std::max(0.0, 1 - d.compute - d.exposed_comm - d.waiting - d.pipeline_bubble);
    // Weighed by the GPUs the worker stands for (rank classes; 1 each otherwise).
    const double weight = size[w] / static_cast<double>(t.gpus());
    a.idle_mean.compute += d.compute * weight;
    a.idle_mean.exposed_comm += d.exposed_comm * weight;
    a.idle_mean.waiting += d.waiting * weight;
    a.idle_mean.pipeline_bubble += d.pipeline_bubble * weight;
    a.idle_mean.idle_other += d.idle_other * weight;
    // The bound uses the window of the iteration time, so it never exceeds it: a GPU's own window
    // of staggered steps (CDP) can be longer than the cluster's.
    const auto in_cluster_window = [&](const std::vector<Interval>& v) {
      std::vector<Interval> out;
      for (const auto& i : v)
        out.push_back({std::clamp(i.start, m.window_start_s, m.window_end_s),
                       std::clamp(i.end, m.window_start_s, m.window_end_s)});
      return union_length(std::move(out));
    };
    a.lower_bound_s =
        std::max(a.lower_bound_s,
                 std::max(in_cluster_window(busy), in_cluster_window(comm)) / std::max(1, m.steps));
  }
  return a;
}

std::vector<double> peer_arrivals(const Trace& t) {
  return arrivals(t, instance_keys(t), matched_sends(t));
}

} // namespace overlapsim
