// A trace's event indices grouped by worker, each group in trace order (a counting sort), so that
// per-GPU passes take one GPU's events at a time: the metrics and the analysis then hold one GPU's
// intervals instead of every GPU's (issue 64.1: ~50 bytes an event, 5.7 million events at 1,024
// GPUs), and sum them in the same order as a pass over the whole trace.
#pragma once

#include "trace/trace.h"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <vector>

namespace overlapsim {

struct EventsByWorker {
  std::vector<std::size_t> first; // worker w's indices are index[first[w]] .. index[first[w + 1]]
  std::vector<std::uint32_t>
      index; // 4 bytes an event: a trace holds far fewer than 2^32 (96 B each)

  std::span<const std::uint32_t> of(std::size_t worker) const {
    return {index.data() + first[worker], first[worker + 1] - first[worker]};
  }
};

// The events `keep` accepts, of workers 0 .. workers - 1 (others are left out).
template <class Keep>
EventsByWorker events_by_worker(const Trace& t, std::size_t workers, const Keep& keep) {
  if (t.events.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("events_by_worker: more than 2^32 trace events");
  EventsByWorker out;
  out.first.assign(workers + 1, 0);
  const auto in_range = [workers](const TraceEvent& e) {
    return e.worker >= 0 && static_cast<std::size_t>(e.worker) < workers;
  };
  for (const auto& e : t.events)
    if (in_range(e) && keep(e))
      ++out.first[static_cast<std::size_t>(e.worker) + 1];
  for (std::size_t w = 1; w < out.first.size(); ++w)
    out.first[w] += out.first[w - 1];
  out.index.resize(out.first.back());
  std::vector<std::size_t> next(out.first.begin(), out.first.end() - 1);
  for (std::size_t i = 0; i < t.events.size(); ++i)
    if (const auto& e = t.events[i]; in_range(e) && keep(e))
      out.index[next[static_cast<std::size_t>(e.worker)]++] = static_cast<std::uint32_t>(i);
  return out;
}

} // namespace overlapsim
