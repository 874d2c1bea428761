#include "cli/report.h"

#include "hw/units.h"

#include <algorithm>
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
        out += " " +
               (it == by_point[p].end()    ? std::string()
                : (*it)->contains("error") ? std::string("failed")
                                           : cell(**it)) +
               " |";
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
