// report.md: what a user should take from a run, in plain words: per algorithm, what paces a step
// (the critical path) and where each GPU's idle time goes; and why the fastest beats DDP.
#pragma once

#include "scenario/scenario.h"
#include "trace/analysis.h"
#include "trace/summary.h"

#include <optional>
#include <string>
#include <vector>

namespace overlapsim::cli {

// Stores the analysis in the row's summary.json fields: critical_path, idle_breakdown,
// lower_bound_s.
void add_analysis(SummaryRow& row, const Analysis& analysis);

// The row's MFU as a percentage ("41.3%"); "-" for a model other than a decoder transformer
// (SummaryRow::model_flops_per_token 0).
std::string mfu_cell(const SummaryRow& row);

// The network the simulation assumed (links, NICs per node, per-node bandwidth, WAN), one line:
// report.md's 'Network:' line and `run`'s stdout.
std::string network_summary(const scenario::Scenario& scenario);

// "75 GB (80 GB less a 5 GB reserve)": what an algorithm may hold on each GPU, and why not all.
std::string memory_available_text(const hw::GpuSpec& gpu);

// What report.md compares against and suggests beyond the rows themselves (`run` fills it).
struct ReportContext {
  // DDP's row when DDP is not among the algorithms: simulate_rows simulates it as the baseline of
  // speedup_vs_ddp, and the headline compares against it (named as such), never ranks it.
  std::optional<SummaryRow> ddp_reference;
  // When no algorithm fits: what would, as computed by fit_advice (cli/run_command.h).
  std::string fit_advice;
};

std::string report_markdown(const scenario::Scenario& scenario, const std::vector<SummaryRow>& rows,
                            const ReportContext& context = {});

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
