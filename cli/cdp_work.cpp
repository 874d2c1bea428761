#include "cli/cdp_work.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::cli {

namespace {

std::string option(const scenario::AlgorithmSpec& spec, const char* key, const char* fallback) {
  const auto it = spec.options.find(key);
  return it == spec.options.end() ? fallback : it->second.value;
}

bool is_cdp(const scenario::AlgorithmSpec& spec) {
  return spec.name == "cdp-v1" || spec.name == "cdp-v2";
}

bool cyclic(const scenario::AlgorithmSpec& spec) {
  return option(spec, "schedule", "cyclic") == "cyclic";
}

// Ops per GPU and step on N stages (the fit of work_budget.h counts a message as a collective
// call: one flow each): 2N compute ops plus the optimizer's 4, and 2N messages cyclic.
double compute_ops_per_gpu_step(double stages) {
  return 2 * stages + 4;
}
double messages_per_gpu_step(double stages, bool cyclic_schedule) {
  return cyclic_schedule ? 2 * stages : 1;
}

} // namespace

bool cdp_stage_per_gpu(const scenario::AlgorithmSpec& spec) {
  return is_cdp(spec) && option(spec, "setting", "multi-gpu") != "single-gpu";
}

void count_cdp_work(const scenario::Scenario& s, const scenario::AlgorithmSpec& spec,
                    SimulationWork& w) {
  if (!is_cdp(spec))
    return;
  if (cdp_stage_per_gpu(spec)) {
    const double stages = w.world;
    w.micro_batches = 1;
    w.collectives_per_step = messages_per_gpu_step(stages, cyclic(spec));
    w.compute_ops = w.gpus * w.steps * compute_ops_per_gpu_step(stages);
  } else {
    // single-gpu: grad_accum micro-batches through every stage, cyclic or not.
    const double stages = std::max(1, s.training.grad_accum);
    w.micro_batches = stages;
    w.collectives_per_step = 1;
    w.compute_ops = w.gpus * w.steps * (2 * stages * stages + 4);
  }
  w.collective_ops = w.gpus * w.steps * w.collectives_per_step;
  w.messages = 0;
}

scenario::AlgorithmSpec cdp_single_gpu(const scenario::AlgorithmSpec& spec) {
  auto single = spec;
  single.options["setting"] = scenario::AlgorithmOption{"single-gpu", spec.where};
  single.label = spec.label + " (setting: single-gpu)";
  return single;
}

int cdp_most_gpus(const scenario::Scenario& s, double max_ops) {
  // ops(N) = N x steps x (2N + 4 + 2N) <= max_ops: 4N^2 + 4N - max_ops / steps <= 0.
  const double steps = std::max(1, s.training.warmup_steps + s.training.steps);
  const double budget = max_ops / steps;
  const double n = std::floor((-4 + std::sqrt(16 + 16 * budget)) / 8);
  const double layers = static_cast<double>(s.model.spec.layers.size());
  return static_cast<int>(std::max(1.0, std::min(n, layers)));
}

} // namespace overlapsim::cli
