// report.md: what a user should take from a run, in plain words: per algorithm, what paces a step
// (the critical path) and where each GPU's idle time goes; and why the fastest beats DDP.
#pragma once

#include "scenario/scenario.h"
#include "trace/analysis.h"
#include "trace/summary.h"

#include <string>
#include <vector>

namespace overlapsim::cli {

// Stores the analysis in the row's summary.json fields: critical_path, idle_breakdown,
// lower_bound_s.
void add_analysis(SummaryRow& row, const Analysis& analysis);

// The network the simulation assumed (links, NICs per node, per-node bandwidth, WAN), one line:
// report.md's 'Network:' line and `run`'s stdout.
std::string network_summary(const scenario::Scenario& scenario);

std::string report_markdown(const scenario::Scenario& scenario,
                            const std::vector<SummaryRow>& rows);

// Whether a summary row fits in its GPU's memory: its `fits` field where it has one, else its
// peak_memory_bytes against gpu_memory_bytes (a row without a known capacity fits).
bool row_fits(const nlohmann::ordered_json& row);

// A sweep's report.md (issue 62.3), from what its summary.json holds: `scenario` (the summary's
// "scenario"), `sweep` (its "sweep": vary, values, points) and the rows in point order. Per point
// the fastest row that fits in GPU memory; per algorithm where along the first varied key its
// speedup over DDP crosses 1; memory per GPU and fit per point.
std::string sweep_report_markdown(const nlohmann::ordered_json& scenario,
                                  const nlohmann::ordered_json& sweep,
                                  const std::vector<nlohmann::ordered_json>& rows);

} // namespace overlapsim::cli
