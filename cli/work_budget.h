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

} // namespace overlapsim::cli
