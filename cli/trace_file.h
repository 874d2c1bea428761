// A Chrome trace output file as the scenario's `output` asks for it: trace-<label>.json, or
// .json.gz with output.trace_gzip, showing the GPUs of output.trace_gpus.
#pragma once

#include "scenario/scenario.h"
#include "trace/trace.h"

#include <string>

namespace overlapsim::cli {

// Writes dir/trace-<label>.json[.gz] atomically; returns its path.
std::string write_trace_file(const std::string& dir, const std::string& label, const Trace& trace,
                             const std::string& title, const scenario::OutputSpec& output);

} // namespace overlapsim::cli
