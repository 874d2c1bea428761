#include "cli/collective_command.h"

#include "hw/units.h"
#include "sim/collective_timing.h"
#include "spec/loader.h"

#include <algorithm>
#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace overlapsim::cli {

namespace {

CollectiveOp parse_op(std::string op) {
  // nccl-tests spells them all_reduce: both spellings name the same collective.
  std::replace(op.begin(), op.end(), '_', '-');
  for (auto candidate :
       {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
        CollectiveOp::broadcast, CollectiveOp::reduce, CollectiveOp::all_to_all})
    if (op == to_string(candidate))
      return candidate;
  throw std::invalid_argument(fmt::format(
      "--op '{}': expected all-reduce, reduce-scatter, all-gather, broadcast, reduce or all-to-all",
      op));
}

nlohmann::ordered_json to_json(const sim::CollectiveTiming& t) {
  return {{"op", to_string(t.op)},    {"size_bytes", t.size_bytes}, {"workers", t.workers},
          {"algorithm", t.algorithm}, {"time_s", t.time_s},         {"algbw_Bps", t.algbw_Bps},
          {"busbw_Bps", t.busbw_Bps}};
}

} // namespace

std::vector<double> parse_size_range(const std::string& text) {
  const auto colon = text.find(':');
  try {
    // Sizes from 1 B to 1 PB: a range doubles at most 50 times.
    const auto in_range = [&](double size) {
      if (!(size >= 1 && size <= 1e15))
        throw std::invalid_argument(
            fmt::format("--size '{}': expected sizes from 1B to 1PB, got {}", text, size));
      return size;
    };
    if (colon == std::string::npos)
      return {in_range(hw::parse_size_bytes(text))};
    const double lo = in_range(hw::parse_size_bytes(text.substr(0, colon)));
    const double hi = in_range(hw::parse_size_bytes(text.substr(colon + 1)));
    if (hi < lo)
      throw std::invalid_argument(
          fmt::format("--size '{}': expected LOW:HIGH with 0 < LOW <= HIGH", text));
    std::vector<double> sizes;
    for (double s = lo; s <= hi * (1 + 1e-12); s *= 2)
      sizes.push_back(s);
    return sizes;
  } catch (const hw::UnitError& e) {
    throw std::invalid_argument(fmt::format("--size '{}': {}", text, e.what()));
  }
}

int collective_command(const CollectiveOptions& o) {
  try {
    auto overrides = o.overrides;
    if (!o.algorithm.empty())
      overrides.push_back("cluster.collective_algorithm=" + o.algorithm);
    const auto scenario = spec::load_scenario(o.scenario, overrides);
    const CollectiveOp op = parse_op(o.op);
    const auto sizes = parse_size_range(o.size);
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    if (!o.json)
      std::printf("# %s on %d GPUs (%s, %s)\n#%15s %12s %10s %10s  %s\n#%15s %12s %10s %10s\n",
                  to_string(op), scenario.cluster.world_size(),
                  spec::to_string(scenario.cluster.collectives).c_str(),
                  spec::to_string(scenario.cluster.network_model).c_str(), "size", "time", "algbw",
                  "busbw", "algorithm", "(B)", "(us)", "(GB/s)", "(GB/s)");
    for (double size : sizes) {
      const auto t = sim::time_collective(scenario, op, size);
      if (o.json)
        rows.push_back(to_json(t));
      else
        std::printf(" %15.0f %12.2f %10.3f %10.3f  %s\n", size, t.time_s * 1e6, t.algbw_Bps / 1e9,
                    t.busbw_Bps / 1e9, t.algorithm.c_str());
    }
    if (o.json)
      std::printf("%s\n", (sizes.size() == 1 ? rows[0] : rows).dump(2).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlapsim collective: %s\n", e.what());
    return 1;
  }
}

} // namespace overlapsim::cli
