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

} // namespace overlapsim::cli
