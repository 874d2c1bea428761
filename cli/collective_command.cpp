#include "cli/collective_command.h"

#include "cli/run_command.h"
#include "cli/work_budget.h"
#include "hw/units.h"
#include "runtime/collective_size.h"
#include "scenario/loader.h"
#include "sim/collective_timing.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

namespace overlapsim::cli {

namespace {

CollectiveOp parse_op(std::string op) {
  // nccl-tests spells them all_reduce: both spellings name the same collective.
  std::replace(op.begin(), op.end(), '_', '-');
  // nccl-tests' sendrecv_perf: every rank sends to the next and receives from the previous one
  // (sim/collective_timing.h times it as CollectiveOp::send).
  if (op == "sendrecv" || op == "send-recv")
    return CollectiveOp::send;
  for (auto candidate :
       {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_gather,
        CollectiveOp::broadcast, CollectiveOp::reduce, CollectiveOp::all_to_all})
    if (op == to_string(candidate))
      return candidate;
  throw std::invalid_argument(fmt::format(
      "--op '{}': expected all-reduce, reduce-scatter, all-gather, broadcast, reduce, all-to-all "
      "or sendrecv",
      op));
}

// nccl-tests' redop and root columns: reductions (and sendrecv_perf, which prints its default
// op) print "sum", the others "none"; only broadcast and reduce have a root (rank 0 here), the
// others print -1.
const char* redop_of(CollectiveOp op) {
  return op == CollectiveOp::all_reduce || op == CollectiveOp::reduce_scatter ||
                 op == CollectiveOp::reduce || op == CollectiveOp::send
             ? "sum"
             : "none";
}
// The op as nccl-tests' binary names it (sendrecv_perf times a send and a receive per rank).
std::string op_name(CollectiveOp op) {
  return op == CollectiveOp::send ? "sendrecv" : to_string(op);
}
int root_of(CollectiveOp op) {
  return op == CollectiveOp::broadcast || op == CollectiveOp::reduce ? 0 : -1;
}

// Counts are of nccl-tests' default type (-d float, 4 bytes); the size simulated is the size given.
constexpr double kTypeBytes = 4;
constexpr const char* kType = "float";

nlohmann::ordered_json to_json(const sim::CollectiveTiming& t) {
  return {{"op", op_name(t.op)},
          {"size_bytes", t.size_bytes},
          {"count", static_cast<std::int64_t>(t.size_bytes / kTypeBytes)},
          {"type", kType},
          {"redop", redop_of(t.op)},
          {"root", root_of(t.op)},
          {"workers", t.workers},
          {"algorithm", t.algorithm},
          {"time_s", t.time_s},
          {"algbw_Bps", t.algbw_Bps},
          {"busbw_Bps", t.busbw_Bps}};
}

// One size, by the rule every size follows (hw/units.h): 1KB = 1000 B, 1KiB = 1K = 1024 B.
double parse_one_size(const std::string& part, const std::string& whole) {
  try {
    // A bare number is bytes (nccl-tests' -b 8), which a scenario's sizes may not be.
    const bool bare = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
    return hw::parse_size_bytes(bare ? part + "B" : part);
  } catch (const hw::UnitError& e) {
    throw std::invalid_argument(fmt::format(
        "--size '{}': {}; K, M, G (as nccl-tests' -b/-e) and KiB, MiB, GiB are powers of 1024, "
        "KB, MB, GB powers of 1000",
        whole, e.what()));
  }
}

} // namespace

std::vector<double> parse_size_range(const std::string& text) {
  const auto colon = text.find(':');
  // Sizes from 1 B to 1 PiB: a range doubles at most 50 times.
  const auto in_range = [&](double size) {
    if (!(size >= 1 && size <= std::pow(1024.0, 5)))
      throw std::invalid_argument(
          fmt::format("--size '{}': expected sizes from 1B to 1PiB, got {}", text, size));
    return size;
  };
  if (colon == std::string::npos)
    return {in_range(parse_one_size(text, text))};
  const double lo = in_range(parse_one_size(text.substr(0, colon), text));
  const double hi = in_range(parse_one_size(text.substr(colon + 1), text));
  if (hi < lo)
    throw std::invalid_argument(
        fmt::format("--size '{}': expected LOW:HIGH with 0 < LOW <= HIGH", text));
  // nccl-tests' loop (-f 2): double while the size does not pass the end.
  std::vector<double> sizes;
  for (double s = lo; s <= hi * (1 + 1e-12); s *= 2)
    sizes.push_back(s);
  return sizes;
}

int collective_command(const CollectiveOptions& o) {
  try {
    auto overrides = o.overrides;
    if (!o.algorithm.empty())
      overrides.push_back("cluster.collective_algorithm=" + o.algorithm);
    const auto scenario = scenario::load_scenario(o.scenario, overrides);
    print_scenario_warnings(scenario); // stderr: stdout stays nccl-tests' table
    const CollectiveOp op = parse_op(o.op);
    const auto sizes = parse_size_range(o.size);
    // Before the header: a simulation of every GPU can take hours (issue 63.5b).
    const auto work = estimate_collective_work(scenario, op, static_cast<int>(sizes.size()));
    check_time_budget(scenario.source, work.seconds, work.breakdown, parse_max_time(o.max_time));
    check_memory_budget(scenario.source, estimate_memory(work, 0),
                        o.max_memory.empty() ? 0 : parse_max_memory(o.max_memory));
    const auto& cluster = scenario.cluster;
    nlohmann::ordered_json rows = nlohmann::ordered_json::array();
    if (!o.json) {
      // nccl-tests' layout, so that its readers (profile --import-nccl-tests among them) read this
      // too: a header with one "#  Rank" line per GPU, then the out-of-place and in-place columns.
      // What picks each row's algorithm/protocol (its last column): the scenario's collective view,
      // algorithm and NCCL_PROTO (auto: NCCL's tuner, comm/nccl_model.h).
      std::printf("# overlapsim collective %s: nRanks %d minBytes %.0f maxBytes %.0f step: "
                  "2(factor) collectives: %s algorithm: %s protocol: %s network: %s\n#\n"
                  "# Using devices\n",
                  calibration_op_name(op).c_str(), cluster.world_size(), sizes.front(),
                  sizes.back(), scenario::to_string(cluster.collectives).c_str(),
                  scenario::to_string(cluster.collective_algorithm).c_str(),
                  scenario::to_string(cluster.nccl_protocol).c_str(),
                  scenario::to_string(cluster.network_model).c_str());
      for (int r = 0; r < cluster.world_size(); ++r)
        std::printf("#  Rank %2d Group  0 on node %d device %2d [simulated] %s\n", r,
                    r / cluster.gpus_per_node, r % cluster.gpus_per_node, cluster.gpu.name.c_str());
      std::printf("#\n#%59s%s%32s\n", "", "out-of-place", "in-place");
      std::printf("#%11s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s  %9s  %7s  %7s  %6s  %s\n",
                  "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong",
                  "time", "algbw", "busbw", "#wrong", "algorithm");
      std::printf("#%11s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s  %9s  %7s  %7s\n", "(B)",
                  "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)",
                  "(GB/s)");
    }
    double busbw_sum = 0;
    for (double size : sizes) {
      sim::CollectiveTiming t;
      try {
        t = sim::time_collective(scenario, op, size);
      } catch (const std::exception& e) {
        // Out of memory anyway: the estimate made before beside it (issue 63.6).
        const std::string what = e.what();
        if (what.find("out of memory") == std::string::npos)
          throw;
        throw std::runtime_error(with_memory_estimate(what, estimate_memory(work, 0)));
      }
      busbw_sum += t.busbw_Bps;
      if (o.json) {
        rows.push_back(to_json(t));
        continue;
      }
      // A simulation has no buffers to alias: the in-place columns repeat the out-of-place ones,
      // and nothing is checked (#wrong N/A, as nccl-tests -c 0).
      const auto place = fmt::format("  {:9.2f}  {:7.2f}  {:7.2f}  {:>6}", t.time_s * 1e6,
                                     t.algbw_Bps / 1e9, t.busbw_Bps / 1e9, "N/A");
      std::printf(" %11.0f  %12.0f  %8s  %6s  %6d%s%s  %s\n", size, std::floor(size / kTypeBytes),
                  kType, redop_of(op), root_of(op), place.c_str(), place.c_str(),
                  t.algorithm.c_str());
    }
    if (o.json)
      std::printf("%s\n", rows.dump(2).c_str()); // a list even for one size: one shape to read
    else
      std::printf("# Out of bounds values : 0 OK\n# Avg bus bandwidth    : %g \n#\n",
                  busbw_sum / static_cast<double>(sizes.size()) / 1e9);
    return 0;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "overlapsim collective: out of memory (std::bad_alloc); use fewer GPUs\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlapsim collective: %s\n", e.what());
    return 1;
  }
}

} // namespace overlapsim::cli
