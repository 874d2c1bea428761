#include "cli/report.h"

#include "hw/model.h"
#include "hw/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>
#include <map>

namespace overlapsim::cli {

void add_analysis(SummaryRow& row, const Analysis& a) {
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const auto& op : a.critical_path.top)
    top.push_back({{"name", op.name},
                   {"gpu", op.worker},
                   {"category", to_string(op.category)},
                   {"seconds", op.seconds},
                   {"op_seconds", op.op_seconds}});
  nlohmann::ordered_json by_category;
  for (int c = 0; c < kOpCategories; ++c)
    if (a.critical_path.by_category[static_cast<std::size_t>(c)] > 0)
      by_category[to_string(static_cast<OpCategory>(c))] =
          a.critical_path.by_category[static_cast<std::size_t>(c)];
  row.extra["critical_path"] = {{"length_s", a.critical_path.length_s},
                                {"busy_s", a.critical_path.busy_s},
                                {"by_category", by_category},
                                {"top", top}};
  row.extra["idle_breakdown"] = {{"compute", a.idle_mean.compute},
                                 {"exposed_comm", a.idle_mean.exposed_comm},
                                 {"waiting", a.idle_mean.waiting},
                                 {"idle_other", a.idle_mean.idle_other}};
  if (!row.pipeline_bubble_fraction_per_stage.empty()) // pipelined (cli/run_command.cpp)
    row.extra["idle_breakdown"]["pipeline_bubble"] = a.idle_mean.pipeline_bubble;
  row.extra["lower_bound_s"] = a.lower_bound_s;
}

namespace {

double field(const SummaryRow& r, const char* group, const char* key) {
  return r.extra.contains(group) && r.extra[group].contains(key) ? r.extra[group][key].get<double>()
                                                                 : 0;
}

std::string percent(double f) {
  return fmt::format("{:.1f}%", 100 * f);
}

} // namespace

std::string memory_available_text(const hw::GpuSpec& gpu) {
  return fmt::format("{} ({} less a {} reserve)", hw::format_bytes(gpu.memory_available()),
                     hw::format_bytes(gpu.memory_bytes), hw::format_bytes(gpu.memory_reserve()));
}

namespace {

double time_to_target(const SummaryRow& r) {
  const auto& t =
      r.extra.contains("time_to_target") ? r.extra["time_to_target"] : nlohmann::ordered_json();
  return t.is_object() && t["time_s"].is_number() ? t["time_s"].get<double>()
                                                  : std::numeric_limits<double>::infinity();
}

// Why a row with a target has no time to it: no curve, or a curve that stays above the target.
std::string why_no_time(const SummaryRow& r, double target) {
  const auto& t =
      r.extra.contains("time_to_target") ? r.extra["time_to_target"] : nlohmann::ordered_json();
  if (!t.is_object() || t["curve"].is_null())
    return fmt::format("no loss curve for {}", r.algorithm);
  if (t.contains("lowest_loss") && t["lowest_loss"].is_number())
    return fmt::format("{}'s curve never reaches {:.4g} (its lowest loss is {:.4g})", r.algorithm,
                       target, t["lowest_loss"].get<double>());
  return fmt::format("{}'s curve never reaches {:.4g}", r.algorithm, target);
}

// The algorithm label as every table of report.md shows it: marked when it does not fit.
std::string label(const SummaryRow& r) {
  return fits(r) ? r.algorithm : r.algorithm + " (does not fit)";
}

// "ddp (158 GB), acco (79.8 GB)": the rows left out of the ranking for their memory.
std::string unfit_list(const std::vector<const SummaryRow*>& unfit) {
  std::string out;
  for (const auto* r : unfit)
    out += fmt::format("{}{} ({})", out.empty() ? "" : ", ", r->algorithm,
                       hw::format_bytes(r->metrics.peak_memory_bytes));
  return out;
}

// The reference the headline compares against: DDP among the rows, else DDP simulated as the
// baseline (ReportContext::ddp_reference), else the first row (issue 62.10).
struct Baseline {
  const SummaryRow* row = nullptr;
  std::string name; // "DDP", or the first row's label
  std::string note; // how it was chosen, when DDP is not among the algorithms
};

Baseline baseline_of(const std::vector<SummaryRow>& ran, const ReportContext& context) {
  for (const auto& r : ran)
    if (r.algorithm == "ddp")
      return {&r, "DDP", ""};
  if (context.ddp_reference && context.ddp_reference->error.empty())
    return {&*context.ddp_reference, "DDP",
            " DDP is not among the algorithms run: it was simulated as the baseline, and is not "
            "ranked."};
  if (ran.empty())
    return {};
  return {
      &ran.front(), ran.front().algorithm,
      fmt::format(" Without a DDP run, {} (listed first) is the baseline.", ran.front().algorithm)};
}

// The headline: which of the algorithms that fit wins here, by time to the target loss when the
// scenario has one, else by samples per second, and why in the terms of the idle breakdown. Every
// claim is drawn from the rows' numbers (issue 62.1, 62.2, 62.6).
std::string verdict(const scenario::Scenario& s, const std::vector<SummaryRow>& ran,
                    const ReportContext& context) {
  if (ran.empty())
    return "No algorithm ran.\n";
  std::vector<const SummaryRow*> fit, unfit;
  for (const auto& r : ran)
    (fits(r) ? fit : unfit).push_back(&r);
  const auto& gpu = s.cluster.gpu;
  std::string out;
  if (fit.empty()) {
    const auto least = std::min_element(ran.begin(), ran.end(), [](const auto& a, const auto& b) {
      return a.metrics.peak_memory_bytes < b.metrics.peak_memory_bytes;
    });
    out += fmt::format("Nothing here fits: each {} has {} for training, and the least any of "
                       "these algorithms needs is {}'s {} per GPU.",
                       gpu.name, memory_available_text(gpu), least->algorithm,
                       hw::format_bytes(least->metrics.peak_memory_bytes));
    if (!context.fit_advice.empty())
      out += " " + context.fit_advice;
    return out + " The figures below are what each would do with enough memory.\n";
  }
  const std::string of_fit = unfit.empty() ? "" : " of the algorithms that fit";
  const std::string left_out =
      unfit.empty()
          ? std::string()
          : fmt::format(" Left out, as they need more than the {} available per GPU ({} less a {} "
                        "reserve): {}.",
                        hw::format_bytes(gpu.memory_available()),
                        hw::format_bytes(gpu.memory_bytes), hw::format_bytes(gpu.memory_reserve()),
                        unfit_list(unfit));

  if (s.training.target_loss) {
    const double target = *s.training.target_loss;
    std::vector<const SummaryRow*> reached, not_reached;
    for (const auto* r : fit)
      (std::isfinite(time_to_target(*r)) ? reached : not_reached).push_back(r);
    std::stable_sort(reached.begin(), reached.end(), [](const auto* a, const auto* b) {
      return time_to_target(*a) < time_to_target(*b);
    });
    if (reached.empty()) {
      out += fmt::format("None of the algorithms that fit reaches loss {:.4g} on its loss "
                         "curve, so none is the fastest to it.",
                         target);
    } else {
      const auto& best = *reached.front();
      const auto& t = best.extra["time_to_target"];
      out += fmt::format("{} reaches loss {:.4g} first{}: in {} ({} samples at {:.4g} samples "
                         "per second)",
                         best.algorithm, target, of_fit, hw::format_time(time_to_target(best)),
                         hw::format_count(t["samples"].get<double>()),
                         best.metrics.throughput_samples_s);
      if (reached.size() > 1)
        out += fmt::format(", {:.2f}x sooner than the next, {} ({})",
                           time_to_target(*reached[1]) / time_to_target(best),
                           reached[1]->algorithm, hw::format_time(time_to_target(*reached[1])));
      out += ".";
    }
    std::vector<std::string> no_curve, never;
    for (const auto* r : not_reached)
      (why_no_time(*r, target).starts_with("no loss curve") ? no_curve : never)
          .push_back(why_no_time(*r, target));
    for (const auto& n : never)
      out += fmt::format(" {}.", n);
    out += left_out + "\n";
    for (const auto& n : no_curve)
      out += fmt::format("\nWarning: {} in training.loss_curve: its time to loss {:.4g} is "
                         "unknown, and it is not ranked.\n",
                         n, target);
    return out;
  }

  const auto base = baseline_of(ran, context);
  const auto& best = **std::max_element(fit.begin(), fit.end(), [](const auto* a, const auto* b) {
    return a->metrics.throughput_samples_s < b->metrics.throughput_samples_s;
  });
  const double idle_base = 1 - field(*base.row, "idle_breakdown", "compute");
  const double idle_best = 1 - field(best, "idle_breakdown", "compute");
  if (&best == base.row) {
    out += fmt::format("{} is the fastest{} here: its GPUs compute {} of the time{}.", base.name,
                       of_fit, percent(1 - idle_base),
                       idle_base < 0.1 ? ", so there is little communication left to hide" : "");
    return out + base.note + left_out + "\n";
  }
  const double ratio = best.metrics.throughput_samples_s / base.row->metrics.throughput_samples_s;
  const std::string base_fits = fits(*base.row) ? "" : " (which does not fit)";
  if (ratio >= 1)
    out += fmt::format("{} is the fastest{} here: {:.2f}x the samples per second of {}{}.",
                       best.algorithm, of_fit, ratio, base.name, base_fits);
  else
    out +=
        fmt::format("{} is the fastest{} here, at {:.2f}x the samples per second of {}, which "
                    "{}.",
                    best.algorithm, of_fit.empty() ? " of the algorithms run" : of_fit, ratio,
                    base.name, fits(*base.row) ? "is faster" : "would be faster but does not fit");
  out += base.note;
  // "Almost never idle" only where the numbers say so: under 1% and under half the baseline's.
  const bool never_idle = idle_best < 0.01 && idle_best < 0.5 * idle_base;
  out += fmt::format(" {}'s GPUs sit idle {} of the time ({} with their own data on the wire, {} "
                     "waiting for slower peers); {}'s GPUs {}.",
                     base.name, percent(idle_base),
                     percent(field(*base.row, "idle_breakdown", "exposed_comm")),
                     percent(field(*base.row, "idle_breakdown", "waiting")), best.algorithm,
                     never_idle ? fmt::format("are almost never idle ({}): communication runs "
                                              "while they keep computing",
                                              percent(idle_best))
                                : fmt::format("are idle {}", percent(idle_best)));
  const double best_batch = best.metrics.samples / best.metrics.steps;
  const double base_batch = base.row->metrics.samples / base.row->metrics.steps;
  if (std::abs(best_batch - base_batch) > 1e-9 * base_batch)
    out += fmt::format(" Its steps are not {}'s: {:.4g} samples per optimizer step against "
                       "{:.4g}, so it takes {} per step against {}; compare convergence per "
                       "sample before reading the speedup as a win.",
                       base.name, best_batch, base_batch,
                       hw::format_time(best.metrics.iteration_time_s),
                       hw::format_time(base.row->metrics.iteration_time_s));
  if (best.metrics.peak_memory_bytes > base.row->metrics.peak_memory_bytes)
    out += fmt::format(" It needs {} per GPU against {}'s {}, of the {} available.",
                       hw::format_bytes(best.metrics.peak_memory_bytes), base.name,
                       hw::format_bytes(base.row->metrics.peak_memory_bytes),
                       hw::format_bytes(gpu.memory_available()));
  return out + left_out + "\n";
}

std::string update_of(const SummaryRow& r) {
  return r.extra.contains("update") ? r.extra["update"].get<std::string>() : "synchronous";
}

// The rows ranked: by time to the target loss when the scenario has one, else by samples per
// second, with what each step holds; those that do not fit come last, marked; and, without a
// target, what the speedups of algorithms whose steps are not DDP's leave out (issue 27.2).
std::string ranking(const scenario::Scenario& s, std::vector<SummaryRow> ran) {
  std::string out;
  const auto fit_first = [](const SummaryRow& a, const SummaryRow& b) {
    return fits(a) && !fits(b);
  };
  const auto memory = [&](const SummaryRow& r) {
    return fits(r) ? fmt::format("{} per GPU", hw::format_bytes(r.metrics.peak_memory_bytes))
                   : fmt::format("does not fit: {} per GPU of {} available",
                                 hw::format_bytes(r.metrics.peak_memory_bytes),
                                 hw::format_bytes(r.memory_available_bytes));
  };
  if (s.training.target_loss) {
    std::stable_sort(ran.begin(), ran.end(), [&](const SummaryRow& a, const SummaryRow& b) {
      return fit_first(a, b) || (fits(a) == fits(b) && time_to_target(a) < time_to_target(b));
    });
    out += fmt::format("Time to reach loss {:.4g} (from the loss curves: samples to the target "
                       "over samples per second), fastest first:\n\n",
                       *s.training.target_loss);
    for (const auto& r : ran) {
      const double t = time_to_target(r);
      out += fmt::format("- {}: {}{}\n", r.algorithm,
                         std::isfinite(t) ? hw::format_time(t)
                                          : why_no_time(r, *s.training.target_loss),
                         fits(r) ? "" : fmt::format(" ({})", memory(r)));
    }
    return out + "\n";
  }
  std::stable_sort(ran.begin(), ran.end(), [&](const SummaryRow& a, const SummaryRow& b) {
    return fit_first(a, b) ||
           (fits(a) == fits(b) && a.metrics.throughput_samples_s > b.metrics.throughput_samples_s);
  });
  out += "Ranked by samples per second, those that fit first:\n\n";
  for (const auto& r : ran)
    out += fmt::format("- {}: {:.2f}x DDP, {:.4g} samples a step, {}{}\n", r.algorithm,
                       r.speedup_vs_ddp, r.metrics.samples / r.metrics.steps, memory(r),
                       update_of(r) == "local"     ? " (local updates: see below)"
                       : update_of(r) == "delayed" ? " (delayed updates: see below)"
                                                   : "");
  std::vector<std::string> local, delayed;
  for (const auto& r : ran)
    if (update_of(r) == "local")
      local.push_back(r.algorithm);
    else if (update_of(r) == "delayed")
      delayed.push_back(r.algorithm);
  if (!local.empty() || !delayed.empty()) {
    out += "\nThese speedups count samples, not progress:";
    if (!local.empty())
      out += fmt::format(" {} update{} each worker's model on its own between synchronisations "
                         "(or from compressed exchanges), so a step does not apply the average "
                         "gradient of all its samples;",
                         fmt::join(local, ", "), local.size() == 1 ? "s" : "");
    if (!delayed.empty())
      out += fmt::format(" {} appl{} gradients one round late, from {};", fmt::join(delayed, ", "),
                         delayed.size() == 1 ? "ies" : "y",
                         s.parallelism.pipeline > 1
                             ? "one pass of the pipeline's schedule a round"
                             : "as many micro-batches as fit in the communication");
    out += " what a step is worth shows in time to a target loss (`training.target_loss` with "
           "`training.loss_curve`, or `overlapsim validate`'s measured curves).\n";
  }
  return out + "\n";
}

} // namespace

std::string network_summary(const scenario::Scenario& s) {
  // The network as the simulation assumed it (issue 25.3): a user sees what was taken for given.
  const auto link = [](const hw::LinkSpec& l) {
    return fmt::format("{} ({} per {}, {} latency)", l.name.empty() ? "custom" : l.name,
                       hw::format_bandwidth(l.bandwidth_Bps), "direction",
                       hw::format_time(l.latency_s));
  };
  const auto& c = s.cluster;
  std::string fabric = "; one non-blocking switch between nodes";
  if (c.nodes == 1)
    fabric.clear();
  else if (c.fabric.topology == hw::FabricSpec::Topology::fat_tree && c.sites.size() > 1)
    // A tree per site, its WAN gateway on a leaf port (hw/site_fat_trees.h).
    fabric = fmt::format(
        "; a fat tree per WAN site, its WAN gateway on a leaf port (site 0: {}), {} per switch "
        "hop",
        hw::describe(hw::build_fat_tree(
            c.fabric, static_cast<int>(c.sites.front().nodes.size()) + 1, c.nics_per_node)),
        hw::format_time(c.fabric.hop_latency_s));
  else if (c.fabric.topology == hw::FabricSpec::Topology::fat_tree)
    fabric = fmt::format("; {}, {} per switch hop",
                         hw::describe(hw::build_fat_tree(c.fabric, c.nodes, c.nics_per_node)),
                         hw::format_time(c.fabric.hop_latency_s));
  // A link a job does not use is not shown (issue 62.8: one node read "custom (0 B/s ...)").
  std::vector<std::string> parts;
  if (c.gpus_per_node > 1)
    parts.push_back(fmt::format("{} per GPU inside a node", link(c.intra_node)));
  if (c.nodes > 1)
    parts.push_back(fmt::format("{} per NIC between nodes, {} NIC{} per node ({} per node){}{}",
                                link(c.inter_node), c.nics_per_node,
                                c.nics_per_node == 1 ? "" : "s",
                                hw::format_bandwidth(c.nics_per_node * c.inter_node.bandwidth_Bps),
                                c.sites.empty() ? std::string()
                                                : fmt::format("; {} sites joined by a WAN: {}",
                                                              c.sites.size(), link(c.wan)),
                                c.sites.empty() ? fabric : std::string()));
  return parts.empty() ? std::string("none (one GPU)") : fmt::format("{}", fmt::join(parts, "; "));
}

namespace {

// "llama2-7b (6.738G parameters)", or, when the scenario changed a transformer preset's shape,
// says so: the preset's name alone would read as the preset (issue 62.8).
std::string model_text(const scenario::Scenario& s) {
  const double params = s.model.spec.total_params();
  if (const auto dims = hw::find_transformer_preset(s.model.preset)) {
    const double own =
        hw::transformer_model(s.model.preset, *dims, s.training.seq_len).total_params();
    if (std::abs(own - params) > 0.5)
      return fmt::format("{} with its shape overridden ({} parameters; the preset has {})",
                         s.model.spec.name, hw::format_count(params), hw::format_count(own));
  }
  return fmt::format("{} ({} parameters)", s.model.spec.name, hw::format_count(params));
}

} // namespace

std::string mfu_cell(const SummaryRow& r) {
  if (r.model_flops_per_token <= 0 || r.peak_flops_per_gpu <= 0 || r.workers <= 0)
    return "-";
  const double tokens_per_gpu = r.metrics.throughput_samples_s * r.seq_len / r.workers;
  return fmt::format("{:.1f}%",
                     100 * r.model_flops_per_token * tokens_per_gpu / r.peak_flops_per_gpu);
}

std::string report_markdown(const scenario::Scenario& s, const std::vector<SummaryRow>& rows,
                            const ReportContext& context) {
  std::string out = fmt::format(
      "# {}\n\n{} GPU{} ({} node{} x {} {}), model {}, "
      "micro-batch {} x {} tokens, {} steady-state steps. Simulated.\n\n",
      s.name, s.cluster.world_size(), s.cluster.world_size() == 1 ? "" : "s", s.cluster.nodes,
      s.cluster.nodes == 1 ? "" : "s", s.cluster.gpus_per_node, s.cluster.gpu.name, model_text(s),
      s.training.micro_batch, s.training.seq_len, s.training.steps);
  out += "Network: " + network_summary(s) + ".\n\n";
  for (const auto& w : s.warnings)
    out += fmt::format("Warning: {}\n\n", w);
  // Statistical rank classes (sim/slowest_of.h): the numbers are an approximation; say so first.
  for (const auto& r : rows)
    if (const auto it = r.extra.find("approximation"); it != r.extra.end() && it->is_string())
      out += fmt::format("Approximation ({}): {}.\n\n", r.algorithm, it->get<std::string>());
  std::vector<SummaryRow> ran; // the rows with metrics; failed algorithms are listed apart
  for (const auto& r : rows)
    if (r.error.empty())
      ran.push_back(r);
  // What a reader comes for first: which algorithm wins here, and why (issue 27.8).
  out += "## Which wins here\n\n" + verdict(s, ran, context) + "\n" + ranking(s, ran);
  out += "## All algorithms\n\n";
  // A pipeline-bubble column after `waiting for peers` when some row pipelines (issue 65.3).
  const bool bubble = std::any_of(ran.begin(), ran.end(), [](const SummaryRow& r) {
    return !r.pipeline_bubble_fraction_per_stage.empty();
  });
  out += fmt::format("| algorithm | iteration | speedup vs DDP | samples/step | computing | "
                     "exposed comm | waiting for peers |{} other idle | lower bound | "
                     "tokens/s per GPU | MFU | peak memory per GPU |\n"
                     "|---|---|---|---|---|---|---|{}---|---|---|---|---|\n",
                     bubble ? " pipeline bubble |" : "", bubble ? "---|" : "");
  for (const auto& r : ran)
    out += fmt::format(
        "| {} | {} | {:.2f}x | {:.4g} | {} | {} | {} |{} {} | {} | {:.4g} | {} | {} |\n", label(r),
        hw::format_time(r.metrics.iteration_time_s), r.speedup_vs_ddp,
        r.metrics.samples / r.metrics.steps, percent(field(r, "idle_breakdown", "compute")),
        fmt::format("{} ({}/step)", percent(field(r, "idle_breakdown", "exposed_comm")),
                    hw::format_time(r.metrics.exposed_comm_s)),
        fmt::format("{} ({}/step)", percent(field(r, "idle_breakdown", "waiting")),
                    hw::format_time(r.metrics.waiting_s)),
        bubble
            ? fmt::format(" {} ({}/step) |", percent(field(r, "idle_breakdown", "pipeline_bubble")),
                          hw::format_time(r.metrics.pipeline_bubble_s))
            : std::string(),
        percent(field(r, "idle_breakdown", "idle_other")),
        hw::format_time(r.extra.value("lower_bound_s", 0.0)),
        r.workers > 0 ? r.metrics.throughput_samples_s * r.seq_len / r.workers : 0.0, mfu_cell(r),
        fmt::format(
            "{}{}", hw::format_bytes(r.metrics.peak_memory_bytes),
            fits(r) ? ""
                    : fmt::format(" > {} available", hw::format_bytes(r.memory_available_bytes))));
  // Where the bytes go (issue 25.6): "how much crosses the WAN?"
  if (!ran.empty()) {
    out += fmt::format("\nBytes each GPU sends per step, by the link they cross:\n\n| algorithm | "
                       "in all | inside a node | between nodes |{}\n|---|---|---|---|{}\n",
                       s.cluster.sites.empty() ? "" : " over the WAN |",
                       s.cluster.sites.empty() ? "" : "---|");
    for (const auto& r : ran)
      out += fmt::format(
          "| {} | {} | {} | {} |{}\n", label(r), hw::format_bytes(r.metrics.comm_bytes_per_step),
          hw::format_bytes(r.metrics.intra_node_bytes_per_step),
          hw::format_bytes(r.metrics.inter_node_bytes_per_step),
          s.cluster.sites.empty()
              ? std::string()
              : fmt::format(" {} |", hw::format_bytes(r.metrics.wan_bytes_per_step)));
  }
  for (const auto& r : rows)
    if (!r.error.empty())
      out += fmt::format("\n**{} could not run**: {}\n", r.algorithm, r.error);
  for (const auto& r : ran)
    if (!fits(r))
      out += fmt::format("\n**{} does not fit**: it needs {} per GPU, the {} has {}.\n",
                         r.algorithm, hw::format_bytes(r.metrics.peak_memory_bytes),
                         s.cluster.gpu.name, memory_available_text(s.cluster.gpu));
  for (const auto& r : ran) {
    out += fmt::format("\n## {}\n\n", label(r));
    const auto& cp = r.extra["critical_path"];
    // An op longer than a step (DiLoCo's outer sync every H steps) is on this path only for its
    // share of the window, one average step: said beside each figure (issue 62.5).
    const double step = cp["length_s"].get<double>();
    const auto amortised = [&](const nlohmann::ordered_json& op) {
      return op.contains("op_seconds") && op["op_seconds"].get<double>() > 1.001 * step;
    };
    bool any_amortised = false;
    for (const auto& op : cp["top"])
      any_amortised = any_amortised || amortised(op);
    out += fmt::format("Critical path of the last steady-state step: {} of which {} is ops "
                       "(the rest is waiting between them){}.",
                       hw::format_time(step), hw::format_time(cp["busy_s"].get<double>()),
                       any_amortised ? "; the window is one average step, and ops longer than a "
                                       "step count only their share of it (amortised, below)"
                                     : "");
    std::string parts;
    for (const auto& [cat, sec] : cp["by_category"].items())
      if (sec.get<double>() >= 1e-6)
        parts += fmt::format("{}{} {}", parts.empty() ? "" : ", ", cat,
                             hw::format_time(sec.get<double>()));
    if (!parts.empty())
      out += fmt::format(" By kind: {}.", parts);
    out += "\n\nLargest contributions:\n\n";
    for (const auto& op : cp["top"])
      if (op["seconds"].get<double>() >= 1e-6) // sub-microsecond entries say nothing (27.9)
        out += fmt::format(
            "- {} on GPU {} ({}): {}{}\n", op["name"].get<std::string>(), op["gpu"].get<int>(),
            op["category"].get<std::string>(), hw::format_time(op["seconds"].get<double>()),
            amortised(op) ? fmt::format(" of this window, amortised: the op lasts {} in the "
                                        "trace, longer than a step",
                                        hw::format_time(op["op_seconds"].get<double>()))
                          : "");
  }
  return out;
}

bool row_fits(const nlohmann::ordered_json& row) {
  if (row.contains("fits") && row["fits"].is_boolean())
    return row["fits"].get<bool>();
  const auto number = [&](const char* key) {
    return row.contains(key) && row[key].is_number() ? row[key].get<double>() : 0.0;
  };
  const double capacity = number("gpu_memory_bytes");
  return capacity <= 0 || number("peak_memory_bytes") <= capacity;
}

namespace {

using Json = nlohmann::ordered_json;

double num(const Json& row, const char* key) {
  return row.contains(key) && row[key].is_number() ? row[key].get<double>()
                                                   : std::numeric_limits<double>::quiet_NaN();
}

// The memory a row may use: memory_available_bytes where the row has it, else the GPU's.
double capacity_of(const Json& row) {
  const double available = num(row, "memory_available_bytes");
  return std::isfinite(available) && available > 0 ? available : num(row, "gpu_memory_bytes");
}

std::string speedup_text(double s) {
  return std::isfinite(s) ? fmt::format("{:.2f}x", s) : std::string("n/a");
}

std::string memory_cell(const Json& row) {
  const double peak = num(row, "peak_memory_bytes");
  if (!std::isfinite(peak))
    return "n/a";
  if (row_fits(row))
    return fmt::format("{} (fits)", hw::format_bytes(peak));
  const double capacity = capacity_of(row);
  return std::isfinite(capacity) && capacity > 0 && peak > capacity
             ? fmt::format("**{} > {}: does not fit**", hw::format_bytes(peak),
                           hw::format_bytes(capacity))
             : fmt::format("**{}: does not fit**", hw::format_bytes(peak));
}

std::string value_of(const Json& row, const std::string& key) {
  return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : "";
}

} // namespace

std::string sweep_report_markdown(const Json& scenario, const Json& sweep,
                                  const std::vector<Json>& rows) {
  std::vector<std::string> keys;
  for (const auto& k : sweep.value("vary", Json::array()))
    keys.push_back(k.get<std::string>());
  const std::string name = scenario.value("name", std::string("sweep"));
  // Points and algorithms in the summary's order (point order, then the scenario's).
  std::vector<int> points;
  std::vector<std::string> algorithms;
  std::map<int, std::vector<const Json*>> by_point;
  for (const auto& r : rows) {
    const int p = r.value("point", 0);
    if (!by_point.contains(p))
      points.push_back(p);
    by_point[p].push_back(&r);
    const std::string a = r.value("algorithm", "");
    if (std::find(algorithms.begin(), algorithms.end(), a) == algorithms.end())
      algorithms.push_back(a);
  }
  const auto point_values = [&](int p) {
    std::string out;
    for (const auto& k : keys)
      out += fmt::format("{}{}={}", out.empty() ? "" : ", ", k,
                         by_point[p].empty() ? "" : value_of(*by_point[p].front(), k));
    return out;
  };
  std::string out = fmt::format("# {}: sweep\n\n", name);
  std::string varied;
  for (const auto& k : keys) {
    std::string values;
    if (sweep.contains("values") && sweep["values"].contains(k))
      for (const auto& v : sweep["values"][k])
        values += fmt::format("{}{}", values.empty() ? "" : ", ", v.get<std::string>());
    varied += fmt::format("{}`{}` over {}", varied.empty() ? "" : "; ", k, values);
  }
  out += fmt::format("{} points x {} algorithms, varying {}. Simulated.", points.size(),
                     algorithms.size(), varied);
  if (sweep.contains("overrides") && !sweep["overrides"].empty()) {
    std::string fixed;
    for (const auto& o : sweep["overrides"])
      fixed += fmt::format("{}`{}`", fixed.empty() ? "" : ", ", o.get<std::string>());
    out += fmt::format(" Fixed: {}.", fixed);
  }
  const std::string shard = sweep.contains("shard") && sweep["shard"].is_string()
                                ? sweep["shard"].get<std::string>()
                                : std::string();
  if (!shard.empty() && shard != "0/1" && shard != "merged")
    out += fmt::format(" Shard {}: {} of the sweep's {} points (`overlapsim merge` joins them).",
                       shard, points.size(), sweep.value("points", 0));
  out += " A row fits when its peak memory per GPU is at most the GPU's memory (its `fits` field "
         "where the summary has one).\n\n";

  // Per point: the fastest row that fits, and any faster one that does not.
  out += "## Fastest that fits, per point\n\nBy samples per second among the algorithms whose "
         "peak memory per GPU fits in the GPU's memory.\n\n";
  out += "| point |";
  for (const auto& k : keys)
    out += " " + k + " |";
  out += " winner | speedup vs DDP | samples/s | samples/step | memory per GPU | faster but does "
         "not fit |\n|---|";
  for (std::size_t i = 0; i < keys.size(); ++i)
    out += "---|";
  out += "---|---|---|---|---|---|\n";
  for (const int p : points) {
    const Json* best = nullptr;
    std::vector<const Json*> ran;
    for (const Json* r : by_point[p])
      if (!r->contains("error") && std::isfinite(num(*r, "throughput_samples_s")))
        ran.push_back(r);
    for (const Json* r : ran)
      if (row_fits(*r) &&
          (!best || num(*r, "throughput_samples_s") > num(*best, "throughput_samples_s")))
        best = r;
    std::string faster; // fastest first
    std::stable_sort(ran.begin(), ran.end(), [](const Json* a, const Json* b) {
      return num(*a, "throughput_samples_s") > num(*b, "throughput_samples_s");
    });
    for (const Json* r : ran)
      if (!row_fits(*r) &&
          (!best || num(*r, "throughput_samples_s") > num(*best, "throughput_samples_s")))
        faster += fmt::format("{}{} ({}, {})", faster.empty() ? "" : ", ",
                              r->value("algorithm", ""), speedup_text(num(*r, "speedup_vs_ddp")),
                              hw::format_bytes(num(*r, "peak_memory_bytes")));
    out += fmt::format("| {} | ", p);
    for (const auto& k : keys)
      out += (by_point[p].empty() ? "" : value_of(*by_point[p].front(), k)) + " | ";
    if (best)
      out += fmt::format("{} | {} | {:.4g} | {:.4g} | {} | {} |\n", best->value("algorithm", ""),
                         speedup_text(num(*best, "speedup_vs_ddp")),
                         num(*best, "throughput_samples_s"), num(*best, "samples_per_step"),
                         hw::format_bytes(num(*best, "peak_memory_bytes")),
                         faster.empty() ? "-" : faster);
    else
      out += fmt::format("none fits | | | | | {} |\n", faster.empty() ? "-" : faster);
  }

  // Per algorithm: where along the first varied key its speedup crosses 1, the other keys fixed.
  if (!keys.empty()) {
    const std::string& key = keys.front();
    out += fmt::format("\n## Where each algorithm overtakes DDP\n\nAlong `{}`, in the sweep's "
                       "order{}: the first point where its speedup over DDP rises above 1x, and "
                       "where it falls back.\n\n",
                       key, keys.size() > 1 ? ", for each value of the other varied keys" : "");
    // Groups: the other keys' values, in point order.
    std::vector<std::string> groups;
    std::map<std::string, std::vector<int>> group_points;
    for (const int p : points) {
      std::string g;
      for (std::size_t i = 1; i < keys.size(); ++i)
        g += fmt::format("{}{}={}", g.empty() ? "" : ", ", keys[i],
                         by_point[p].empty() ? "" : value_of(*by_point[p].front(), keys[i]));
      if (!group_points.contains(g))
        groups.push_back(g);
      group_points[g].push_back(p);
    }
    for (const auto& a : algorithms) {
      if (a == "ddp")
        continue;
      for (const auto& g : groups) {
        // (value, speedup) of the algorithm's rows with a speedup, in the sweep's order.
        std::vector<std::pair<std::string, double>> line;
        for (const int p : group_points[g])
          for (const Json* r : by_point[p])
            if (r->value("algorithm", "") == a && !r->contains("error") &&
                std::isfinite(num(*r, "speedup_vs_ddp")))
              line.emplace_back(
                  fmt::format("{}={}", key.substr(key.rfind('.') + 1), value_of(*r, key)),
                  num(*r, "speedup_vs_ddp"));
        out += fmt::format("- {}{}: ", a, g.empty() ? "" : fmt::format(" ({})", g));
        if (line.empty()) {
          out += "no point with a speedup (no DDP row, or every row failed)\n";
          continue;
        }
        std::vector<std::string> events;
        if (line.front().second > 1)
          events.push_back(fmt::format("faster than DDP from the first point, {} ({})",
                                       line.front().first, speedup_text(line.front().second)));
        for (std::size_t i = 1; i < line.size(); ++i) {
          const auto& [x0, s0] = line[i - 1];
          const auto& [x1, s1] = line[i];
          if (s0 <= 1 && s1 > 1)
            events.push_back(fmt::format("overtakes DDP between {} ({}) and {} ({})", x0,
                                         speedup_text(s0), x1, speedup_text(s1)));
          else if (s0 > 1 && s1 <= 1)
            events.push_back(fmt::format("falls back to or below DDP between {} ({}) and {} ({})",
                                         x0, speedup_text(s0), x1, speedup_text(s1)));
        }
        if (events.empty()) {
          const auto most = std::max_element(line.begin(), line.end(),
                                             [](auto& l, auto& r) { return l.second < r.second; });
          events.push_back(fmt::format("never faster than DDP here (at most {} at {})",
                                       speedup_text(most->second), most->first));
        }
        std::string joined;
        for (const auto& e : events)
          joined += fmt::format("{}{}", joined.empty() ? "" : "; ", e);
        out += joined + ".\n";
      }
    }
  }

  // A table with a row per point and a column per algorithm; `cell` writes a row's entry.
  const auto table = [&](const std::string& heading, const auto& cell) {
    out += heading + "\n\n| point |";
    for (const auto& a : algorithms)
      out += " " + a + " |";
    out += "\n|---|";
    for (std::size_t i = 0; i < algorithms.size(); ++i)
      out += "---|";
    out += "\n";
    for (const int p : points) {
      out += fmt::format("| {} ({}) |", p, point_values(p));
      for (const auto& a : algorithms) {
        const auto it = std::find_if(by_point[p].begin(), by_point[p].end(),
                                     [&](const Json* r) { return r->value("algorithm", "") == a; });
        // fmt, not "a" + string + "b": GCC 12 warns falsely (-Wrestrict) on that inlined insert.
        out += fmt::format(" {} |", it == by_point[p].end()    ? std::string()
                                    : (*it)->contains("error") ? std::string("failed")
                                                               : cell(**it));
      }
      out += "\n";
    }
  };
  table("\n## Memory per GPU\n\nPeak memory of the worst GPU, and whether it fits.", memory_cell);
  // Speedups and what a step holds, per point (the summary has every metric).
  table("\n## Speedup vs DDP (samples per step)", [](const Json& r) {
    return fmt::format("{} ({:.4g})", speedup_text(num(r, "speedup_vs_ddp")),
                       num(r, "samples_per_step"));
  });
  for (const auto& r : rows)
    if (r.contains("error"))
      out += fmt::format("\n**Point {}, {} could not run**: {}\n", r.value("point", 0),
                         r.value("algorithm", ""),
                         r["error"].is_string() ? r["error"].get<std::string>() : "");
  return out;
}

} // namespace overlapsim::cli
