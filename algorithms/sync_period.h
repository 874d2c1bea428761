// The measuring window of an algorithm that synchronises every H optimizer steps (issue 27.3).
//
// Local SGD, DreamDDP, DiLoCo and Streaming DiLoCo communicate once per period: a window of 3
// steps with H = 10 holds no communication at all and reports a free speedup. A window the user did
// not size grows to whole periods; one the user wrote is theirs, so a window shorter than a period
// is an error naming both keys, and one that cuts a period short a warning.
#pragma once

#include "algorithms/algorithm.h"
#include "scenario/scenario.h"

#include <string>

namespace overlapsim {

struct MeasuredSteps {
  int steps = 0;       // optimizer steps in the window the algorithm is measured over
  std::string warning; // empty, or why the window skews the algorithm's numbers
};

// Throws scenario::ScenarioError when `training.steps` was written and is shorter than one of
// `algorithm`'s periods.
MeasuredSteps measured_steps(const scenario::TrainingSpec& training,
                             const scenario::AlgorithmSpec& spec, const Algorithm& algorithm);

// `scenario` with `training.steps` set to the window of `spec`'s algorithm; its warning (if any)
// is appended to `warnings`.
scenario::Scenario with_measured_steps(const scenario::Scenario& scenario,
                                       const scenario::AlgorithmSpec& spec,
                                       std::vector<std::string>* warnings = nullptr);

} // namespace overlapsim
