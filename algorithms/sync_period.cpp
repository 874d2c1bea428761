#include "algorithms/sync_period.h"

#include "scenario/loader.h"

#include <fmt/format.h>

namespace overlapsim {

namespace {

// "algorithms.local-sgd.H = 10 (scenario.yaml:14)", or "... (its default)".
std::string period_key(const scenario::AlgorithmSpec& spec, int period) {
  const auto it = spec.options.find("H");
  return fmt::format("key 'algorithms.{}.H' = {} ({})", spec.name, period,
                     it == spec.options.end() ? "its default" : it->second.where);
}

} // namespace

MeasuredSteps measured_steps(const scenario::TrainingSpec& training,
                             const scenario::AlgorithmSpec& spec, const Algorithm& algorithm) {
  const int period = algorithm.sync_period();
  const int steps = training.steps;
  if (period <= 1)
    return {steps, {}};
  if (training.steps_where.empty()) // the default window: whole periods, at least the default
    return {(steps + period - 1) / period * period, {}};
  if (steps < period)
    throw scenario::ScenarioError(fmt::format(
        "{}: key 'training.steps': {} steps are shorter than one period of '{}' ({}): the window "
        "would hold none of its synchronisations; give at least {} steps (a multiple of {}), or a "
        "smaller H",
        training.steps_where, steps, spec.label, period_key(spec, period), period, period));
  if (steps % period == 0)
    return {steps, {}};
  return {steps, fmt::format(
                     "training.steps = {} is not a whole number of periods of '{}' (H = {}): "
                     "its window holds {} synchronisation{} in {} steps; a multiple of {} measures "
                     "it fairly",
                     steps, spec.label, period, steps / period, steps / period == 1 ? "" : "s",
                     steps, period)};
}

scenario::Scenario with_measured_steps(const scenario::Scenario& scenario,
                                       const scenario::AlgorithmSpec& spec,
                                       std::vector<std::string>* warnings) {
  const auto window = measured_steps(scenario.training, spec, *make_algorithm(spec));
  auto out = scenario;
  out.training.steps = window.steps;
  if (warnings && !window.warning.empty())
    warnings->push_back(window.warning);
  return out;
}

} // namespace overlapsim
