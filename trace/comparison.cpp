#include "trace/comparison.h"

#include "hw/units.h"
#include "trace/op_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace overlapsim {

namespace {

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Forward and backward per worker per step on one side; nullopt when that side ran neither.
std::optional<double> forward_backward_per_step(const std::vector<OpComparison>& joined,
                                                std::optional<OpCost> OpComparison::*side) {
  double total = 0;
  bool any = false;
  for (const auto& c : joined) {
    const auto& cost = c.*side;
    if (cost && (cost->category == OpCategory::forward || cost->category == OpCategory::backward))
      total += cost->per_step_s, any = true;
  }
  return any ? std::optional(total) : std::nullopt;
}

} // namespace

double relative_error(double predicted, double measured) {
  if (measured == 0)
    return predicted == 0 ? 0.0 : std::nan("");
  return (predicted - measured) / measured;
}

Comparison compare_predicted_measured(const std::vector<SummaryRow>& predicted_rows,
                                      const std::vector<SummaryRow>& measured_rows,
                                      const std::vector<const Trace*>& predicted_traces,
                                      const std::vector<const Trace*>& measured_traces) {
  Comparison out;
  auto& rows = out.rows;
  constexpr double kWarnAbove = 0.15; // |iteration-time error| the validate loop aims under
  auto& warnings = out.warnings;
  auto& step_lines = out.step_lines;
  auto& csv = out.csv;
  csv = "algorithm,metric,predicted,measured,relative_error,absolute_error\n";
  auto& table = out.table;
  table = fmt::format("{:<10} {:<22} {:>12} {:>12} {:>9}\n", "algorithm", "metric", "predicted",
                      "measured", "error");
  // Op costs first: the metrics hold forward and backward per step, the ops table each op.
  std::vector<std::vector<OpComparison>> joined_ops(measured_rows.size());
  for (std::size_t i = 0; i < measured_rows.size() && i < predicted_traces.size(); ++i) {
    if (!predicted_rows[i].error.empty())
      continue;
    const auto& pm = predicted_rows[i].metrics;
    const auto& mm = measured_rows[i].metrics;
    joined_ops[i] = compare_op_costs(
        op_costs(*predicted_traces[i], pm.window_start_s, pm.window_end_s, pm.steps),
        op_costs(*measured_traces[i], mm.window_start_s, mm.window_end_s, mm.steps));
  }
  std::vector<double> compute_errors; // forward + backward per step, per algorithm that ran them
  for (std::size_t i = 0; i < measured_rows.size(); ++i) {
    const auto& m = measured_rows[i].metrics;
    const auto& p = predicted_rows[i].metrics;
    const auto fb_predicted = forward_backward_per_step(joined_ops[i], &OpComparison::predicted);
    const auto fb_measured = forward_backward_per_step(joined_ops[i], &OpComparison::measured);
    const std::pair<const char*, std::pair<double, double>> metrics[] = {
        {"iteration_time_s", {p.iteration_time_s, m.iteration_time_s}},
        {"throughput_samples_s", {p.throughput_samples_s, m.throughput_samples_s}},
        {"idle_fraction_mean", {p.idle_fraction_mean, m.idle_fraction_mean}},
        {"exposed_comm_s", {p.exposed_comm_s, m.exposed_comm_s}},
        // What a speedup is worth: how many samples (micro-batches x micro-batch x workers) a
        // step holds, which delayed-update algorithms vary.
        {"samples_per_step",
         {p.steps > 0 ? p.samples / p.steps : 0.0, m.steps > 0 ? m.samples / m.steps : 0.0}},
        {"speedup_vs_ddp", {predicted_rows[i].speedup_vs_ddp, measured_rows[i].speedup_vs_ddp}},
        // Compute per worker per step: the profile's price against what the run took. Off by the
        // same sign in every algorithm, the machine's speed changed between profile and run.
        {"forward_backward_s",
         {fb_predicted.value_or(std::nan("")), fb_measured.value_or(std::nan(""))}},
    };
    for (const auto& [metric, values] : metrics) {
      if (std::string_view(metric) == "forward_backward_s" && !(fb_predicted && fb_measured))
        continue; // no op table (a failed prediction) or no compute ops
      // Without a measured DDP the run has no reference (its speedup reads 0): the simulator's
      // speedup against its own DDP has nothing to be compared with.
      if (std::string_view(metric) == "speedup_vs_ddp" && !(values.second > 0))
        continue;
      const double err = relative_error(values.first, values.second);
      nlohmann::ordered_json row;
      row["algorithm"] = measured_rows[i].algorithm;
      row["metric"] = metric;
      row["predicted"] = values.first;
      row["measured"] = values.second;
      row["relative_error"] = number_or_null(err);
      // Near-zero measured values (idle, exposed communication of overlapping algorithms) make
      // relative errors meaningless; the difference says how far off the prediction is.
      row["absolute_error"] = values.first - values.second;
      if (std::string_view(metric) == "iteration_time_s" && !m.step_times_s.empty()) {
        // How much the measured steps varied: one stall in ten steps moves the mean, not the
        // median, and the simulator predicts neither.
        auto steps = m.step_times_s;
        std::sort(steps.begin(), steps.end());
        const double median = steps.size() % 2
                                  ? steps[steps.size() / 2]
                                  : (steps[steps.size() / 2 - 1] + steps[steps.size() / 2]) / 2;
        row["measured_step_s"] = {
            {"min", steps.front()}, {"median", median}, {"max", steps.back()}};
        row["measured_step_spread"] =
            number_or_null(median > 0 ? (steps.back() - steps.front()) / median : std::nan(""));
        step_lines += fmt::format(
            "{:<10} measured steps {:.4g} / {:.4g} / {:.4g} ms (min / median / max)\n",
            measured_rows[i].algorithm, 1e3 * steps.front(), 1e3 * median, 1e3 * steps.back());
      }
      if (std::string_view(metric) == "iteration_time_s" && std::isfinite(err) &&
          std::abs(err) > kWarnAbove) {
        row["warning"] = fmt::format("predicted iteration time is {:+.1f}% off the measured one "
                                     "(more than {:.0f}%)",
                                     100 * err, 100 * kWarnAbove);
        warnings.push_back(
            fmt::format("{}: {}", measured_rows[i].algorithm, row["warning"].get<std::string>()));
      }
      if (std::string_view(metric) == "forward_backward_s" && std::isfinite(err))
        compute_errors.push_back(err);
      rows.push_back(row);
      csv += fmt::format("{},{},{:.9g},{:.9g},{},{:.9g}\n", measured_rows[i].algorithm, metric,
                         values.first, values.second,
                         std::isfinite(err) ? fmt::format("{:.6f}", err) : std::string(),
                         values.first - values.second);
      table += fmt::format("{:<10} {:<22} {:>12.6g} {:>12.6g} {:>8}\n", measured_rows[i].algorithm,
                           metric, values.first, values.second,
                           std::isfinite(err) ? fmt::format("{:+.1f}%", 100 * err) : "n/a");
    }
  }
  // Every algorithm's compute off the same way, past what validate aims under: not the model's
  // algorithms but the machine (a VM whose neighbours slowed it 35-44% between the profile and
  // the runs, invisible in its load).
  if (compute_errors.size() >= 2) {
    const auto [lo, hi] = std::minmax_element(compute_errors.begin(), compute_errors.end());
    const double nearest = *lo > 0 ? *lo : *hi < 0 ? *hi : 0.0;
    if (std::abs(nearest) > kWarnAbove) {
      const std::string range =
          fmt::format("{:+.0f}%", 100 * *lo) == fmt::format("{:+.0f}%", 100 * *hi)
              ? fmt::format("{:+.0f}%", 100 * *lo)
              : fmt::format("{:+.0f}% to {:+.0f}%", 100 * *lo, 100 * *hi);
      warnings.push_back(fmt::format(
          "forward and backward ran {} in every algorithm's run than the profile priced them "
          "(priced {}): the machine's speed changed between the profile and the runs (re-run "
          "validate, or profile and run on a quieter machine)",
          nearest < 0 ? "slower" : "faster", range));
    }
  }
  // Per op (issue 30.4): where an iteration-time error comes from.
  auto& ops = out.ops;
  auto& op_table = out.op_table;
  op_table = fmt::format("{:<10} {:<26} {:>11} {:>11} {:>8} {:>7} {:>11} {:>11} {:>8}\n",
                         "algorithm", "op (typical, per step)", "predicted", "measured", "error",
                         "noise", "predicted", "measured", "error");
  for (std::size_t i = 0; i < measured_rows.size() && i < predicted_traces.size(); ++i) {
    if (!predicted_rows[i].error.empty())
      continue;
    const auto& joined = joined_ops[i];
    const auto& algorithm = measured_rows[i].algorithm;
    // A kind both streams run (CDP's optimizer steps: a stage's on the compute stream, the
    // neighbour's on the communication stream) is two ops: the table and the csv name the stream.
    std::set<std::string> compute_kinds, both_streams;
    for (const auto& c : joined)
      if (c.stream == StreamKind::compute)
        compute_kinds.insert(c.op);
    for (const auto& c : joined)
      if (c.stream == StreamKind::comm && compute_kinds.contains(c.op))
        both_streams.insert(c.op);
    for (const auto& c : joined) {
      const auto side = [](const std::optional<OpCost>& cost) {
        return cost ? nlohmann::ordered_json{{"count_per_step", cost->count_per_step},
                                             {"median_s", cost->median_s},
                                             {"per_step_s", cost->per_step_s},
                                             {"waiting_per_step_s", cost->waiting_per_step_s},
                                             {"halves_spread", number_or_null(cost->halves_spread)}}
                    : nlohmann::ordered_json(nullptr);
      };
      const bool both = c.predicted && c.measured;
      const double median_err =
          both ? relative_error(c.predicted->median_s, c.measured->median_s) : std::nan("");
      const double step_err =
          both ? relative_error(c.predicted->per_step_s, c.measured->per_step_s) : std::nan("");
      nlohmann::ordered_json op;
      op["algorithm"] = algorithm;
      op["op"] = c.op;
      op["stream"] = c.stream == StreamKind::comm ? "comm" : "compute";
      op["predicted"] = side(c.predicted);
      op["measured"] = side(c.measured);
      op["median_error"] = number_or_null(median_err);
      op["per_step_error"] = number_or_null(step_err);
      ops.push_back(op);
      // comparison.csv keeps its columns: an op's two numbers are two metrics.
      std::string name = c.op;
      if (both_streams.contains(c.op))
        name += c.stream == StreamKind::comm ? " (comm)" : " (compute)";
      std::replace(name.begin(), name.end(), ',', ';');
      const auto csv_row = [&](const char* what, double OpCost::*field, double err) {
        if (!both)
          return;
        csv += fmt::format("{},op:{}:{},{:.9g},{:.9g},{},{:.9g}\n", algorithm, name, what,
                           (*c.predicted).*field, (*c.measured).*field,
                           std::isfinite(err) ? fmt::format("{:.6f}", err) : std::string(),
                           (*c.predicted).*field - (*c.measured).*field);
      };
      csv_row("median_s", &OpCost::median_s, median_err);
      csv_row("per_step_s", &OpCost::per_step_s, step_err);
      const auto time = [](const std::optional<OpCost>& cost, double OpCost::*field) {
        return cost ? hw::format_time((*cost).*field) : std::string("-");
      };
      const auto pct = [](double e) {
        return std::isfinite(e) ? fmt::format("{:+.1f}%", 100 * e) : std::string("n/a");
      };
      // The measured typical op's own noise (its halves' spread): an error inside it is noise.
      const std::string noise = c.measured && std::isfinite(c.measured->halves_spread)
                                    ? fmt::format("{:.1f}%", 100 * c.measured->halves_spread)
                                    : std::string("n/a");
      op_table += fmt::format("{:<10} {:<26} {:>11} {:>11} {:>8} {:>7} {:>11} {:>11} {:>8}\n",
                              algorithm, name, time(c.predicted, &OpCost::median_s),
                              time(c.measured, &OpCost::median_s), pct(median_err), noise,
                              time(c.predicted, &OpCost::per_step_s),
                              time(c.measured, &OpCost::per_step_s), pct(step_err));
    }
  }

  return out;
}

} // namespace overlapsim
