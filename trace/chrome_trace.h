// Chrome trace event format (Perfetto, chrome://tracing): one process per worker ("node N gpu G"),
// one thread per stream ("compute", "comm"), complete events with ts/dur in microseconds, "memory"
// counter events and "step_end" instants.
#pragma once

#include "trace/trace.h"

#include <string>

namespace overlapsim {

std::string chrome_trace_json(const Trace& trace, const std::string& title);

} // namespace overlapsim
