// `overlapsim run`: simulate every algorithm of a scenario and write summary, traces and plots.
#pragma once

#include "scenario/scenario.h"
#include "sim/sim_runtime.h"
#include "trace/summary.h"

#include <string>
#include <vector>

namespace overlapsim::cli {

struct RunOptions {
  std::string scenario;
  std::string out;                     // overrides output.dir
  std::vector<std::string> algorithms; // subset to run (default: the scenario's list)
  std::vector<std::string> overrides;  // --set key.path=value
  bool progress = true;
  bool plots = true;
  bool print_table = true;
  bool force = false;     // run past the work budget (cli/work_budget.h)
  std::string max_memory; // --max-memory (default: the memory available now)
  std::string max_time;   // --max-time (default: 10 min, cli/work_budget.h)
};

// The simulated rows of one scenario: each algorithm of `scenario.algorithms`, with speedup_vs_ddp
// against a ddp run of the same scenario (simulated for that when not listed). Traces, when asked
// for, come back in the same order as the rows.
// An error's message, and where it says "out of memory" (or is std::bad_alloc) the memory estimate
// made before the run beside it (issue 63.6).
std::string out_of_memory_error(const scenario::Scenario& scenario, const std::exception& e);

// When DDP is not listed, `ddp_reference` (if given) receives that run's row.
std::vector<SummaryRow> simulate_rows(const scenario::Scenario& scenario, bool progress,
                                      std::vector<sim::SimulationResult>* results = nullptr,
                                      SummaryRow* ddp_reference = nullptr);

// When none of `rows` fits in memory: what would, computed by simulating it (a sharding algorithm
// not among the rows on this cluster, else FSDP on the fewest nodes it fits on), or a plain
// statement that nothing computed fits. Empty when some row fits.
std::string fit_advice(const scenario::Scenario& scenario, const std::vector<SummaryRow>& rows);

// The row's model and hardware FLOPs per token and the GPU's peak (decoder transformers only;
// hw/model_flops.h): what summary.json's mfu and TFLOP/s per GPU come from.
void add_model_flops(SummaryRow& row, const scenario::Scenario& scenario);

// A summary row from a trace (simulated or measured): metrics, critical path, idle breakdown,
// and a warning when peak memory exceeds the GPU's.
SummaryRow make_row(const scenario::Scenario& scenario, const std::string& algorithm,
                    const Trace& trace, const std::vector<std::string>& warnings = {});

// Loads, simulates, writes outputs; returns the process exit code. Errors go to stderr as one
// paragraph and leave no outputs.
int run_command(const RunOptions& options);

// Applies --algorithms (a subset of the scenario's entries, or any registered name) to a scenario.
void select_algorithms(scenario::Scenario& scenario, const std::vector<std::string>& names);

// "warning: ..." on stderr for each key the scenario writes to no effect (Scenario::warnings).
void print_scenario_warnings(const scenario::Scenario& scenario);

std::string format_table(const std::vector<SummaryRow>& rows);

} // namespace overlapsim::cli
