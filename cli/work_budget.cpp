#include "cli/work_budget.h"

#include "hw/units.h"
#include "scenario/loader.h"
#include "sim/rank_classes.h"

#include <algorithm>
#include <fmt/format.h>
#include <fstream>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace overlapsim::cli {

namespace {
// The GPUs a run simulates, at most over its algorithms: fewer where rank classes fold it.
double simulated_gpus(const scenario::Scenario& s) {
  int most = 0;
  for (const auto& spec : s.algorithms) {
    try {
      most = std::max(most, sim::choose_rank_classes(s, *make_algorithm(spec)).simulated_ranks());
    } catch (const std::exception&) {
      return s.cluster.world_size(); // the run reports its bad option itself
    }
  }
  return most > 0 ? most : s.cluster.world_size();
}
} // namespace

WorkEstimate estimate_work(const scenario::Scenario& s) {
  const double gpus = simulated_gpus(s);
  const double steps = s.training.warmup_steps + s.training.steps;
  const double layers = static_cast<double>(s.model.spec.layers.size());
  const double param_bytes = s.model.spec.total_params() * scenario::dtype_bytes(s.model.dtype);
  // Gradient buckets: the smallest bucket_cap of the algorithms (25 MiB, torch's default, when
  // none is given) sets how many collectives a step holds.
  double bucket_cap = 25.0 * 1024 * 1024;
  for (const auto& a : s.algorithms)
    if (auto it = a.options.find("bucket_cap"); it != a.options.end()) {
      try {
        bucket_cap = std::min(bucket_cap, hw::parse_size_bytes(it->second.value));
      } catch (const hw::UnitError&) {
        // the algorithm reports its own bad option
      }
    }
  const double buckets = std::max(1.0, param_bytes / std::max(1.0, bucket_cap));
  const double per_gpu_step = 2 * layers * s.training.grad_accum + buckets + 4;
  WorkEstimate w;
  w.ops = gpus * steps * per_gpu_step;
  w.breakdown =
      fmt::format("{} GPUs x {} steps x ({} layers x 2 x {} micro-batches + {} gradient "
                  "buckets)",
                  hw::format_count(gpus), hw::format_count(steps), hw::format_count(layers),
                  s.training.grad_accum, hw::format_count(buckets));
  return w;
}

void check_work_budget(const scenario::Scenario& s, bool force) {
  if (force)
    return;
  const auto w = estimate_work(s);
  if (w.ops > kWorkBudgetOps)
    throw std::invalid_argument(fmt::format(
        "{}: the run would simulate about {} ops per algorithm ({}), past the budget of {} "
        "(tens of minutes and gigabytes of memory); use fewer GPUs, steps or micro-batches, a "
        "larger bucket_cap, or pass --force",
        s.source, hw::format_count(w.ops), w.breakdown, hw::format_count(kWorkBudgetOps)));
}

namespace {

// MemAvailable of /proc/meminfo: what can be allocated without swapping; 0 when unknown.
double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:")
      return kib * 1024;
  return 0;
}

// This process's mapped size (the forked simulation starts from it).
double mapped_bytes() {
  std::ifstream in("/proc/self/statm");
  double pages = 0;
  in >> pages;
  return pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

} // namespace

MemoryEstimate estimate_memory(const scenario::Scenario& s) {
  const double gpus = simulated_gpus(s);
  const double ops = estimate_work(s).ops;
  const double algorithms = std::max<double>(1, static_cast<double>(s.algorithms.size()));
  MemoryEstimate m;
  const double simulation = 40e6 + 100 * ops + 9 * 1024 * gpus + 1.1 * gpus * gpus;
  const double kept_traces = 72 * ops * algorithms;
  m.resident_bytes = simulation + kept_traces;
  const double stacks = 2 * gpus * (128 + 4) * 1024.0;
  m.address_space_bytes = m.resident_bytes + stacks;
  m.breakdown =
      fmt::format("{} for a simulation of {} ops on {} GPUs, {} for the traces of {} "
                  "algorithm(s)",
                  hw::format_bytes(simulation), hw::format_count(ops), hw::format_count(gpus),
                  hw::format_bytes(kept_traces), hw::format_count(algorithms));
  return m;
}

void check_memory_budget(const scenario::Scenario& s, double max_memory_bytes, int parallel) {
  const auto m = estimate_memory(s);
  const double runs = std::max(1, parallel);
  const bool given = max_memory_bytes > 0;
  const double limit = given ? max_memory_bytes : available_memory_bytes();
  const std::string at_once = runs > 1 ? fmt::format(" x {} at once", runs) : "";
  if (limit > 0 && m.resident_bytes * runs > limit)
    throw std::invalid_argument(fmt::format(
        "{}: the simulation would need about {} of memory{} ({}), more than {} ({}); use fewer "
        "GPUs or steps{}, or raise --max-memory if the estimate is too high",
        s.source, hw::format_bytes(m.resident_bytes * runs), at_once, m.breakdown,
        hw::format_bytes(limit), given ? "--max-memory" : "the memory available now",
        runs > 1 ? ", fewer --jobs" : ""));
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const double need = mapped_bytes() + m.address_space_bytes;
    if (need > static_cast<double>(as.rlim_cur))
      throw std::invalid_argument(fmt::format(
          "{}: the simulation would need about {} of address space (this process's {} mapped, "
          "{} actor stacks of 132 KiB, {}), more than the limit of {} (ulimit -v); use fewer "
          "GPUs or steps, or raise the limit",
          s.source, hw::format_bytes(need), hw::format_bytes(mapped_bytes()),
          hw::format_count(2 * simulated_gpus(s)), m.breakdown,
          hw::format_bytes(static_cast<double>(as.rlim_cur))));
  }
}

double parse_max_memory(const std::string& text) {
  try {
    const double bytes = hw::parse_size_bytes(text);
    if (!(bytes > 0))
      throw hw::UnitError("expected a positive size");
    return bytes;
  } catch (const std::exception& e) {
    throw std::invalid_argument(
        fmt::format("--max-memory '{}': {} (e.g. 8GB or 512MiB)", text, e.what()));
  }
}

} // namespace overlapsim::cli
