#include "cli/run_command.h"

#include "algorithms/algorithm.h"
#include "algorithms/registry.h"
#include "algorithms/sync_period.h"
#include "cli/plots.h"
#include "cli/progress_bar.h"
#include "cli/report.h"
#include "cli/time_to_target.h"
#include "cli/trace_file.h"
#include "cli/work_budget.h"
#include "files/atomic_file.h"
#include "files/output_stage.h"
#include "hw/units.h"
#include "scenario/loader.h"
#include "trace/analysis.h"

#include <chrono>
#include <cstdio>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <unistd.h>

namespace overlapsim::cli {

namespace {

// Steps simulated, as a bar on a terminal (cli/progress_bar.h); nothing otherwise.
sim::ProgressFn make_progress(const std::string& algorithm) {
  auto bar = std::make_shared<std::unique_ptr<ProgressBar>>();
  return [=](int done, int total) {
    if (!*bar)
      *bar = std::make_unique<ProgressBar>(algorithm, static_cast<std::size_t>(total), "steps");
    (*bar)->update(static_cast<std::size_t>(done));
  };
}

} // namespace

std::string out_of_memory_error(const scenario::Scenario& scenario, const std::exception& e) {
  // The parent's own allocation failure (reading a trace back) says what it is, like the child's.
  const std::string what = dynamic_cast<const std::bad_alloc*>(&e) != nullptr
                               ? std::string("out of memory while reading the simulation's "
                                             "results back (std::bad_alloc)")
                               : std::string(e.what());
  if (what.find("out of memory") == std::string::npos)
    return what;
  try {
    return with_memory_estimate(what, estimate_memory(scenario));
  } catch (const std::exception&) {
    return what; // no memory left even for the estimate's text
  }
}

SummaryRow make_row(const scenario::Scenario& s, const std::string& algorithm, const Trace& trace,
                    const std::vector<std::string>& warnings) {
  SummaryRow row;
  row.algorithm = algorithm;
  row.workers = s.cluster.world_size();
  row.seq_len = s.training.seq_len;
  row.micro_batch = s.training.micro_batch;
  row.measured = trace.measured;
  row.gpu_memory_bytes = s.cluster.gpu.memory_bytes;
  row.metrics = compute_metrics(trace, s.training.warmup_steps, s.training.steps);
  add_analysis(row, analyze(trace, row.metrics));
  add_supplied_time_to_target(row, s);
  // What a step of it is, next to DDP's (algorithms/algorithm.h): report.md and the plots caveat
  // the speedups of local and delayed updates.
  if (const auto spec = std::find_if(s.algorithms.begin(), s.algorithms.end(),
                                     [&](const auto& a) { return a.label == algorithm; });
      spec != s.algorithms.end())
    if (const auto* d = find_algorithm(spec->name)) {
      row.extra["update"] = std::string(to_string(d->update));
      // Its own colour in every plot; a second entry of the same algorithm (another label)
      // takes a spare one there.
      if (spec->label == spec->name)
        row.extra["colour"] = std::string(d->colour);
    }
  auto all_warnings = warnings;
  if (row.metrics.peak_memory_bytes > s.cluster.gpu.memory_bytes)
    all_warnings.push_back(
        fmt::format("peak memory {} per GPU exceeds the {}'s {}: this would not fit",
                    hw::format_bytes(row.metrics.peak_memory_bytes), s.cluster.gpu.name,
                    hw::format_bytes(s.cluster.gpu.memory_bytes)));
  if (!all_warnings.empty())
    row.extra["warnings"] = all_warnings;
  return row;
}

void print_scenario_warnings(const scenario::Scenario& scenario) {
  for (const auto& w : scenario.warnings)
    std::fprintf(stderr, "warning: %s\n", w.c_str());
}

void select_algorithms(scenario::Scenario& scenario, const std::vector<std::string>& names) {
  if (names.empty())
    return;
  std::vector<scenario::AlgorithmSpec> chosen;
  for (std::size_t i = 0; i < names.size(); ++i)
    if (std::find(names.begin(), names.begin() + static_cast<std::ptrdiff_t>(i), names[i]) !=
        names.begin() + static_cast<std::ptrdiff_t>(i))
      throw std::invalid_argument(
          fmt::format("--algorithms lists '{}' twice; give each algorithm once", names[i]));
  for (const auto& name : names) {
    auto it = std::find_if(scenario.algorithms.begin(), scenario.algorithms.end(),
                           [&](const auto& a) { return a.label == name; });
    if (it != scenario.algorithms.end()) {
      chosen.push_back(*it);
    } else {
      scenario::AlgorithmSpec a;
      a.name = name;
      a.label = name;
      a.where = "--algorithms";
      chosen.push_back(a);
    }
  }
  scenario.algorithms = chosen;
}

std::vector<SummaryRow> simulate_rows(const scenario::Scenario& scenario, bool progress,
                                      std::vector<sim::SimulationResult>* results) {
  // Every algorithm is built once here so that a bad name or option, or a window shorter than its
  // period, fails before any simulation.
  for (const auto& a : scenario.algorithms)
    with_measured_steps(scenario, a);
  std::vector<SummaryRow> rows;
  double ddp_throughput = 0;
  bool ddp_listed = false;
  for (const auto& a : scenario.algorithms) {
    // An algorithm that cannot run (an infeasible setting, a failed simulation) gets a row with
    // its error; the others still run.
    try {
      std::vector<std::string> warnings;
      const auto windowed = with_measured_steps(scenario, a, &warnings);
      auto result =
          sim::simulate(windowed, a, progress ? make_progress(a.label) : sim::ProgressFn{});
      warnings.insert(warnings.end(), result.warnings.begin(), result.warnings.end());
      rows.push_back(make_row(windowed, a.label, result.trace, warnings));
      rows.back().extra["simulation"] = result.simulation;
      if (results)
        results->push_back(std::move(result));
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      SummaryRow failed;
      failed.algorithm = a.label;
      failed.workers = scenario.cluster.world_size();
      failed.error = out_of_memory_error(scenario, e);
      rows.push_back(std::move(failed));
      if (results)
        results->emplace_back();
    }
    if (a.name == "ddp" && !ddp_listed) { // the first ddp entry is the reference
      ddp_listed = true;
      ddp_throughput = rows.back().metrics.throughput_samples_s;
    }
  }
  if (!ddp_listed) {
    scenario::AlgorithmSpec ddp;
    ddp.name = ddp.label = "ddp";
    ddp.where = "(reference for speedup_vs_ddp)";
    try {
      const auto reference = sim::simulate(scenario, ddp);
      ddp_throughput =
          compute_metrics(reference.trace, scenario.training.warmup_steps, scenario.training.steps)
              .throughput_samples_s;
    } catch (const Interrupted&) {
      throw;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "warning: the ddp reference of speedup_vs_ddp failed: %s\n", e.what());
    }
  }
  // Without a reference (ddp failed) speedups are NaN, written as null.
  for (auto& r : rows)
    r.speedup_vs_ddp = ddp_throughput > 0 ? r.metrics.throughput_samples_s / ddp_throughput
                                          : std::numeric_limits<double>::quiet_NaN();
  return rows;
}

namespace {

// A count without an exponent (issue 27.9: "1.311e+05" samples a step): whole numbers as such.
std::string plain_count(double v) {
  return std::abs(v - std::round(v)) < 1e-9 * std::max(1.0, std::abs(v)) || std::abs(v) >= 1e4
             ? fmt::format("{:.0f}", v)
             : fmt::format("{:.4g}", v);
}

// The row's time to the target loss, when the scenario has one: "-" when never reached.
std::optional<std::string> time_to_target_cell(const SummaryRow& r) {
  if (!r.extra.contains("time_to_target"))
    return std::nullopt;
  const auto& t = r.extra["time_to_target"]["time_s"];
  return t.is_number() ? hw::format_time(t.get<double>()) : std::string("-");
}

} // namespace

std::string format_table(const std::vector<SummaryRow>& rows) {
  // The first column is as wide as the longest label, so that long ones keep the columns aligned.
  std::size_t width = 12;
  bool target = false; // a time-to-target column leads when the scenario has a target loss
  for (const auto& r : rows) {
    width = std::max(width, r.algorithm.size());
    target = target || time_to_target_cell(r).has_value();
  }
  std::string out = fmt::format(
      "{:<{}} {}{:>10} {:>14} {:>8} {:>12} {:>9} {:>12} {:>10} {:>12}\n", "algorithm", width,
      target ? fmt::format("{:>10} ", "to target") : "", "iteration", "samples/s", "speedup",
      "samples/step", "idle", "exposed comm", "waiting", "peak memory");
  for (const auto& r : rows) {
    const auto& m = r.metrics;
    if (!r.error.empty()) {
      out += fmt::format("{:<{}} error: {}\n", r.algorithm, width, r.error);
      continue;
    }
    const bool too_big = r.gpu_memory_bytes > 0 && m.peak_memory_bytes > r.gpu_memory_bytes;
    out += fmt::format(
        "{:<{}} {}{:>10} {:>14.1f} {:>7.3f}x {:>12} {:>8.1f}% {:>12} {:>10} {:>12}{}\n",
        r.algorithm, width,
        target ? fmt::format("{:>10} ", time_to_target_cell(r).value_or("-")) : "",
        hw::format_time(m.iteration_time_s), m.throughput_samples_s, r.speedup_vs_ddp,
        plain_count(m.samples / m.steps), 100 * m.idle_fraction_mean,
        hw::format_time(m.exposed_comm_s), hw::format_time(m.waiting_s),
        hw::format_bytes(m.peak_memory_bytes),
        too_big ? fmt::format("  DOES NOT FIT ({} per GPU)", hw::format_bytes(r.gpu_memory_bytes))
                : "");
  }
  // Rank classes (sim/rank_classes.h): say where one node's GPUs stood for all.
  for (const auto& r : rows)
    if (const auto it = r.extra.find("simulation");
        it != r.extra.end() && it->is_string() && it->get<std::string>().starts_with("classes"))
      out += fmt::format("{}: simulated as rank {}; cluster.rank_classes: off runs every GPU\n",
                         r.algorithm, it->get<std::string>());
  return out;
}

int run_command(const RunOptions& options) {
  try {
    auto scenario = scenario::load_scenario(options.scenario, options.overrides);
    if (!options.out.empty())
      scenario.output.dir = options.out;
    select_algorithms(scenario, options.algorithms);
    print_scenario_warnings(scenario);
    check_work_budget(scenario, options.force);
    check_time_budget(scenario, parse_max_time(options.max_time));
    check_memory_budget(scenario,
                        options.max_memory.empty() ? 0 : parse_max_memory(options.max_memory));
    // Checked before simulating: the directory must be new, empty or a previous run's outputs.
    OutputStage stage(scenario.output.dir);
    std::vector<sim::SimulationResult> results;
    const auto rows = simulate_rows(scenario, options.progress, &results);

    // Every output goes to the staging directory, published at once: all of them or none.
    const std::string& dir = stage.path();
    if (scenario.output.traces)
      for (std::size_t i = 0; i < rows.size(); ++i)
        if (rows[i].error.empty()) {
          throw_if_interrupted(); // a trace can take seconds to write
          write_trace_file(dir, rows[i].algorithm, results[i].trace,
                           fmt::format("{}: {}", scenario.name, rows[i].algorithm),
                           scenario.output);
        }
    write_summary(dir, scenario::to_json(scenario), rows);
    write_file_atomically(dir + "/report.md", report_markdown(scenario, rows));
    if (options.print_table)
      std::printf("%s\nnetwork: %s\n%s", scenario.name.c_str(), network_summary(scenario).c_str(),
                  format_table(rows).c_str());
    for (const auto& r : rows)
      if (r.extra.contains("warnings"))
        for (const auto& w : r.extra["warnings"])
          std::fprintf(stderr, "warning: %s: %s\n", r.algorithm.c_str(),
                       w.get<std::string>().c_str());
    if (options.plots && scenario.output.plots)
      draw_plots(dir);
    stage.publish();
    std::printf("outputs in %s\n", scenario.output.dir.c_str());
    // Exit status 2: the outputs are complete, but some algorithms could not run.
    int failed = 0;
    for (const auto& r : rows)
      if (!r.error.empty()) {
        std::fprintf(stderr, "overlapsim run: %s failed: %s\n", r.algorithm.c_str(),
                     r.error.c_str());
        ++failed;
      }
    return failed > 0 ? 2 : 0;
  } catch (const std::bad_alloc& e) {
    std::fprintf(stderr, "overlapsim run: out of memory (std::bad_alloc) after the simulations; "
                         "use fewer GPUs or steps\n");
    return 1;
  } catch (const std::exception& e) {
    return report_failure("overlapsim run", e);
  }
}

} // namespace overlapsim::cli
