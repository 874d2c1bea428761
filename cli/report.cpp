#include "cli/report.h"

#include "hw/units.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <limits>

namespace overlapsim::cli {

void add_analysis(SummaryRow& row, const Analysis& a) {
  nlohmann::ordered_json top = nlohmann::ordered_json::array();
  for (const auto& op : a.critical_path.top)
    top.push_back({{"name", op.name},
                   {"gpu", op.worker},
                   {"category", to_string(op.category)},
                   {"seconds", op.seconds}});
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

namespace {

// Why the fastest algorithm beats DDP, or that DDP wins, in the terms of the idle breakdown.
std::string verdict(const std::vector<SummaryRow>& ran) {
  const auto ddp = std::find_if(ran.begin(), ran.end(),
                                [](const SummaryRow& r) { return r.algorithm == "ddp"; });
  const auto best =
      std::max_element(ran.begin(), ran.end(), [](const SummaryRow& a, const SummaryRow& b) {
        return a.metrics.throughput_samples_s < b.metrics.throughput_samples_s;
      });
  std::string out;
  if (ddp != ran.end() && best != ran.end() && best != ddp) {
    const double idle_ddp = 1 - field(*ddp, "idle_breakdown", "compute");
    const double idle_best = 1 - field(*best, "idle_breakdown", "compute");
    out += fmt::format(
        "{} processes {:.2f}x the samples per second of DDP here. DDP's GPUs sit idle {} of the "
        "time "
        "({} with their own data on the wire, {} waiting for slower peers); {}'s GPUs {}.",
        best->algorithm, best->speedup_vs_ddp, percent(idle_ddp),
        percent(field(*ddp, "idle_breakdown", "exposed_comm")),
        percent(field(*ddp, "idle_breakdown", "waiting")), best->algorithm,
        idle_best < 0.01 ? "are almost never idle: communication runs while they keep computing"
                         : fmt::format("are idle {}", percent(idle_best)));
    const double best_batch = best->metrics.samples / best->metrics.steps;
    const double ddp_batch = ddp->metrics.samples / ddp->metrics.steps;
    if (std::abs(best_batch - ddp_batch) > 1e-9 * ddp_batch)
      out += fmt::format(" Its steps are not DDP's: {:.4g} samples per optimizer step against "
                         "DDP's {:.4g}, so it takes {} per step against DDP's {}; compare "
                         "convergence per sample before reading the speedup as a win.",
                         best_batch, ddp_batch, hw::format_time(best->metrics.iteration_time_s),
                         hw::format_time(ddp->metrics.iteration_time_s));
    if (best->metrics.peak_memory_bytes > ddp->metrics.peak_memory_bytes)
      out += fmt::format(" It needs {} per GPU against DDP's {}.",
                         hw::format_bytes(best->metrics.peak_memory_bytes),
                         hw::format_bytes(ddp->metrics.peak_memory_bytes));
    out += "\n";
  } else if (ddp != ran.end()) {
    out +=
        fmt::format("DDP is the fastest of these algorithms here: its GPUs compute {} of the time, "
                    "so there is little communication left to hide.\n",
                    percent(field(*ddp, "idle_breakdown", "compute")));
  } else {
    out += "Add ddp to the algorithms for a comparison.\n";
  }
  return out;
}

std::string update_of(const SummaryRow& r) {
  return r.extra.contains("update") ? r.extra["update"].get<std::string>() : "synchronous";
}

// The rows ranked: by time to the target loss when the scenario has one, else by samples per
// second, with what each step holds; and, without a target, what the speedups of algorithms whose
// steps are not DDP's leave out (issue 27.2).
std::string ranking(const scenario::Scenario& s, std::vector<SummaryRow> ran) {
  std::string out;
  const auto time_to_target = [](const SummaryRow& r) {
    const auto& t =
        r.extra.contains("time_to_target") ? r.extra["time_to_target"] : nlohmann::ordered_json();
    return t.is_object() && t["time_s"].is_number() ? t["time_s"].get<double>()
                                                    : std::numeric_limits<double>::infinity();
  };
  if (s.training.target_loss) {
    std::stable_sort(ran.begin(), ran.end(), [&](const SummaryRow& a, const SummaryRow& b) {
      return time_to_target(a) < time_to_target(b);
    });
    out += fmt::format("Time to reach loss {:.4g} (from the loss curves: samples to the target "
                       "over samples per second), fastest first:\n\n",
                       *s.training.target_loss);
    for (const auto& r : ran) {
      const double t = time_to_target(r);
      out += fmt::format("- {}: {}\n", r.algorithm,
                         std::isfinite(t) ? hw::format_time(t)
                                          : std::string("never reached (or no loss curve)"));
    }
    return out + "\n";
  }
  std::stable_sort(ran.begin(), ran.end(), [](const SummaryRow& a, const SummaryRow& b) {
    return a.metrics.throughput_samples_s > b.metrics.throughput_samples_s;
  });
  out += "Ranked by samples per second:\n\n";
  for (const auto& r : ran)
    out += fmt::format("- {}: {:.2f}x DDP, {:.4g} samples a step, {} per GPU{}\n", r.algorithm,
                       r.speedup_vs_ddp, r.metrics.samples / r.metrics.steps,
                       hw::format_bytes(r.metrics.peak_memory_bytes),
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
      out += fmt::format(" {} appl{} gradients one round late, from as many micro-batches as fit "
                         "in the communication;",
                         fmt::join(delayed, ", "), delayed.size() == 1 ? "ies" : "y");
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
  else if (c.fabric.topology == hw::FabricSpec::Topology::fat_tree)
    fabric = fmt::format("; {}, {} per switch hop",
                         hw::describe(hw::build_fat_tree(c.fabric, c.nodes, c.nics_per_node)),
                         hw::format_time(c.fabric.hop_latency_s));
  return fmt::format(
      "{} per GPU inside a node; {} per NIC between nodes, {} NIC{} per node ({} per node){}{}",
      link(c.intra_node), link(c.inter_node), c.nics_per_node, c.nics_per_node == 1 ? "" : "s",
      hw::format_bandwidth(c.nics_per_node * c.inter_node.bandwidth_Bps),
      c.sites.empty() ? std::string()
                      : fmt::format("; {} sites joined by a WAN: {}", c.sites.size(), link(c.wan)),
      c.sites.empty() ? fabric : std::string());
}

std::string report_markdown(const scenario::Scenario& s, const std::vector<SummaryRow>& rows) {
  std::string out = fmt::format("# {}\n\n{} GPUs ({} nodes x {} {}), model {} ({} parameters), "
                                "micro-batch {} x {} tokens, {} steady-state steps. Simulated.\n\n",
                                s.name, s.cluster.world_size(), s.cluster.nodes,
                                s.cluster.gpus_per_node, s.cluster.gpu.name, s.model.spec.name,
                                hw::format_count(s.model.spec.total_params()),
                                s.training.micro_batch, s.training.seq_len, s.training.steps);
  out += "Network: " + network_summary(s) + ".\n\n";
  for (const auto& w : s.warnings)
    out += fmt::format("Warning: {}\n\n", w);
  std::vector<SummaryRow> ran; // the rows with metrics; failed algorithms are listed apart
  for (const auto& r : rows)
    if (r.error.empty())
      ran.push_back(r);
  // What a reader comes for first: which algorithm wins here, and why (issue 27.8).
  out += "## Which wins here\n\n" + verdict(ran) + "\n" + ranking(s, ran);
  out += "## All algorithms\n\n";
  out += "| algorithm | iteration | speedup vs DDP | samples/step | computing | exposed comm | "
         "waiting for peers | other idle | lower bound |\n|---|---|---|---|---|---|---|---|---|\n";
  for (const auto& r : ran)
    out += fmt::format(
        "| {} | {} | {:.2f}x | {:.4g} | {} | {} | {} | {} | {} |\n", r.algorithm,
        hw::format_time(r.metrics.iteration_time_s), r.speedup_vs_ddp,
        r.metrics.samples / r.metrics.steps, percent(field(r, "idle_breakdown", "compute")),
        fmt::format("{} ({}/step)", percent(field(r, "idle_breakdown", "exposed_comm")),
                    hw::format_time(r.metrics.exposed_comm_s)),
        fmt::format("{} ({}/step)", percent(field(r, "idle_breakdown", "waiting")),
                    hw::format_time(r.metrics.waiting_s)),
        percent(field(r, "idle_breakdown", "idle_other")),
        hw::format_time(r.extra.value("lower_bound_s", 0.0)));
  // Where the bytes go (issue 25.6): "how much crosses the WAN?"
  if (!ran.empty()) {
    out += fmt::format("\nBytes each GPU sends per step, by the link they cross:\n\n| algorithm | "
                       "in all | inside a node | between nodes |{}\n|---|---|---|---|{}\n",
                       s.cluster.sites.empty() ? "" : " over the WAN |",
                       s.cluster.sites.empty() ? "" : "---|");
    for (const auto& r : ran)
      out += fmt::format(
          "| {} | {} | {} | {} |{}\n", r.algorithm, hw::format_bytes(r.metrics.comm_bytes_per_step),
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
    if (r.gpu_memory_bytes > 0 && r.metrics.peak_memory_bytes > r.gpu_memory_bytes)
      out += fmt::format("\n**{} does not fit**: it needs {} per GPU, the {} has {}.\n",
                         r.algorithm, hw::format_bytes(r.metrics.peak_memory_bytes),
                         s.cluster.gpu.name, hw::format_bytes(r.gpu_memory_bytes));
  for (const auto& r : ran) {
    out += fmt::format("\n## {}\n\n", r.algorithm);
    const auto& cp = r.extra["critical_path"];
    out += fmt::format("Critical path of the last steady-state step: {} of which {} is ops "
                       "(the rest is waiting between them).",
                       hw::format_time(cp["length_s"].get<double>()),
                       hw::format_time(cp["busy_s"].get<double>()));
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
        out += fmt::format("- {} on GPU {} ({}): {}\n", op["name"].get<std::string>(),
                           op["gpu"].get<int>(), op["category"].get<std::string>(),
                           hw::format_time(op["seconds"].get<double>()));
  }
  return out;
}

} // namespace overlapsim::cli
