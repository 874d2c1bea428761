#include "cli/trace_file.h"

#include "files/atomic_file.h"
#include "files/gzip.h"
#include "trace/chrome_trace.h"

#include <fmt/format.h>

namespace overlapsim::cli {

std::string write_trace_file(const std::string& dir, const std::string& label, const Trace& trace,
                             const std::string& title, const scenario::OutputSpec& output) {
  const std::string json = chrome_trace_json(trace, title, output.trace_gpus);
  const std::string path =
      fmt::format("{}/trace-{}.json{}", dir, label, output.trace_gzip ? ".gz" : "");
  write_file_atomically(path, output.trace_gzip ? gzip_compress(json) : json);
  return path;
}

} // namespace overlapsim::cli
