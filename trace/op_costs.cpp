#include "trace/op_costs.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <string_view>
#include <tuple>

namespace overlapsim {

std::string op_kind(OpCategory category, const std::string& name) {
  if (category == OpCategory::forward || category == OpCategory::backward)
    return to_string(category);
  auto kind = name;
  if (const auto open = kind.rfind(" ("); open != std::string::npos && kind.back() == ')')
    kind.erase(open);
  // "all-reduce bucket 3": every bucket is one kind.
  if (const auto space = kind.rfind(' ');
      space != std::string::npos && space + 1 < kind.size() &&
      kind.find_first_not_of("0123456789", space + 1) == std::string::npos)
    kind.erase(space);
  return kind;
}

namespace {

bool is_collective(const TraceEvent& e) {
  // Point-to-point messages run on pair groups with a peer; a rooted collective names its root.
  return e.category == OpCategory::comm && e.group >= 0 && e.group_size > 1 &&
         (e.peer < 0 || e.group_size > 2);
}

// A message's half: "send X" on its sender, "recv X" on its receiver, each naming the other as
// peer on a pair group.
bool is_message(const Trace& trace, const TraceEvent& e, std::string_view half) {
  return e.category == OpCategory::comm && e.peer >= 0 && e.group_size == 2 &&
         trace.name_of(e.name).starts_with(half);
}

// When each event's data moved: from (the last member's start of a collective instance, the later
// post of a message's two halves, else its own start) to (a message's receive's end, else its
// own end).
struct Moving {
  std::vector<double> from, to;
};

// Messages pair in order per (X, step, sender, receiver), as they match on one connection. Both
// halves count from the later post to the receive's end: Gloo's send has no completion time of
// its own, so a measured send ends when the program waited for it (CDP's sends of summed
// gradients: +1900% per op with that end), and a receive posted early waits for its send.
void match_messages(const Trace& trace, Moving& m) {
  const auto& events = trace.events;
  using Key = std::tuple<std::string, int, int, int>; // X, step, sender, receiver
  std::map<Key, std::pair<std::vector<std::size_t>, std::vector<std::size_t>>> halves;
  for (std::size_t i = 0; i < events.size(); ++i) {
    const auto& e = events[i];
    if (is_message(trace, e, "send "))
      halves[{trace.name_of(e.name).substr(5), e.step, e.worker, e.peer}].first.push_back(i);
    else if (is_message(trace, e, "recv "))
      halves[{trace.name_of(e.name).substr(5), e.step, e.peer, e.worker}].second.push_back(i);
  }
  const auto by_start = [&](std::size_t a, std::size_t b) {
    return events[a].start < events[b].start;
  };
  for (auto& [key, pair] : halves) {
    auto& [sends, recvs] = pair;
    std::stable_sort(sends.begin(), sends.end(), by_start);
    std::stable_sort(recvs.begin(), recvs.end(), by_start);
    for (std::size_t k = 0; k < std::min(sends.size(), recvs.size()); ++k) {
      const auto& send = events[sends[k]];
      const auto& recv = events[recvs[k]];
      const double posted = std::max(send.start, recv.start);
      for (const std::size_t i : {sends[k], recvs[k]}) {
        m.from[i] = posted;
        m.to[i] = std::max(recv.end, events[i].start);
      }
    }
  }
}

Moving moving_spans(const Trace& trace) {
  const auto& events = trace.events;
  Moving m;
  m.to.resize(events.size());
  for (std::size_t i = 0; i < events.size(); ++i)
    m.to[i] = events[i].end;
  std::vector<double>& last = m.from;
  last.resize(events.size());
  std::map<std::pair<int, int>, std::vector<std::size_t>> sequence; // (group, worker) -> events
  for (std::size_t i = 0; i < events.size(); ++i) {
    last[i] = events[i].start;
    if (is_collective(events[i]))
      sequence[{events[i].group, events[i].worker}].push_back(i);
  }
  std::map<int, std::vector<std::vector<std::size_t>*>> members;
  for (auto& [key, indexes] : sequence) {
    std::stable_sort(indexes.begin(), indexes.end(), [&](std::size_t a, std::size_t b) {
      return events[a].start < events[b].start;
    });
    members[key.first].push_back(&indexes);
  }
  for (const auto& [group, lists] : members) {
    std::size_t longest = 0;
    for (const auto* l : lists)
      longest = std::max(longest, l->size());
    for (std::size_t k = 0; k < longest; ++k) {
      double latest = -std::numeric_limits<double>::infinity();
      for (const auto* l : lists)
        if (k < l->size())
          latest = std::max(latest, events[(*l)[k]].start);
      for (const auto* l : lists)
        if (k < l->size())
          last[(*l)[k]] = latest;
    }
  }
  match_messages(trace, m);
  return m;
}

// The typical op over the durations whose step `take`s: each instance's median over the steps (the
// j-th of the kind in a step on a worker: one bucket, unit or stage), averaged over the instances
// by their counts. A plain median of a kind whose instances differ in size lands on one size or
// another as noise moves a few ops across it (CDP-v2's optimizer steps on the comm stream, a
// stage's and a layer norm's: -97.7% in one bench run, +1.6% per step). NaN when none is taken.
template <typename Take>
double typical_op(const std::map<std::tuple<int, int, int>, double>& durations, Take take) {
  const auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  };
  std::map<std::pair<int, int>, std::vector<double>> instances; // (worker, position) or none
  std::size_t n = 0;
  for (const auto& [key, d] : durations) {
    const auto& [worker, step, position] = key;
    if (!take(step)) // -1: an op outside any step
      continue;
    instances[step < 0 ? std::pair{-1, -1} : std::pair{worker, position}].push_back(d);
    ++n;
  }
  double typical = 0;
  for (const auto& [instance, ds] : instances)
    typical += median(ds) * static_cast<double>(ds.size());
  return n > 0 ? typical / static_cast<double>(n) : std::nan("");
}

// The step an op without one ran in: the first its worker marked done at or after the op's start;
// -1 after the worker's last mark. Copies, accumulates and fills carry no step, and pooled as one
// instance their median was a plain one over sizes that differ (CDP-v2's copies of a stage of
// 0.05 ms and one of 1.5 ms: -72.5% per op in one bench run as a few ops crossed the middle).
std::vector<int> steps_of(const Trace& trace) {
  std::map<int, std::vector<std::pair<double, int>>> marks; // worker -> (time, step), by time
  for (const auto& s : trace.steps)
    marks[s.worker].emplace_back(s.time, s.step);
  for (auto& [worker, m] : marks)
    std::sort(m.begin(), m.end());
  std::vector<int> steps(trace.events.size());
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    steps[i] = e.step;
    if (e.step >= 0)
      continue;
    const auto it = marks.find(e.worker);
    if (it == marks.end())
      continue;
    const auto next = std::lower_bound(it->second.begin(), it->second.end(),
                                       std::pair{e.start, std::numeric_limits<int>::min()});
    if (next != it->second.end())
      steps[i] = next->second;
  }
  return steps;
}

} // namespace

std::vector<OpCost> op_costs(const Trace& trace, double window_start_s, double window_end_s,
                             int steps) {
  struct Kind {
    OpCost cost;
    // By instance: (worker, step, position among the kind's ops of that step on the worker's
    // stream) -> duration; ops outside any step share one instance.
    std::map<std::tuple<int, int, int>, double> durations;
    std::map<std::pair<int, int>, int> begun; // (worker, step) -> ops of the kind so far
    double waiting = 0;
  };
  const auto moving = moving_spans(trace);
  const auto steps_of_events = steps_of(trace);
  std::vector<Kind> kinds;
  std::map<std::pair<StreamKind, std::string>, std::size_t> index;
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    if (e.start < window_start_s || e.start >= window_end_s || e.category == OpCategory::idle)
      continue;
    const auto kind = op_kind(e.category, trace.name_of(e.name));
    const auto [it, fresh] = index.try_emplace({e.stream, kind}, kinds.size());
    if (fresh)
      kinds.push_back({OpCost{kind, e.category, e.stream}, {}});
    const double end = moving.to[i];
    const double moving_from = std::clamp(moving.from[i], e.start, end);
    auto& kind_of = kinds[it->second];
    kind_of.waiting += moving_from - e.start;
    const int step = steps_of_events[i];
    if (step < 0) {
      kind_of.durations.emplace(std::tuple{-1, -1, static_cast<int>(i)}, end - moving_from);
      continue;
    }
    // Its position: how many of the kind this worker's stream recorded before it in the step.
    const int position = kind_of.begun[{e.worker, step}]++;
    kind_of.durations.emplace(std::tuple{e.worker, step, position}, end - moving_from);
  }
  const double per = steps > 0 && trace.workers > 0 ? 1.0 / (steps * trace.workers) : 0.0;
  // The window's steps, split in two halves for each kind's halves_spread.
  int first_step = std::numeric_limits<int>::max(), last_step = -1;
  for (const auto& k : kinds)
    for (const auto& [key, d] : k.durations)
      if (const int step = std::get<1>(key); step >= 0)
        first_step = std::min(first_step, step), last_step = std::max(last_step, step);
  const int second_half = first_step + (last_step - first_step + 1) / 2;
  std::vector<OpCost> out;
  for (auto& [cost, durations, begun, waiting] : kinds) {
    double total = 0;
    for (const auto& [key, d] : durations)
      total += d;
    const auto n = static_cast<double>(durations.size());
    cost.median_s = typical_op(durations, [](int) { return true; });
    const double first =
        typical_op(durations, [&](int step) { return step >= 0 && step < second_half; });
    const double second = typical_op(durations, [&](int step) { return step >= second_half; });
    cost.halves_spread = last_step > first_step && cost.median_s > 0
                             ? std::abs(second - first) / cost.median_s
                             : std::nan("");
    cost.count_per_step = n * per;
    cost.per_step_s = total * per;
    cost.waiting_per_step_s = waiting * per;
    out.push_back(cost);
  }
  return out;
}

std::vector<OpComparison> compare_op_costs(const std::vector<OpCost>& predicted,
                                           const std::vector<OpCost>& measured) {
  std::vector<OpComparison> out;
  for (const auto& m : measured)
    out.push_back({m.op, m.stream, std::nullopt, m});
  for (const auto& p : predicted) {
    const auto it = std::find_if(out.begin(), out.end(), [&](const OpComparison& c) {
      return c.op == p.op && c.stream == p.stream;
    });
    if (it != out.end())
      it->predicted = p;
    else
      out.push_back({p.op, p.stream, p, std::nullopt});
  }
  return out;
}

} // namespace overlapsim
