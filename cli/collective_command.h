// `overlapsim collective`: one collective on the scenario's cluster, reported like nccl-tests.
#pragma once

#include <string>
#include <vector>

namespace overlapsim::cli {

struct CollectiveOptions {
  std::string scenario;
  std::string op = "all-reduce";
  std::string size = "1GB"; // one size, or a range "1KB:1GB" (doubling, as nccl-tests -f 2)
  std::string algorithm;    // ring | tree | hierarchical | auto; default: the scenario's
  bool json = false;
  std::vector<std::string> overrides;
};

int collective_command(const CollectiveOptions& options);

// The sizes of "1KB:1GB" (doubling from the low end up to the high end) or of one size.
std::vector<double> parse_size_range(const std::string& text);

} // namespace overlapsim::cli
