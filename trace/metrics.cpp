#include "trace/metrics.h"

#include "trace/analysis.h"

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
  std::vector<std::vector<Interval>> compute(workers), comm(workers), moving(workers),
      waiting(workers);
  std::vector<double> bytes(workers, 0.0), inter_bytes(workers, 0.0), wan_bytes(workers, 0.0);
  auto own_open = [&](std::size_t w) { return warmup_steps == 0 ? 0.0 : open[w]; };
  const auto arrival = peer_arrivals(trace);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    const auto w = static_cast<std::size_t>(e.worker);
    const double lo = own_open(w), hi = close[w];
    if (e.end <= lo || e.start >= hi)
      continue;
    const Interval clipped{std::max(e.start, lo), std::min(e.end, hi)};
    if (e.category == OpCategory::comm) {
      comm[w].push_back(clipped);
      const double arrived = std::clamp(arrival[i], clipped.start, clipped.end);
      if (arrived > clipped.start)
        waiting[w].push_back({clipped.start, arrived});
      if (arrived < clipped.end)
        moving[w].push_back({arrived, clipped.end});
      if (e.start >= lo) {
        bytes[w] += e.bytes;
        inter_bytes[w] += e.inter_node_bytes;
        wan_bytes[w] += e.wan_bytes;
      }
    } else if (e.stream == StreamKind::compute && e.category != OpCategory::idle) {
      compute[w].push_back(clipped);
    }
  }
  m.idle_fraction.resize(workers);
  m.exposed_comm_per_worker_s.resize(workers);
  m.waiting_per_worker_s.resize(workers);
  double idle_sum = 0, exposed_sum = 0, waiting_sum = 0, bytes_sum = 0, compute_sum = 0,
         comm_sum = 0, inter_sum = 0, wan_sum = 0;
  for (std::size_t w = 0; w < workers; ++w) {
    const double busy = union_length(compute[w]);
    compute_sum += size[w] * busy / steps;
    comm_sum += size[w] * union_length(comm[w]) / steps;
    const double own_window = close[w] - own_open(w);
    m.worker_window.push_back({own_open(w), close[w]});
    m.idle_fraction[w] = own_window > 0 ? std::clamp(1.0 - busy / own_window, 0.0, 1.0) : 0.0;
    // Data moving counts before waiting: a GPU whose one op moves data while another waits is
    // communicating. The two add up to the comm time not covered by compute.
    m.exposed_comm_per_worker_s[w] = uncovered_length(moving[w], compute[w]) / steps;
    auto busy_or_moving = compute[w];
    busy_or_moving.insert(busy_or_moving.end(), moving[w].begin(), moving[w].end());
    m.waiting_per_worker_s[w] = uncovered_length(waiting[w], busy_or_moving) / steps;
    idle_sum += size[w] * m.idle_fraction[w];
    exposed_sum += size[w] * m.exposed_comm_per_worker_s[w];
    waiting_sum += size[w] * m.waiting_per_worker_s[w];
    bytes_sum += size[w] * bytes[w] / steps;
    inter_sum += size[w] * inter_bytes[w] / steps;
    wan_sum += size[w] * wan_bytes[w] / steps;
    m.idle_fraction_max = std::max(m.idle_fraction_max, m.idle_fraction[w]);
  }
  m.idle_fraction_mean = idle_sum / gpus;
  m.exposed_comm_s = exposed_sum / gpus;
  m.waiting_s = waiting_sum / gpus;
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
    per_gpu(m.worker_window);
  }
  return m;
}

} // namespace overlapsim
