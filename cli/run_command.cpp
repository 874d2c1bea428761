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
#include "hw/model_flops.h"
#include "hw/units.h"
#include "parallel/layout.h"
#include "scenario/checkpointing.h"
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
    // The bar lives in the simulation's process, which ends without destructors: cleared at the
    // last step, so that the table's title starts a clean line (issue 62.8).
    if (done >= total)
      bar->reset();
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

void add_model_flops(SummaryRow& row, const scenario::Scenario& s) {
  // The recomputation the simulator runs: model.activation_checkpointing's checkpointed layers'
  // forward once more; parallelism.recompute's (parallel/stage_view.h): every block's forward
  // (full) or its attention scores (selective, Korthikanti et al. 2022).
  hw::RecomputedFlops recomputed;
  const auto recompute = s.parallelism.recompute;
  for (std::size_t i = 0; i < s.model.spec.layers.size(); ++i) {
    const auto& name = s.model.spec.layers[i].name;
    const bool block = name != "embedding" && name != "head";
    recomputed.layers.push_back(s.model.checkpointing.segment_of(static_cast<int>(i)) >= 0 ||
                                (recompute == scenario::Recompute::full && block));
  }
  recomputed.selective = recompute == scenario::Recompute::selective;
  const auto f = hw::transformer_flops(s.model.spec, s.model.dims, s.training.seq_len, recomputed);
  if (!f)
    return;
  row.model_flops_per_token = f->per_token;
  row.hardware_flops_per_token = f->hardware_per_token;
  const auto& gpu = s.cluster.gpu;
  row.peak_flops_per_gpu = s.model.dtype == scenario::Dtype::fp32 && gpu.peak_flops_fp32 > 0
                               ? gpu.peak_flops_fp32
                               : gpu.peak_flops_bf16;
}

// Each stage's bubble fraction: the mean over its GPUs of their pipeline bubble per step, over the
// iteration time (issue 65.3). Only with pipeline parallelism.
void add_pipeline_bubble(SummaryRow& row, const scenario::Scenario& s) {
  const auto& m = row.metrics;
  const int stages = s.parallelism.pipeline;
  if (stages <= 1 || !(m.iteration_time_s > 0))
    return;
  const auto layout = parallel::ParallelLayout::of(s);
  std::vector<double> sum(static_cast<std::size_t>(stages), 0.0), count(sum);
  for (std::size_t rank = 0; rank < m.pipeline_bubble_per_worker_s.size(); ++rank) {
    const auto stage =
        static_cast<std::size_t>(layout.coordinates(static_cast<int>(rank)).pipeline);
    sum[stage] += m.pipeline_bubble_per_worker_s[rank];
    ++count[stage];
  }
  for (std::size_t k = 0; k < sum.size(); ++k)
    row.pipeline_bubble_fraction_per_stage.push_back(
        count[k] > 0 ? sum[k] / count[k] / m.iteration_time_s : 0.0);
}

// Mixed GPU types (cluster.node_types): each GPU's memory is its own, so the row shows the
// capacity of the GPU with the least room left beside its peak.
void add_node_type_memory(SummaryRow& row, const scenario::Scenario& s, const Trace& trace) {
  if (s.cluster.node_types.empty())
    return;
  double least = std::numeric_limits<double>::infinity();
  for (std::size_t w = 0; w < trace.peak_memory.size(); ++w) {
    double peak = 0;
    for (const double b : trace.peak_memory[w])
      peak += b;
    const auto& gpu =
        s.cluster.gpu_of_node(trace.gpu_of(static_cast<int>(w)) / s.cluster.gpus_per_node);
    if (const double room = gpu.memory_available() - peak; room < least) {
      least = room;
      row.gpu_memory_bytes = gpu.memory_bytes;
      row.memory_available_bytes = gpu.memory_available();
    }
  }
}

SummaryRow make_row(const scenario::Scenario& s, const std::string& algorithm, const Trace& trace,
                    const std::vector<std::string>& warnings) {
  SummaryRow row;
  row.algorithm = algorithm;
  row.workers = s.cluster.world_size();
  row.seq_len = s.training.seq_len;
  row.micro_batch = s.training.micro_batch;
  row.model_replicas = s.cluster.world_size() / (s.parallelism.tensor * s.parallelism.pipeline);
  row.measured = trace.measured;
  row.gpu_memory_bytes = s.cluster.gpu.memory_bytes;
  row.memory_available_bytes = s.cluster.gpu.memory_available();
  row.metrics = compute_metrics(trace, s.training.warmup_steps, s.training.steps);
  add_node_type_memory(row, s, trace);
  add_pipeline_bubble(row, s);
  add_model_flops(row, s);
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
  if (!fits(row))
    all_warnings.push_back(fmt::format("peak memory {} per GPU exceeds the {} available on the "
                                       "{}: this would not fit",
                                       hw::format_bytes(row.metrics.peak_memory_bytes),
                                       memory_available_text(s.cluster.gpu), s.cluster.gpu.name));
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
                                      std::vector<sim::SimulationResult>* results,
                                      SummaryRow* ddp_reference) {
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
      if (!result.approximation.empty())
        rows.back().extra["approximation"] = result.approximation;
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
      auto row = make_row(scenario, ddp.label, reference.trace);
      ddp_throughput = row.metrics.throughput_samples_s;
      if (ddp_reference) {
        row.speedup_vs_ddp = 1;
        *ddp_reference = std::move(row);
      }
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

// One algorithm simulated quietly on `s`: its row (fit_advice's probes). Advice, not a result:
// with rank classes wherever the cluster allows them, cluster.rank_classes: off or not (they give
// the full simulation's numbers, issue 29.2). Issue 64.1: on 1,024 GPUs with them off, the probe of
// zero1 (rings of 1,024 flows) took longer than the DDP run it advised on.
SummaryRow probe(const scenario::Scenario& s, const scenario::AlgorithmSpec& spec) {
  auto windowed = with_measured_steps(s, spec);
  // rank_classes: statistical stays: with jitter, auto would run each probe in full.
  if (windowed.cluster.rank_classes == scenario::RankClassesChoice::off)
    windowed.cluster.rank_classes = scenario::RankClassesChoice::automatic;
  return make_row(windowed, spec.label, sim::simulate(windowed, spec).trace);
}

} // namespace

std::string fit_advice(const scenario::Scenario& s, const std::vector<SummaryRow>& rows) {
  if (std::any_of(rows.begin(), rows.end(), [](const SummaryRow& r) { return fits(r); }) ||
      std::none_of(rows.begin(), rows.end(), [](const SummaryRow& r) { return r.error.empty(); }))
    return {};
  const double available = s.cluster.gpu.memory_available();
  const double ddp_throughput = [&] {
    for (const auto& r : rows)
      if (r.error.empty() && r.speedup_vs_ddp > 0)
        return r.metrics.throughput_samples_s / r.speedup_vs_ddp;
    return 0.0;
  }();
  const auto speed = [&](const SummaryRow& r) {
    return fmt::format("{} per step{}", hw::format_time(r.metrics.iteration_time_s),
                       ddp_throughput > 0
                           ? fmt::format(", {:.2f}x DDP's samples per second",
                                         r.metrics.throughput_samples_s / ddp_throughput)
                           : "");
  };
  // First the smallest change: an algorithm that shards the model state, on this cluster.
  std::optional<SummaryRow> fsdp;
  scenario::AlgorithmSpec fsdp_spec;
  for (const char* name : {"zero1", "fsdp"}) {
    const auto listed = std::find_if(s.algorithms.begin(), s.algorithms.end(),
                                     [&](const auto& a) { return a.name == name; });
    scenario::AlgorithmSpec spec;
    spec.name = spec.label = name;
    spec.where = "(memory advice)";
    std::optional<SummaryRow> row;
    if (listed != s.algorithms.end()) {
      spec = *listed;
      for (const auto& r : rows)
        if (r.algorithm == listed->label && r.error.empty())
          row = r;
    } else {
      try {
        row = probe(s, spec);
      } catch (const std::exception&) {
        throw_if_interrupted();
        continue; // cannot run here: no advice from it
      }
      if (fits(*row))
        return fmt::format(
            "{} would fit: it shards the {}, and needs {} per GPU on this cluster (simulated; {}).",
            name,
            spec.name == "fsdp" ? "parameters, gradients and optimizer state" : "optimizer state",
            hw::format_bytes(row->metrics.peak_memory_bytes), speed(*row));
    }
    if (spec.name == "fsdp" && row) {
      fsdp = row;
      fsdp_spec = spec;
    }
  }
  if (!fsdp)
    return "Nothing overlapsim computed here fits: FSDP, which shards the most, could not run.";
  // The part of FSDP's peak that more GPUs do not shrink: all but its sharded model state.
  const auto unsharded = [](const SummaryRow& r) {
    const auto& b = r.metrics.memory_breakdown;
    return r.metrics.peak_memory_bytes - b[static_cast<std::size_t>(MemoryCategory::params)] -
           b[static_cast<std::size_t>(MemoryCategory::grads)] -
           b[static_cast<std::size_t>(MemoryCategory::optimizer_state)];
  };
  // FSDP over more nodes of `base`, from its `row` there: the estimate (the sharded state shrinks
  // with the GPUs, the rest does not), checked by simulating FSDP there; gathered layers do not
  // shrink, so up to three node counts from it.
  const auto more_nodes = [&](const scenario::Scenario& base, const SummaryRow& row,
                              const std::string& with) {
    if (!base.cluster.sites.empty())
      return fmt::format("FSDP{} needs {} per GPU here; how many more nodes it needs is not "
                         "computed for a cluster of sites.",
                         with, hw::format_bytes(row.metrics.peak_memory_bytes));
    const int per_node = base.cluster.gpus_per_node;
    const double fixed = unsharded(row);
    const double gpus = std::ceil(base.cluster.world_size() *
                                  (row.metrics.peak_memory_bytes - fixed) / (available - fixed));
    int nodes = std::max(base.cluster.nodes + 1, static_cast<int>(std::ceil(gpus / per_node)));
    for (int tries = 0; tries < 3 && static_cast<long long>(nodes) * per_node <= (1 << 20);
         ++tries, ++nodes) {
      auto bigger = base;
      bigger.cluster.nodes = nodes;
      try {
        const auto there = probe(bigger, fsdp_spec);
        if (fits(there))
          // No speedup: DDP's ran on the smaller cluster.
          return fmt::format("FSDP{} would fit on {} nodes ({} GPUs) instead of {}: it needs {} "
                             "per GPU there (simulated; {} per step).",
                             with, nodes, nodes * per_node, base.cluster.nodes,
                             hw::format_bytes(there.metrics.peak_memory_bytes),
                             hw::format_time(there.metrics.iteration_time_s));
      } catch (const std::exception&) {
        throw_if_interrupted();
        break;
      }
    }
    return fmt::format("FSDP{} needs {} per GPU here and still did not fit on {} nodes; nothing "
                       "overlapsim computed here fits.",
                       with, hw::format_bytes(row.metrics.peak_memory_bytes), nodes - 1);
  };
  if (unsharded(*fsdp) < available)
    return more_nodes(s, *fsdp, "");
  // Under 3D parallelism the recomputation is Megatron's (parallelism.recompute), which the
  // model's activation checkpointing may not join.
  const auto& par = s.parallelism;
  const bool megatron =
      par.tensor > 1 || par.pipeline > 1 || par.recompute != scenario::Recompute::none;
  if (s.model.checkpointing.enabled() || par.recompute == scenario::Recompute::full)
    return fmt::format("Not even FSDP fits on any number of GPUs: sharding its parameters, "
                       "gradients and optimizer state over more GPUs leaves {} per GPU of "
                       "activations and buffers, more than the {} available. Nothing overlapsim "
                       "computed here fits.",
                       hw::format_bytes(unsharded(*fsdp)), hw::format_bytes(available));
  // Activations are what does not shrink: keep only each layer's input and recompute the rest.
  auto checkpointed = s;
  if (megatron)
    checkpointed.parallelism.recompute = scenario::Recompute::full;
  else
    checkpointed.model.checkpointing = scenario::checkpointing_of(s.model, 1);
  const std::string with =
      megatron ? " with full recomputation (parallelism.recompute: full)"
               : " with activation checkpointing (model.activation_checkpointing: full)";
  std::optional<SummaryRow> row;
  try {
    row = probe(checkpointed, fsdp_spec);
  } catch (const std::exception&) {
    throw_if_interrupted();
  }
  if (row && fits(*row))
    return fmt::format("FSDP{} would fit: it needs {} per GPU on this cluster (simulated; {}).",
                       with, hw::format_bytes(row->metrics.peak_memory_bytes), speed(*row));
  if (row && unsharded(*row) < available)
    return more_nodes(checkpointed, *row, with);
  return fmt::format("Not even FSDP fits on any number of GPUs: sharding its parameters, "
                     "gradients and optimizer state over more GPUs leaves {} per GPU of "
                     "activations and buffers{}, more than the {} available. Nothing overlapsim "
                     "computed here fits.",
                     hw::format_bytes(unsharded(*fsdp)),
                     row ? fmt::format(" ({}{})", hw::format_bytes(unsharded(*row)), with) : "",
                     hw::format_bytes(available));
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
  bool bubble = false; // a pipeline-bubble column follows `waiting` when a row pipelines
  for (const auto& r : rows) {
    width = std::max(width, r.algorithm.size());
    target = target || time_to_target_cell(r).has_value();
    bubble = bubble || !r.pipeline_bubble_fraction_per_stage.empty();
  }
  std::string out =
      fmt::format("{:<{}} {}{:>10} {:>14} {:>8} {:>12} {:>9} {:>12} {:>10} {}{:>6} {:>12}\n",
                  "algorithm", width, target ? fmt::format("{:>10} ", "to target") : "",
                  "iteration", "samples/s", "speedup", "samples/step", "idle", "exposed comm",
                  "waiting", bubble ? fmt::format("{:>10} ", "bubble") : "", "MFU", "peak memory");
  for (const auto& r : rows) {
    const auto& m = r.metrics;
    if (!r.error.empty()) {
      out += fmt::format("{:<{}} error: {}\n", r.algorithm, width, r.error);
      continue;
    }
    const bool too_big = !fits(r);
    out += fmt::format(
        "{:<{}} {}{:>10} {:>14.1f} {:>7.3f}x {:>12} {:>8.1f}% {:>12} {:>10} {}{:>6} {:>12}{}\n",
        r.algorithm, width,
        target ? fmt::format("{:>10} ", time_to_target_cell(r).value_or("-")) : "",
        hw::format_time(m.iteration_time_s), m.throughput_samples_s, r.speedup_vs_ddp,
        plain_count(m.samples / m.steps), 100 * m.idle_fraction_mean,
        hw::format_time(m.exposed_comm_s), hw::format_time(m.waiting_s),
        bubble ? fmt::format("{:>10} ", hw::format_time(m.pipeline_bubble_s)) : "", mfu_cell(r),
        hw::format_bytes(m.peak_memory_bytes),
        too_big ? fmt::format("  DOES NOT FIT ({} available per GPU)",
                              hw::format_bytes(r.memory_available_bytes))
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
    // The traces are kept only to be written: each is hundreds of MB on a large cluster (issue
    // 64.1: 550 MB at 1,024 GPUs, one per algorithm), freed once its row is made otherwise.
    std::vector<sim::SimulationResult> results;
    SummaryRow ddp_reference;
    const auto rows = simulate_rows(scenario, options.progress,
                                    scenario.output.traces ? &results : nullptr, &ddp_reference);
    ReportContext context;
    if (!ddp_reference.algorithm.empty())
      context.ddp_reference = ddp_reference;
    context.fit_advice = fit_advice(scenario, rows);

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
    write_file_atomically(dir + "/report.md", report_markdown(scenario, rows, context));
    if (options.print_table) {
      std::printf("%s\nnetwork: %s\n%s", scenario.name.c_str(), network_summary(scenario).c_str(),
                  format_table(rows).c_str());
      if (!context.fit_advice.empty())
        std::printf("nothing fits in the %s available per GPU. %s\n",
                    hw::format_bytes(scenario.cluster.gpu.memory_available()).c_str(),
                    context.fit_advice.c_str());
    }
    for (const auto& r : rows)
      if (r.extra.contains("time_to_target") && r.extra["time_to_target"]["curve"].is_null())
        std::fprintf(stderr,
                     "warning: no loss curve for %s in training.loss_curve: its time to "
                     "the target loss is unknown\n",
                     r.algorithm.c_str());
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
