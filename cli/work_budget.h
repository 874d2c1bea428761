// Before simulating: an estimate of the work a run asks for, refused past a documented budget
// unless --force (issue 15.6: a bucket per parameter, a million nodes or a million steps ran on
// with no end in sight, or until memory ran out).
#pragma once

#include "scenario/scenario.h"

#include <string>

namespace overlapsim::cli {

struct WorkEstimate {
  double ops = 0;        // trace events: forward/backward ops and collectives, all GPUs
  std::string breakdown; // how the estimate was made, for the error message
};

// Past this many ops a run takes many minutes and gigabytes of trace (4096 GPUs x 10 steps of a
// 32-layer model, ~4M ops, took 101 s on one core).
constexpr double kWorkBudgetOps = 2e7;

WorkEstimate estimate_work(const scenario::Scenario& scenario);

// Throws std::invalid_argument naming the estimate and what to change, unless `force`.
void check_work_budget(const scenario::Scenario& scenario, bool force);

// The simulator's own memory for one algorithm's simulation (issue 26.3): a fit to peak resident
// sizes measured on this project's DDP runs (512-16,384 GPUs, 1-20 steps; within 15%):
// 40 MB + 100 B per op + 9 KiB per GPU + 1.1 B per GPU squared (SimGrid's per-flow state of
// collectives that span every GPU), plus the traces the parent keeps (72 B per op and algorithm).
// The address space adds every actor's stack (two per GPU, 128 KiB each plus a guard page).
struct MemoryEstimate {
  double resident_bytes = 0;
  double address_space_bytes = 0; // beyond what this process maps already
  std::string breakdown;
};

MemoryEstimate estimate_memory(const scenario::Scenario& scenario);

// Throws std::invalid_argument with the estimate when `parallel` simulations of the scenario at
// once would need more memory than `max_memory_bytes` (0: the memory available now, MemAvailable
// of /proc/meminfo) or more address space than this process's limit (ulimit -v).
void check_memory_budget(const scenario::Scenario& scenario, double max_memory_bytes,
                         int parallel = 1);

// Parses --max-memory ("8GB", "512MiB"); throws std::invalid_argument naming the option.
double parse_max_memory(const std::string& text);

} // namespace overlapsim::cli
