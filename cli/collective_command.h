// `overlapsim collective`: one collective on the scenario's cluster, reported like nccl-tests.
#pragma once

#include <string>
#include <vector>

namespace overlapsim::cli {

struct CollectiveOptions {
  std::string scenario;
  std::string op = "all-reduce";
  // One size, or a range "1KB:1GB" (doubling, as nccl-tests -f 2). K, M, G, T, P are powers of
  // 1024 here, as in nccl-tests' -b/-e (scenario files read KB as 1000 B, KiB as 1024 B).
  std::string size = "1GB";
  std::string algorithm; // ring | tree | hierarchical | auto; default: the scenario's
  bool json = false;
  std::vector<std::string> overrides;
  std::string max_time;   // --max-time (default: 10 min, cli/work_budget.h)
  std::string max_memory; // --max-memory (default: the memory available now)
};

int collective_command(const CollectiveOptions& options);

// The sizes of "1K:1G" (doubling from the low end while not past the high end: 1024 B to
// 1073741824 B, 21 sizes, as nccl-tests -b 1K -e 1G -f 2) or of one size, in bytes. Sizes follow
// hw/units.h's one rule: 1KB is 1000 B, 1K and 1KiB 1024 B.
std::vector<double> parse_size_range(const std::string& text);

} // namespace overlapsim::cli
