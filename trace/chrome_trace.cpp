#include "trace/chrome_trace.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace overlapsim {

std::string chrome_trace_json(const Trace& trace, const std::string& title) {
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
  constexpr double us = 1e6;
  // End points are rounded to the nanosecond and the duration taken between them: rounding `ts`
  // and `dur` separately made back-to-back ops overlap by 0.001 us, which Perfetto moves to
  // overflow tracks.
  const auto micros = [](std::int64_t ns) {
    return fmt::format("{}{}.{:03d}", ns < 0 ? "-" : "", std::abs(ns) / 1000, std::abs(ns) % 1000);
  };
  for (const auto& e : trace.events) {
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
      fmt::format_to(it, ",\"algorithm\":{}", quoted[static_cast<std::size_t>(e.detail)]);
    fmt::format_to(it, "}}}}");
  }
  for (const auto& m : trace.memory) {
    sep();
    fmt::format_to(it,
                   "{{\"ph\":\"C\",\"pid\":{},\"ts\":{:.3f},\"name\":\"memory\",\"args\":{{"
                   "\"bytes\":{:.0f}}}}}",
                   m.worker, m.time * us, m.bytes);
  }
  for (const auto& s : trace.steps) {
    sep();
    fmt::format_to(
        it,
        "{{\"ph\":\"i\",\"s\":\"p\",\"pid\":{},\"tid\":0,\"ts\":{:.3f},\"name\":\"step_end\","
        "\"args\":{{\"step\":{},\"samples\":{}}}}}",
        s.worker, s.time * us, s.step, s.samples);
  }
  fmt::format_to(it, "\n]}}\n");
  return fmt::to_string(out);
}

} // namespace overlapsim
