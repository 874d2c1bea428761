#include "trace/metrics.h"
#include "trace/events_by_worker.h"

#include "runtime/op_label.h"
#include "trace/analysis.h"
#include "trace/peer_arrivals.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim {

namespace {

// Sorts and merges overlapping intervals in place.
void normalize(std::vector<Interval>& v) {
  std::sort(v.begin(), v.end(),
            [](const Interval& x, const Interval& y) { return x.start < y.start; });
  std::size_t out = 0;
  for (const auto& i : v) {
    if (i.end <= i.start)
      continue;
    if (out > 0 && i.start <= v[out - 1].end)
      v[out - 1].end = std::max(v[out - 1].end, i.end);
    else
      v[out++] = i;
  }
  v.resize(out);
}

} // namespace

std::vector<Interval> merged(std::vector<Interval> intervals) {
  normalize(intervals);
  return intervals;
}

double union_length(std::vector<Interval> intervals) {
  normalize(intervals);
  double total = 0;
  for (const auto& i : intervals)
    total += i.end - i.start;
  return total;
}

double uncovered_length(std::vector<Interval> a, std::vector<Interval> b) {
  normalize(a);
  normalize(b);
  double total = 0;
  std::size_t j = 0;
  for (const auto& i : a) {
    double cursor = i.start;
    while (j < b.size() && b[j].end <= cursor)
      ++j;
    for (std::size_t k = j; k < b.size() && b[k].start < i.end; ++k) {
      if (b[k].start > cursor)
        total += b[k].start - cursor;
      cursor = std::max(cursor, b[k].end);
      if (cursor >= i.end)
        break;
    }
    if (cursor < i.end)
      total += i.end - cursor;
  }
  return total;
}

namespace {
// The length of `v` (sorted, disjoint) inside [lo, hi).
double length_within(const std::vector<Interval>& v, double lo, double hi) {
  double total = 0;
  for (const auto& i : v)
    total += std::max(0.0, std::min(i.end, hi) - std::max(i.start, lo));
  return total;
}
} // namespace

IdleSplit split_idle(const std::vector<Interval>& busy, const std::vector<CommSpan>& comm,
                     Interval window, double removable) {
  std::vector<Interval> moving, in_flight, computing, receiving;
  for (const auto& c : comm) {
    const double start = std::clamp(c.start, window.start, window.end);
    const double end = std::clamp(c.end, window.start, window.end);
    if (c.pipeline) {
      receiving.push_back({start, end});
      continue;
    }
    const double arrived = std::clamp(c.arrived, start, end);
    in_flight.push_back({start, end});
    moving.push_back({arrived, end});
  }
  receiving = merged(std::move(receiving));
  for (const auto& b : busy)
    computing.push_back({std::clamp(b.start, window.start, window.end),
                         std::clamp(b.end, window.start, window.end)});
  moving = merged(std::move(moving));
  in_flight = merged(std::move(in_flight));
  computing = merged(std::move(computing));
  // The gaps between compute ops, each with the latest late arrival among the ops ending in it.
  std::vector<Interval> gaps;
  double cursor = window.start;
  for (const auto& b : computing) {
    if (b.start > cursor)
      gaps.push_back({cursor, b.start});
    cursor = std::max(cursor, b.end);
  }
  if (cursor < window.end)
    gaps.push_back({cursor, window.end});
  std::vector<double> late(gaps.size(), -1);
  for (const auto& c : comm) {
    if (c.pipeline || !(c.arrived > c.start)) // or every peer was there when it started
      continue;
    const auto g = std::lower_bound(gaps.begin(), gaps.end(), c.end,
                                    [](const Interval& gap, double t) { return gap.end < t; });
    if (g != gaps.end() && c.end > g->start && c.start < g->end) {
      auto& l = late[static_cast<std::size_t>(g - gaps.begin())];
      l = std::max(l, c.arrived);
    }
  }
  const auto within = [](const std::vector<Interval>& v, double lo, double hi) {
    std::vector<Interval> out;
    for (const auto& i : v)
      if (std::min(i.end, hi) > std::max(i.start, lo))
        out.push_back({std::max(i.start, lo), std::min(i.end, hi)});
    return out;
  };
  IdleSplit split;
  for (std::size_t k = 0; k < gaps.size(); ++k) {
    const auto& gap = gaps[k];
    const double ready = std::clamp(late[k], gap.start, gap.end);
    // The gap's parts with no pipeline receive in flight (the whole gap without pipelining).
    std::vector<Interval> parts;
    double from_here = gap.start;
    for (const auto& r : within(receiving, gap.start, gap.end)) {
      split.bubble += r.end - r.start;
      if (r.start > from_here)
        parts.push_back({from_here, r.start});
      from_here = std::max(from_here, r.end);
    }
    if (from_here < gap.end)
      parts.push_back({from_here, gap.end});
    for (const auto& part : parts) {
      const double from = std::clamp(ready, part.start, part.end);
      split.exposed += length_within(moving, from, part.end);
      split.waiting += length_within(in_flight, part.start, from) +
                       uncovered_length(within(in_flight, from, part.end), moving);
    }
  }
  // Beyond rounding: the slowest worker's own cap is its idle time, computed another way.
  if (const double cap = std::max(0.0, removable);
      split.exposed > cap + 1e-12 * (window.end - window.start)) {
    split.waiting += split.exposed - cap;
    split.exposed = cap;
  }
  return split;
}

Metrics compute_metrics(const Trace& trace, int warmup_steps, int steps) {
  Metrics m;
  const int last = warmup_steps + steps - 1;
  const auto workers = static_cast<std::size_t>(trace.workers);
  const std::vector<double> size = trace.class_sizes(); // GPUs per worker (rank classes)
  const double gpus = static_cast<double>(trace.gpus());
  std::vector<double> open(workers, -1), close(workers, -1);
  for (const auto& s : trace.steps) {
    const auto w = static_cast<std::size_t>(s.worker);
    if (s.step == warmup_steps - 1)
      open[w] = std::max(open[w], s.time);
    if (s.step == last)
      close[w] = std::max(close[w], s.time);
    if (s.step >= warmup_steps && s.step <= last)
      m.samples += s.samples * size[w]; // every GPU of a class consumed them
  }
  for (std::size_t w = 0; w < workers; ++w) {
    if (close[w] < 0)
      throw std::runtime_error(fmt::format("trace: worker {} never finished step {}", w, last));
    m.window_end_s = std::max(m.window_end_s, close[w]);
    m.window_start_s = warmup_steps == 0 ? 0.0 : std::max(m.window_start_s, open[w]);
  }
  m.steps = steps;
  {
    std::vector<double> done(static_cast<std::size_t>(steps), -1); // step s: every worker's max
    for (const auto& s : trace.steps)
      if (s.step >= warmup_steps && s.step <= last) {
        auto& d = done[static_cast<std::size_t>(s.step - warmup_steps)];
        d = std::max(d, s.time);
      }
    double previous = m.window_start_s;
    for (const double d : done) {
      if (d >= 0) { // every step is marked once the window closed; guard a skipped index anyway
        m.step_times_s.push_back(std::max(0.0, d - previous));
        previous = std::max(previous, d);
      }
    }
  }
  const double window = m.window_end_s - m.window_start_s;
  if (!(window > 0))
    throw std::runtime_error("trace: the steady-state window is empty");
  m.iteration_time_s = window / steps;
  m.throughput_samples_s = m.samples / window;

  // Per worker, over its own steady-state steps (staggered schedules like CDP's end their steps at
  // different times): compute-stream busy time and communication not hidden behind it.
  // A comm op waits for its peers until the last one arrived, then moves data.
  const PeerArrivals arrival(trace); // 4 bytes an event (trace/peer_arrivals.h)
  // One GPU's intervals at a time (trace/events_by_worker.h), gathered again by each pass.
  const auto grouped = events_by_worker(trace, workers, [](const TraceEvent&) { return true; });
  std::vector<Interval> compute, comm;
  std::vector<CommSpan> spans;
  double bytes = 0, inter_bytes = 0, wan_bytes = 0;
  auto own_open = [&](std::size_t w) { return warmup_steps == 0 ? 0.0 : open[w]; };
  const auto gather = [&](std::size_t w) {
    compute.clear(), comm.clear(), spans.clear();
    bytes = inter_bytes = wan_bytes = 0;
    const double lo = own_open(w), hi = close[w];
    for (const std::size_t i : grouped.of(w)) {
      const auto& e = trace.events[i];
      if (e.end <= lo || e.start >= hi)
        continue;
      const Interval clipped{std::max(e.start, lo), std::min(e.end, hi)};
      if (e.category == OpCategory::comm) {
        comm.push_back(clipped);
        spans.push_back({e.start, std::clamp(arrival[i], e.start, e.end), e.end,
                         is_pipeline_receive(trace.name_of(e.name))});
        if (e.start >= lo) {
          bytes += e.bytes;
          inter_bytes += e.inter_node_bytes;
          wan_bytes += e.wan_bytes;
        }
      } else if (e.stream == StreamKind::compute && e.category != OpCategory::idle) {
        compute.push_back(clipped);
      }
    }
  };
  m.idle_fraction.resize(workers);
  m.exposed_comm_per_worker_s.resize(workers);
  m.waiting_per_worker_s.resize(workers);
  m.pipeline_bubble_per_worker_s.resize(workers);
  double idle_sum = 0, exposed_sum = 0, waiting_sum = 0, bubble_sum = 0, bytes_sum = 0,
         compute_sum = 0, comm_sum = 0, inter_sum = 0, wan_sum = 0;
  // The slowest worker's compute per step: no network makes a step of synchronising workers
  // shorter (issue 62.4), so no worker's exposed communication exceeds its step beyond it.
  for (std::size_t w = 0; w < workers; ++w) {
    gather(w);
    m.slowest_compute_s_per_step =
        std::max(m.slowest_compute_s_per_step, union_length(compute) / steps);
  }
  for (std::size_t w = 0; w < workers; ++w) {
    gather(w);
    const double busy = union_length(compute);
    compute_sum += size[w] * busy / steps;
    comm_sum += size[w] * union_length(comm) / steps;
    const double own_window = close[w] - own_open(w);
    m.worker_window.push_back({own_open(w), close[w]});
    m.idle_fraction[w] = own_window > 0 ? std::clamp(1.0 - busy / own_window, 0.0, 1.0) : 0.0;
    // The three add up to the comm time not covered by compute (split_idle).
    const auto split = split_idle(compute, spans, {own_open(w), close[w]},
                                  own_window - steps * m.slowest_compute_s_per_step);
    m.exposed_comm_per_worker_s[w] = split.exposed / steps;
    m.waiting_per_worker_s[w] = split.waiting / steps;
    m.pipeline_bubble_per_worker_s[w] = split.bubble / steps;
    idle_sum += size[w] * m.idle_fraction[w];
    exposed_sum += size[w] * m.exposed_comm_per_worker_s[w];
    waiting_sum += size[w] * m.waiting_per_worker_s[w];
    bubble_sum += size[w] * m.pipeline_bubble_per_worker_s[w];
    bytes_sum += size[w] * bytes / steps;
    inter_sum += size[w] * inter_bytes / steps;
    wan_sum += size[w] * wan_bytes / steps;
    m.idle_fraction_max = std::max(m.idle_fraction_max, m.idle_fraction[w]);
  }
  m.idle_fraction_mean = idle_sum / gpus;
  m.exposed_comm_s = exposed_sum / gpus;
  m.waiting_s = waiting_sum / gpus;
  m.pipeline_bubble_s = bubble_sum / gpus;
  m.comm_bytes_per_step = bytes_sum / gpus;
  m.inter_node_bytes_per_step = inter_sum / gpus;
  m.wan_bytes_per_step = wan_sum / gpus;
  m.intra_node_bytes_per_step =
      std::max(0.0, m.comm_bytes_per_step - m.inter_node_bytes_per_step - m.wan_bytes_per_step);
  m.compute_s_per_step = compute_sum / gpus;
  m.comm_s_per_step = comm_sum / gpus;

  for (const auto& peak : trace.peak_memory) {
    double total = 0;
    for (double b : peak)
      total += b;
    if (total > m.peak_memory_bytes) {
      m.peak_memory_bytes = total;
      m.memory_breakdown = peak;
    }
  }
  m.simulated_time_s = trace.end_time;

  std::vector<double> acc;
  double count = 0, sum = 0, sq = 0; // each worker's marks weigh as many GPUs as it stands for
  for (const auto& a : trace.accumulations)
    if (a.step >= warmup_steps && a.step <= last) {
      const double n = size[static_cast<std::size_t>(a.worker)];
      acc.push_back(a.micro_batches);
      count += n;
      sum += n * a.micro_batches;
      sq += n * a.micro_batches * a.micro_batches;
    }
  if (!acc.empty()) {
    m.accumulation_mean = sum / count;
    m.accumulation_stddev =
        std::sqrt(std::max(0.0, sq / count - m.accumulation_mean * m.accumulation_mean));
    m.accumulation_min = *std::min_element(acc.begin(), acc.end());
    m.accumulation_max = *std::max_element(acc.begin(), acc.end());
  }
  // Rank classes: every GPU of the job takes its class's figures.
  if (!trace.class_of.empty()) {
    const auto per_gpu = [&](auto& per_worker) {
      auto values = std::move(per_worker);
      per_worker.clear();
      per_worker.reserve(trace.class_of.size());
      for (const auto w : trace.class_of)
        per_worker.push_back(values[static_cast<std::size_t>(w)]);
    };
    per_gpu(m.idle_fraction);
    per_gpu(m.exposed_comm_per_worker_s);
    per_gpu(m.waiting_per_worker_s);
    per_gpu(m.pipeline_bubble_per_worker_s);
    per_gpu(m.worker_window);
  }
  return m;
}

} // namespace overlapsim
