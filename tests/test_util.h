// Helpers shared by the simulator's tests: scenarios from inline YAML, one-call simulation.
#pragma once

#include "sim/sim_runtime.h"
#include "spec/loader.h"
#include "trace/metrics.h"

#include <string>

namespace overlapsim::testing {

inline spec::Scenario scenario_from(const std::string& yaml,
                                    const std::vector<std::string>& overrides = {}) {
  return spec::load_scenario_text(yaml, "test.yaml", overrides);
}

struct Simulated {
  Trace trace;
  Metrics metrics;
};

inline Simulated simulate(const spec::Scenario& s, const std::string& algorithm,
                          std::map<std::string, std::string> options = {}) {
  spec::AlgorithmSpec a;
  a.name = a.label = algorithm;
  a.where = "test";
  for (auto& [k, v] : options)
    a.options[k] = spec::AlgorithmOption{v, "test"};
  auto result = sim::simulate(s, a);
  auto metrics = compute_metrics(result.trace, s.training.warmup_steps, s.training.steps);
  return {std::move(result.trace), std::move(metrics)};
}

} // namespace overlapsim::testing
