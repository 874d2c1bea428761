#include "trace/chrome_trace.h"

#include "trace/analysis.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace overlapsim {
namespace {

constexpr std::size_t kStreams = 2; // StreamKind::compute, StreamKind::comm
constexpr std::array<const char*, kStreams> kStreamNames{"compute", "comm"};

// Viewers need the events of one thread to nest, but a stream's ops overlap partially: a comm
// stream starts a send, then a receive, and either may end first. Each stream's events are spread
// over tracks (threads) so that the events of one track are disjoint: sorted by start (longer
// first, then trace order), each takes the lowest track whose last event ended at or before its
// start, which uses as few tracks as the most ops open at once.
struct Tracks {
  std::vector<std::int32_t> slot;                        // per event: its track within its stream
  std::vector<std::array<std::int32_t, kStreams>> count; // per worker and stream: tracks used
};

Tracks assign_tracks(const Trace& trace, const std::vector<std::int64_t>& start_ns,
                     const std::vector<std::int64_t>& end_ns) {
  const auto workers = static_cast<std::size_t>(std::max(trace.workers, 0));
  Tracks t{std::vector<std::int32_t>(trace.events.size(), 0),
           std::vector<std::array<std::int32_t, kStreams>>(workers, {1, 1})};
  std::vector<std::vector<std::size_t>> by_stream(workers * kStreams);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    if (e.worker >= 0 && static_cast<std::size_t>(e.worker) < workers)
      by_stream[static_cast<std::size_t>(e.worker) * kStreams + static_cast<std::size_t>(e.stream)]
          .push_back(i);
  }
  std::vector<std::int64_t> last_end; // per track of the stream at hand
  for (std::size_t k = 0; k < by_stream.size(); ++k) {
    auto& order = by_stream[k];
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      if (start_ns[a] != start_ns[b])
        return start_ns[a] < start_ns[b];
      if (end_ns[a] != end_ns[b])
        return end_ns[a] > end_ns[b];
      return a < b;
    });
    last_end.clear();
    for (const std::size_t i : order) {
      const auto free = std::find_if(last_end.begin(), last_end.end(),
                                     [&](std::int64_t end) { return end <= start_ns[i]; });
      const auto slot = free - last_end.begin();
      if (free == last_end.end())
        last_end.push_back(end_ns[i]);
      else
        *free = end_ns[i];
      t.slot[i] = static_cast<std::int32_t>(slot);
    }
    t.count[k / kStreams][k % kStreams] =
        std::max<std::int32_t>(1, static_cast<std::int32_t>(last_end.size()));
  }
  return t;
}

// Thread ids: each stream's first track keeps the stream's number (0 compute, 1 comm), so a trace
// without overlaps reads as before; further tracks take the next free ids, compute's first.
std::int32_t track_tid(const std::array<std::int32_t, kStreams>& count, std::size_t stream,
                       std::int32_t slot) {
  if (slot == 0)
    return static_cast<std::int32_t>(stream);
  return stream == 0 ? 1 + slot : count[0] + slot;
}

// The GPUs a sorted list holds, compactly: runs of three or more at one stride as "a-b" (stride
// 1) or "a-b every d", the rest one by one; past 160 characters, "and k more".
std::string gpu_list(const std::vector<int>& gpus) {
  std::string out;
  for (std::size_t i = 0; i < gpus.size();) {
    // The run starting at i: [i, end) at one stride.
    std::size_t end = i + 1;
    if (i + 1 < gpus.size()) {
      const int stride = gpus[i + 1] - gpus[i];
      end = i + 2;
      while (end < gpus.size() && gpus[end] - gpus[end - 1] == stride)
        ++end;
      if (end - i < 3)
        end = i + 1;
    }
    if (!out.empty())
      out += ", ";
    if (out.size() > 160) {
      out += fmt::format("and {} more", gpus.size() - i);
      break;
    }
    if (end - i >= 3) {
      const int stride = gpus[i + 1] - gpus[i];
      out += stride == 1 ? fmt::format("{}-{}", gpus[i], gpus[end - 1])
                         : fmt::format("{}-{} every {}", gpus[i], gpus[end - 1], stride);
    } else {
      out += std::to_string(gpus[i]);
    }
    i = end;
  }
  return out;
}

// A process's name: its GPU, and under rank classes the GPUs its worker stands for (issue 62.7).
std::string process_label(const Trace& trace, int pid, const std::vector<int>& members) {
  std::string label =
      fmt::format("node {} gpu {}", pid / trace.gpus_per_node, pid % trace.gpus_per_node);
  if (static_cast<std::size_t>(pid) < trace.gpu_roles.size())
    label += fmt::format(" ({})", trace.gpu_roles[static_cast<std::size_t>(pid)]);
  if (members.size() > 1)
    label += fmt::format(" (stands for {} GPUs: {})", members.size(), gpu_list(members));
  return label;
}

} // namespace

std::string chrome_trace_json(const Trace& trace, const std::string& title,
                              const std::vector<int>& workers) {
  // The GPUs (process ids) each worker's records are drawn as: the shown GPUs themselves, or under
  // rank classes every shown GPU of the worker's class (all: the representatives).
  std::vector<std::vector<int>> pids(static_cast<std::size_t>(std::max(trace.workers, 0)));
  const int gpus = trace.gpus();
  for (int w = 0; w < trace.workers && workers.empty(); ++w)
    pids[static_cast<std::size_t>(w)].push_back(trace.gpu_of(w));
  for (const int g : workers)
    if (g >= 0 && g < gpus)
      pids[static_cast<std::size_t>(
               trace.class_of.empty() ? g : trace.class_of[static_cast<std::size_t>(g)])]
          .push_back(g);
  for (auto& p : pids) {
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  const auto shown = [&](std::int32_t w) -> const std::vector<int>& {
    static const std::vector<int> none;
    return w >= 0 && w < trace.workers ? pids[static_cast<std::size_t>(w)] : none;
  };
  // Under rank classes, the GPUs each worker stands for (its class's members).
  std::vector<std::vector<int>> members(pids.size());
  for (int g = 0; g < gpus && !trace.class_of.empty(); ++g)
    if (const auto w = trace.class_of[static_cast<std::size_t>(g)]; w >= 0 && w < trace.workers)
      members[static_cast<std::size_t>(w)].push_back(g);
  std::vector<std::pair<int, int>> rows; // (pid, worker), by pid
  for (int w = 0; w < trace.workers; ++w)
    for (const int pid : shown(w))
      rows.emplace_back(pid, w);
  std::sort(rows.begin(), rows.end());
  fmt::memory_buffer out;
  auto it = std::back_inserter(out);
  // Names are escaped once; events refer to them by index.
  std::vector<std::string> quoted;
  quoted.reserve(trace.names.size());
  for (const auto& n : trace.names)
    quoted.push_back(nlohmann::json(n).dump());

  fmt::format_to(it,
                 "{{\"otherData\":{{\"title\":{},\"measured\":{}}},\n\"displayTimeUnit\":\"ms\",\n"
                 "\"traceEvents\":[\n",
                 nlohmann::json(title).dump(), trace.measured);
  bool first = true;
  auto sep = [&] {
    if (!first)
      fmt::format_to(it, ",\n");
    first = false;
  };
  // End points are rounded to the nanosecond and the duration taken between them: rounding `ts`
  // and `dur` separately made back-to-back ops overlap by 0.001 us, which Perfetto moves to
  // overflow tracks.
  std::vector<std::int64_t> start_ns(trace.events.size()), end_ns(trace.events.size());
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    start_ns[i] = std::llround(trace.events[i].start * 1e9);
    end_ns[i] = std::llround(trace.events[i].end * 1e9);
  }
  const auto tracks = assign_tracks(trace, start_ns, end_ns);
  for (const auto& [pid, w] : rows) {
    sep();
    fmt::format_to(
        it,
        "{{\"ph\":\"M\",\"pid\":{0},\"name\":\"process_name\",\"args\":{{\"name\":"
        "{1}}}}},\n{{\"ph\":\"M\",\"pid\":{0},\"name\":"
        "\"process_sort_index\",\"args\":{{\"sort_index\":{0}}}}}",
        pid,
        nlohmann::json(process_label(trace, pid,
                                     workers.empty() ? members[static_cast<std::size_t>(w)]
                                                     : std::vector<int>{}))
            .dump());
    // Tracks sort by stream, then number: "comm 2" right below "comm".
    const auto& count = tracks.count[static_cast<std::size_t>(w)];
    std::int32_t sort_index = 0;
    for (std::size_t stream = 0; stream < kStreams; ++stream)
      for (std::int32_t slot = 0; slot < count[stream]; ++slot, ++sort_index) {
        const auto tid = track_tid(count, stream, slot);
        const auto name = slot == 0 ? std::string(kStreamNames[stream])
                                    : fmt::format("{} {}", kStreamNames[stream], slot + 1);
        fmt::format_to(it,
                       ",\n{{\"ph\":\"M\",\"pid\":{0},\"tid\":{1},\"name\":\"thread_name\","
                       "\"args\":{{\"name\":\"{2}\"}}}},\n{{\"ph\":\"M\",\"pid\":{0},\"tid\":{1},"
                       "\"name\":\"thread_sort_index\",\"args\":{{\"sort_index\":{3}}}}}",
                       pid, tid, name, sort_index);
      }
  }
  const auto micros = [](std::int64_t ns) {
    return fmt::format("{}{}.{:03d}", ns < 0 ? "-" : "", std::abs(ns) / 1000, std::abs(ns) % 1000);
  };
  // From every GPU, shown or not: a shown GPU may wait for one left out.
  const auto arrival = peer_arrivals(trace);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    for (const int pid : shown(e.worker)) {
      sep();
      const auto e_start = start_ns[i], e_end = end_ns[i];
      const auto stream = static_cast<std::size_t>(e.stream);
      fmt::format_to(
          it,
          "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"name\":{},"
          "\"cat\":\"{}\",\"args\":{{",
          pid, track_tid(tracks.count[static_cast<std::size_t>(e.worker)], stream, tracks.slot[i]),
          micros(e_start), micros(e_end - e_start), quoted[static_cast<std::size_t>(e.name)],
          to_string(e.category));
      fmt::format_to(it, "\"step\":{}", e.step);
      if (e.micro_batch >= 0)
        fmt::format_to(it, ",\"micro_batch\":{}", e.micro_batch);
      // What the GPU sent; a point-to-point receive, which sends nothing, what it received.
      if (e.category == OpCategory::comm)
        fmt::format_to(it, ",\"bytes\":{:.0f}", e.bytes > 0 ? e.bytes : e.received);
      if (e.flops > 0)
        fmt::format_to(it, ",\"flops\":{:.6g}", e.flops);
      if (e.detail >= 0)
        fmt::format_to(it, ",\"{}\":{}", e.category == OpCategory::comm ? "algorithm" : "detail",
                       quoted[static_cast<std::size_t>(e.detail)]);
      if (e.group >= 0)
        fmt::format_to(it, ",\"group\":{},\"group_size\":{}", e.group, e.group_size);
      if (e.peer >= 0)
        fmt::format_to(it, ",\"peer\":{}", e.peer);
      // Waiting for a slower peer, so that a straggler does not read as a slow network.
      if (const auto arrived_ns = std::min<std::int64_t>(std::llround(arrival[i] * 1e9), e_end);
          arrival[i] >= 0 && arrived_ns > e_start)
        fmt::format_to(it, ",\"waiting_us\":{}", micros(arrived_ns - e_start));
      fmt::format_to(it, "}}}}");
    }
  }
  for (const auto& m : trace.memory)
    for (const int pid : shown(m.worker)) {
      sep();
      fmt::format_to(it,
                     "{{\"ph\":\"C\",\"pid\":{},\"ts\":{},\"name\":\"memory\",\"args\":{{"
                     "\"bytes\":{:.0f}}}}}",
                     pid, micros(std::llround(m.time * 1e9)), m.bytes);
    }
  for (const auto& s : trace.steps)
    for (const int pid : shown(s.worker)) {
      sep();
      fmt::format_to(
          it,
          "{{\"ph\":\"i\",\"s\":\"p\",\"pid\":{},\"tid\":0,\"ts\":{},\"name\":\"step_end\","
          "\"args\":{{\"step\":{},\"samples\":{}}}}}",
          pid, micros(std::llround(s.time * 1e9)), s.step, s.samples);
    }
  fmt::format_to(it, "\n]}}\n");
  return fmt::to_string(out);
}

} // namespace overlapsim
