#include "trace/chrome_trace.h"

#include "trace/analysis.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace overlapsim {

std::string chrome_trace_json(const Trace& trace, const std::string& title,
                              const std::vector<int>& workers) {
  std::vector<bool> shown(static_cast<std::size_t>(std::max(trace.workers, 0)), workers.empty());
  for (const int w : workers)
    if (w >= 0 && w < trace.workers)
      shown[static_cast<std::size_t>(w)] = true;
  const auto is_shown = [&](std::int32_t w) {
    return w >= 0 && w < trace.workers && shown[static_cast<std::size_t>(w)];
  };
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
  for (int w = 0; w < trace.workers; ++w) {
    if (!is_shown(w))
      continue;
    sep();
    fmt::format_to(
        it,
        "{{\"ph\":\"M\",\"pid\":{0},\"name\":\"process_name\",\"args\":{{\"name\":\"node {1} "
        "gpu {2}\"}}}},\n{{\"ph\":\"M\",\"pid\":{0},\"name\":\"process_sort_index\",\"args\":"
        "{{\"sort_index\":{0}}}}},\n{{\"ph\":\"M\",\"pid\":{0},\"tid\":0,\"name\":\"thread_name\","
        "\"args\":{{\"name\":\"compute\"}}}},\n{{\"ph\":\"M\",\"pid\":{0},\"tid\":1,\"name\":"
        "\"thread_name\",\"args\":{{\"name\":\"comm\"}}}}",
        w, w / trace.gpus_per_node, w % trace.gpus_per_node);
  }
  // End points are rounded to the nanosecond and the duration taken between them: rounding `ts`
  // and `dur` separately made back-to-back ops overlap by 0.001 us, which Perfetto moves to
  // overflow tracks.
  const auto micros = [](std::int64_t ns) {
    return fmt::format("{}{}.{:03d}", ns < 0 ? "-" : "", std::abs(ns) / 1000, std::abs(ns) % 1000);
  };
  // From every GPU, shown or not: a shown GPU may wait for one left out.
  const auto arrival = peer_arrivals(trace);
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    if (!is_shown(e.worker))
      continue;
    sep();
    const auto start_ns = std::llround(e.start * 1e9), end_ns = std::llround(e.end * 1e9);
    fmt::format_to(it,
                   "{{\"ph\":\"X\",\"pid\":{},\"tid\":{},\"ts\":{},\"dur\":{},\"name\":{},"
                   "\"cat\":\"{}\",\"args\":{{",
                   e.worker, static_cast<int>(e.stream), micros(start_ns),
                   micros(end_ns - start_ns), quoted[static_cast<std::size_t>(e.name)],
                   to_string(e.category));
    fmt::format_to(it, "\"step\":{}", e.step);
    if (e.micro_batch >= 0)
      fmt::format_to(it, ",\"micro_batch\":{}", e.micro_batch);
    if (e.category == OpCategory::comm)
      fmt::format_to(it, ",\"bytes\":{:.0f}", e.bytes);
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
    if (const auto arrived_ns = std::min(std::llround(arrival[i] * 1e9), end_ns);
        arrival[i] >= 0 && arrived_ns > start_ns)
      fmt::format_to(it, ",\"waiting_us\":{}", micros(arrived_ns - start_ns));
    fmt::format_to(it, "}}}}");
  }
  for (const auto& m : trace.memory) {
    if (!is_shown(m.worker))
      continue;
    sep();
    fmt::format_to(it,
                   "{{\"ph\":\"C\",\"pid\":{},\"ts\":{},\"name\":\"memory\",\"args\":{{"
                   "\"bytes\":{:.0f}}}}}",
                   m.worker, micros(std::llround(m.time * 1e9)), m.bytes);
  }
  for (const auto& s : trace.steps) {
    if (!is_shown(s.worker))
      continue;
    sep();
    fmt::format_to(
        it,
        "{{\"ph\":\"i\",\"s\":\"p\",\"pid\":{},\"tid\":0,\"ts\":{},\"name\":\"step_end\","
        "\"args\":{{\"step\":{},\"samples\":{}}}}}",
        s.worker, micros(std::llround(s.time * 1e9)), s.step, s.samples);
  }
  fmt::format_to(it, "\n]}}\n");
  return fmt::to_string(out);
}

} // namespace overlapsim
