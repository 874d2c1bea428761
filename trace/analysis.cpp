#include "trace/analysis.h"

#include "runtime/op_label.h"
#include "trace/dependency_graph.h"
#include "trace/events_by_worker.h"
#include "trace/peer_arrivals.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>

namespace overlapsim {

namespace {

constexpr double kEps = 1e-9;

bool is_p2p(const Trace& t, const TraceEvent& e) {
  return e.detail >= 0 && t.name_of(e.detail) == "p2p";
}

enum class EdgeKind : std::uint8_t { stream, cross_stream, collective };
void add_edge(DependencyGraph& g, std::size_t from, std::size_t to, EdgeKind kind) {
  g.add_edge(from, to, static_cast<std::uint8_t>(kind));
}

CriticalPath critical_path(const Trace& t, const Metrics& m, const PeerArrivals& arrival) {
  CriticalPath cp;
  // The last steady-state step: enough to show what paces a step, and bounded in size.
  const double hi = m.window_end_s, lo = hi - m.iteration_time_s;
  std::vector<std::size_t> ops; // trace indices of the vertices
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (t.events[i].end > lo - kEps && t.events[i].start < hi + kEps)
      ops.push_back(i);
  if (ops.empty())
    return cp;
  DependencyGraph g(ops.size());
  const auto ev = [&](std::size_t v) -> const TraceEvent& { return t.events[ops[v]]; };

  // Stream order, and the cross-stream dependency that released an op: the other stream's op of
  // the same GPU that ended when this one started.
  // Vertices as 4-byte numbers (DependencyGraph's limit): a step's ops, 521,000 at 1,024 GPUs.
  std::map<std::pair<int, int>, std::vector<std::uint32_t>> by_stream;
  std::map<int, std::vector<std::uint32_t>> by_worker_end;
  for (std::size_t v = 0; v < ops.size(); ++v) {
    by_stream[{ev(v).worker, static_cast<int>(ev(v).stream)}].push_back(
        static_cast<std::uint32_t>(v));
    by_worker_end[ev(v).worker].push_back(static_cast<std::uint32_t>(v));
  }
  // Stream order: each op follows the op of its stream that ended last before it started (a stream
  // may hold concurrent ops, like CDP's send and receive of one exchange).
  for (auto& [key, list] : by_stream) {
    std::sort(list.begin(), list.end(), [&](auto a, auto b) { return ev(a).end < ev(b).end; });
    for (const std::size_t v : list) {
      auto it = std::upper_bound(list.begin(), list.end(), ev(v).start + kEps,
                                 [&](double x, std::uint32_t a) { return x < ev(a).end; });
      while (it != list.begin()) {
        --it;
        if (*it == v || ev(*it).start > ev(v).start || (ev(*it).start == ev(v).start && *it > v))
          continue; // not before v: ties between instantaneous ops are broken by trace order
        add_edge(g, *it, v, EdgeKind::stream);
        break;
      }
    }
  }
  for (auto& [worker, list] : by_worker_end) {
    const std::vector<std::uint32_t> own = list; // this GPU's ops, in trace order
    std::sort(list.begin(), list.end(), [&](auto a, auto b) { return ev(a).end < ev(b).end; });
    for (const std::size_t v : own) {
      auto it = std::lower_bound(list.begin(), list.end(), ev(v).start - kEps,
                                 [&](std::uint32_t a, double x) { return ev(a).end < x; });
      for (; it != list.end() && ev(*it).end <= ev(v).start + kEps; ++it) {
        // Ties between instantaneous ops are broken by trace order, so no edge pair makes a cycle.
        const bool before =
            ev(*it).start < ev(v).start || (ev(*it).start == ev(v).start && *it < v);
        if (ev(*it).stream != ev(v).stream && before)
          add_edge(g, *it, v, EdgeKind::cross_stream);
      }
    }
  }
  // Collective participation: every rank's op completes after the last rank arrived (the first
  // vertex of an instance with its latest start).
  constexpr auto kNone = std::numeric_limits<std::size_t>::max();
  std::vector<std::size_t> last_in(arrival.instances(), kNone);
  for (std::size_t v = 0; v < ops.size(); ++v)
    if (const auto k = arrival.instance(ops[v]); k >= 0) {
      auto& last = last_in[static_cast<std::size_t>(k)];
      if (last == kNone || ev(v).start > ev(last).start)
        last = v;
    }
  for (std::size_t v = 0; v < ops.size(); ++v)
    if (const auto k = arrival.instance(ops[v]); k >= 0) {
      const std::size_t last = last_in[static_cast<std::size_t>(k)];
      if (last != v && ev(last).start > ev(v).start)
        add_edge(g, last, v, EdgeKind::collective);
    }
  std::vector<std::size_t>{}.swap(last_in);
  // Point-to-point: a receive completes with its matched send, which it waited for; like a
  // collective, the data moved from when the send started. `ops` is in trace order: the send's
  // vertex is found by bisection.
  for (std::size_t v = 0; v < ops.size(); ++v) {
    const auto send_index = arrival.matched_send(ops[v]);
    if (send_index < 0)
      continue;
    const auto send =
        std::lower_bound(ops.begin(), ops.end(), static_cast<std::size_t>(send_index));
    if (send == ops.end() || *send != static_cast<std::size_t>(send_index))
      continue;
    const auto u = static_cast<std::size_t>(send - ops.begin());
    if (ev(u).start > ev(v).start)
      add_edge(g, u, v, EdgeKind::collective);
  }
  by_stream.clear();
  by_worker_end.clear();
  g.finish();
  if (g.has_cycle())
    return cp; // dependencies inferred from an unusual trace loop: report no path rather than fail

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
    for (const auto& edge : g.in_edges(v)) {
      const std::size_t u = edge.from;
      const auto kind = static_cast<EdgeKind>(edge.kind);
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
  const PeerArrivals arrival(t);
  a.critical_path = critical_path(t, m, arrival);

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
  return PeerArrivals(t).per_event();
}

} // namespace overlapsim
