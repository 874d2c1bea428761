#include "trace/comparison.h"

#include "hw/units.h"
#include "trace/op_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>
#include <optional>
#include <set>
#include <string_view>
#include <utility>

namespace overlapsim {

namespace {

nlohmann::json number_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

// Forward and backward per worker per step in one side's costs; nullopt when it ran neither.
std::optional<double> forward_backward_per_step(const std::vector<OpCost>& costs) {
  double total = 0;
  bool any = false;
  for (const auto& cost : costs)
    if (cost.category == OpCategory::forward || cost.category == OpCategory::backward)
      total += cost.per_step_s, any = true;
  return any ? std::optional(total) : std::nullopt;
}

nlohmann::ordered_json values_json(const Repeated& r) {
  auto out = nlohmann::ordered_json::array();
  for (const double v : r.values)
    out.push_back(std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr));
  return out;
}

std::string percent(double e) {
  return std::isfinite(e) ? fmt::format("{:+.1f}%", 100 * e) : std::string("n/a");
}

// The measured range about its median, "-9.1%..+9.1%", or as it is where the median is 0
// ("0..0.002"); empty with one repeat (no range).
std::string noise_range(const Repeated& r) {
  if (r.values.size() < 2 || !std::isfinite(r.median))
    return {};
  if (r.median == 0)
    return fmt::format("{:.3g}..{:.3g}", r.min, r.max);
  return fmt::format("{:+.1f}%..{:+.1f}%", 100 * (r.min - r.median) / std::abs(r.median),
                     100 * (r.max - r.median) / std::abs(r.median));
}

// What the printed tables say beside an error: "within noise -9.1%..+9.1%" where the prediction
// is inside the measured range, "noise -9.1%..+9.1%" where it is not; nothing with one repeat.
std::string noise_note(const Repeated& r, bool within) {
  const std::string range = noise_range(r);
  if (range.empty())
    return {};
  return fmt::format("{}noise {}", within ? "within " : "", range);
}

// Rows of a printed table end at their last character: a row without a note has none.
std::string without_trailing_spaces(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\n')
      while (!out.empty() && out.back() == ' ')
        out.pop_back();
    out += c;
  }
  return out;
}

std::string csv_number(double v) {
  return std::isfinite(v) ? fmt::format("{:.9g}", v) : std::string();
}

// An op kind's measured cost over the repeats: each field the median over the repeats that ran
// it, with its typical op's and its time per step's repeats beside.
struct RepeatedOp {
  OpCost cost;
  Repeated median_s, per_step_s;
};

std::vector<RepeatedOp> merge_repeats(const std::vector<std::vector<OpCost>>& repeats) {
  std::vector<RepeatedOp> out;
  std::vector<std::vector<const OpCost*>> members;
  for (const auto& costs : repeats)
    for (const auto& c : costs) {
      const auto it = std::find_if(out.begin(), out.end(), [&](const RepeatedOp& r) {
        return r.cost.op == c.op && r.cost.stream == c.stream;
      });
      if (it == out.end()) {
        out.push_back(RepeatedOp{c, {}, {}});
        members.push_back({&c});
      } else {
        members[static_cast<std::size_t>(it - out.begin())].push_back(&c);
      }
    }
  for (std::size_t k = 0; k < out.size(); ++k) {
    const auto over = [&](double OpCost::*field) {
      std::vector<double> v;
      for (const auto* m : members[k])
        v.push_back(m->*field);
      return repeated(std::move(v));
    };
    auto& r = out[k];
    r.median_s = over(&OpCost::median_s);
    r.per_step_s = over(&OpCost::per_step_s);
    r.cost.median_s = r.median_s.median;
    r.cost.per_step_s = r.per_step_s.median;
    r.cost.count_per_step = over(&OpCost::count_per_step).median;
    r.cost.waiting_per_step_s = over(&OpCost::waiting_per_step_s).median;
    r.cost.halves_spread = over(&OpCost::halves_spread).median;
  }
  return out;
}

} // namespace

double Repeated::spread() const {
  if (!std::isfinite(median) || median == 0)
    return std::nan("");
  return (max - min) / std::abs(median);
}

Repeated repeated(std::vector<double> values) {
  Repeated r;
  r.values = std::move(values);
  std::vector<double> finite;
  for (const double v : r.values)
    if (std::isfinite(v))
      finite.push_back(v);
  if (finite.empty()) {
    r.median = r.min = r.max = std::nan("");
    return r;
  }
  std::sort(finite.begin(), finite.end());
  const std::size_t n = finite.size();
  r.median = n % 2 ? finite[n / 2] : (finite[n / 2 - 1] + finite[n / 2]) / 2;
  r.min = finite.front();
  r.max = finite.back();
  return r;
}

bool within_noise(double predicted, const Repeated& measured) {
  return std::isfinite(predicted) && std::isfinite(measured.min) && predicted >= measured.min &&
         predicted <= measured.max;
}

std::size_t median_repeat(const std::vector<SummaryRow>& repeats) {
  std::vector<double> times;
  for (const auto& r : repeats)
    times.push_back(r.metrics.iteration_time_s);
  const double median = repeated(times).median;
  std::size_t best = 0;
  for (std::size_t k = 1; k < times.size(); ++k)
    if (std::abs(times[k] - median) < std::abs(times[best] - median) ||
        (!std::isfinite(times[best]) && std::isfinite(times[k])))
      best = k;
  return best;
}

double relative_error(double predicted, double measured) {
  if (measured == 0)
    return predicted == 0 ? 0.0 : std::nan("");
  return (predicted - measured) / measured;
}

Comparison compare_predicted_measured(const std::vector<SummaryRow>& predicted_rows,
                                      const std::vector<SummaryRow>& measured_rows,
                                      const std::vector<const Trace*>& predicted_traces,
                                      const std::vector<const Trace*>& measured_traces) {
  std::vector<std::vector<SummaryRow>> rows;
  std::vector<std::vector<const Trace*>> traces;
  for (const auto& r : measured_rows)
    rows.push_back({r});
  for (const auto* t : measured_traces)
    traces.push_back({t});
  return compare_predicted_measured(predicted_rows, rows, predicted_traces, traces);
}

Comparison
compare_predicted_measured(const std::vector<SummaryRow>& predicted_rows,
                           const std::vector<std::vector<SummaryRow>>& measured_rows,
                           const std::vector<const Trace*>& predicted_traces,
                           const std::vector<std::vector<const Trace*>>& measured_traces) {
  Comparison out;
  auto& rows = out.rows;
  constexpr double kWarnAbove = 0.15; // |iteration-time error| the validate loop aims under
  auto& warnings = out.warnings;
  auto& step_lines = out.step_lines;
  auto& csv = out.csv;
  // Columns after absolute_error were added with the repeats (issue 62.11): readers of the first
  // six keep working.
  csv = "algorithm,metric,predicted,measured,relative_error,absolute_error,measured_min,"
        "measured_max,within_noise\n";
  auto& table = out.table;
  table = fmt::format("{:<10} {:<22} {:>12} {:>12} {:>9}  {}\n", "algorithm", "metric", "predicted",
                      "measured", "error", "noise (repeats' range)");
  const std::size_t algorithms = std::min(measured_rows.size(), predicted_rows.size());
  // Op costs first: the metrics hold forward and backward per step, the ops table each op.
  std::vector<std::vector<OpComparison>> joined_ops(algorithms);
  std::vector<std::vector<RepeatedOp>> repeated_ops(algorithms);
  std::vector<std::optional<double>> fb_predicted(algorithms);
  std::vector<std::vector<std::optional<double>>> fb_measured(algorithms); // per repeat
  for (std::size_t i = 0;
       i < algorithms && i < predicted_traces.size() && i < measured_traces.size(); ++i) {
    if (!predicted_rows[i].error.empty())
      continue;
    const auto& pm = predicted_rows[i].metrics;
    const auto predicted_costs =
        op_costs(*predicted_traces[i], pm.window_start_s, pm.window_end_s, pm.steps);
    std::vector<std::vector<OpCost>> measured_costs;
    for (std::size_t r = 0; r < measured_rows[i].size() && r < measured_traces[i].size(); ++r) {
      const auto& mm = measured_rows[i][r].metrics;
      measured_costs.push_back(
          op_costs(*measured_traces[i][r], mm.window_start_s, mm.window_end_s, mm.steps));
      fb_measured[i].push_back(forward_backward_per_step(measured_costs.back()));
    }
    repeated_ops[i] = merge_repeats(measured_costs);
    std::vector<OpCost> merged;
    for (const auto& r : repeated_ops[i])
      merged.push_back(r.cost);
    joined_ops[i] = compare_op_costs(predicted_costs, merged);
    fb_predicted[i] = forward_backward_per_step(predicted_costs);
  }
  constexpr const char* kMetrics[] = {
      "iteration_time_s", "throughput_samples_s", "idle_fraction_mean", "exposed_comm_s",
      // What a speedup is worth: how many samples (micro-batches x micro-batch x workers) a
      // step holds, which delayed-update algorithms vary.
      "samples_per_step", "speedup_vs_ddp",
      // Compute per worker per step: the profile's price against what the run took. Off by the
      // same sign in every algorithm, the machine's speed changed between profile and run.
      "forward_backward_s"};
  constexpr std::size_t kMetricCount = std::size(kMetrics);
  const auto metric_values = [](const SummaryRow& row, std::optional<double> fb) {
    const auto& m = row.metrics;
    return std::array<double, kMetricCount>{m.iteration_time_s,
                                            m.throughput_samples_s,
                                            m.idle_fraction_mean,
                                            m.exposed_comm_s,
                                            m.steps > 0 ? m.samples / m.steps : 0.0,
                                            row.speedup_vs_ddp,
                                            fb.value_or(std::nan(""))};
  };
  std::vector<double> compute_errors; // forward + backward per step, per algorithm that ran them
  auto drift_per_algorithm = nlohmann::ordered_json::object();
  std::vector<double> drifts;
  for (std::size_t i = 0; i < algorithms; ++i) {
    const auto& repeats = measured_rows[i];
    if (repeats.empty())
      continue;
    const auto& algorithm = repeats.front().algorithm;
    const auto& representative = repeats[median_repeat(repeats)].metrics;
    bool fb_any = false;
    for (const auto& fb : fb_measured[i])
      fb_any = fb_any || fb.has_value();
    const bool fb_both = fb_predicted[i].has_value() && fb_any;
    const auto predicted = metric_values(predicted_rows[i], fb_predicted[i]);
    std::vector<std::array<double, kMetricCount>> measured;
    for (std::size_t r = 0; r < repeats.size(); ++r)
      measured.push_back(
          metric_values(repeats[r], r < fb_measured[i].size() ? fb_measured[i][r] : std::nullopt));
    for (std::size_t k = 0; k < kMetricCount; ++k) {
      const std::string_view metric = kMetrics[k];
      if (metric == "forward_backward_s" && !fb_both)
        continue; // no op table (a failed prediction) or no compute ops
      std::vector<double> values;
      for (const auto& m : measured)
        values.push_back(m[k]);
      const Repeated meas = repeated(std::move(values));
      // Without a measured DDP the run has no reference (its speedup reads 0): the simulator's
      // speedup against its own DDP has nothing to be compared with.
      if (metric == "speedup_vs_ddp" && !(meas.median > 0))
        continue;
      const double pred = predicted[k];
      const double err = relative_error(pred, meas.median);
      const bool within = within_noise(pred, meas);
      nlohmann::ordered_json row;
      row["algorithm"] = algorithm;
      row["metric"] = metric;
      row["predicted"] = pred;
      row["measured"] = meas.median; // the median over the repeats
      row["relative_error"] = number_or_null(err);
      // Near-zero measured values (idle, exposed communication of overlapping algorithms) make
      // relative errors meaningless; the difference says how far off the prediction is.
      row["absolute_error"] = pred - meas.median;
      row["measured_repeats"] = values_json(meas);
      row["measured_min"] = number_or_null(meas.min);
      row["measured_max"] = number_or_null(meas.max);
      row["measured_spread"] = number_or_null(meas.spread());
      row["within_noise"] = within;
      if (metric == "iteration_time_s" && !representative.step_times_s.empty()) {
        // How much the measured steps varied: one stall in ten steps moves the mean, not the
        // median, and the simulator predicts neither.
        const Repeated steps = repeated(representative.step_times_s);
        row["measured_step_s"] = {{"min", steps.min}, {"median", steps.median}, {"max", steps.max}};
        row["measured_step_spread"] = number_or_null(
            steps.median > 0 ? (steps.max - steps.min) / steps.median : std::nan(""));
        step_lines +=
            fmt::format("{:<10} measured steps {:.4g} / {:.4g} / {:.4g} ms (min / median / max)\n",
                        algorithm, 1e3 * steps.min, 1e3 * steps.median, 1e3 * steps.max);
      }
      if (metric == "iteration_time_s" && std::isfinite(err) && std::abs(err) > kWarnAbove) {
        row["warning"] =
            fmt::format("predicted iteration time is {:+.1f}% off the measured one "
                        "(more than {:.0f}%){}",
                        100 * err, 100 * kWarnAbove,
                        within ? fmt::format(", within the repeats' noise ({})", noise_range(meas))
                               : std::string());
        warnings.push_back(fmt::format("{}: {}", algorithm, row["warning"].get<std::string>()));
      }
      if (metric == "forward_backward_s" && std::isfinite(err)) {
        compute_errors.push_back(err);
        if (pred > 0) {
          drift_per_algorithm[algorithm] = meas.median / pred - 1;
          drifts.push_back(meas.median / pred - 1);
        }
      }
      rows.push_back(row);
      csv += fmt::format("{},{},{:.9g},{:.9g},{},{:.9g},{},{},{}\n", algorithm, metric, pred,
                         meas.median, std::isfinite(err) ? fmt::format("{:.6f}", err) : "",
                         pred - meas.median, csv_number(meas.min), csv_number(meas.max),
                         within ? "true" : "false");
      table += fmt::format("{:<10} {:<22} {:>12.6g} {:>12.6g} {:>9}  {}\n", algorithm, metric, pred,
                           meas.median, percent(err), noise_note(meas, within));
    }
  }
  // The machine's drift, beside the errors: compute in the runs against the profile's price, and
  // each repeat's against the repeats' median (the median over the algorithms; repeats run
  // interleaved, so a slower machine slows every algorithm's same repeat).
  std::size_t repeat_count = 0;
  for (const auto& fbs : fb_measured)
    repeat_count = std::max(repeat_count, fbs.size());
  auto per_repeat = nlohmann::ordered_json::array();
  std::vector<double> repeat_drifts;
  if (repeat_count >= 2)
    for (std::size_t r = 0; r < repeat_count; ++r) {
      std::vector<double> ratios;
      for (const auto& fbs : fb_measured) {
        std::vector<double> all;
        for (const auto& fb : fbs)
          all.push_back(fb.value_or(std::nan("")));
        const double median = repeated(all).median;
        if (r < fbs.size() && fbs[r] && std::isfinite(median) && median > 0)
          ratios.push_back(*fbs[r] / median - 1);
      }
      const double d = repeated(ratios).median;
      per_repeat.push_back(std::isfinite(d) ? nlohmann::ordered_json(d)
                                            : nlohmann::ordered_json(nullptr));
      if (std::isfinite(d))
        repeat_drifts.push_back(d);
    }
  if (!drifts.empty() || !repeat_drifts.empty()) {
    auto& drift = out.machine_drift;
    const Repeated against_profile = repeated(drifts);
    drift["what"] = "forward + backward per worker per step, measured over priced (or over the "
                    "repeats' median), less 1: +0.10 is compute 10% slower";
    drift["runs_vs_profile"] = {{"median", number_or_null(against_profile.median)},
                                {"min", number_or_null(against_profile.min)},
                                {"max", number_or_null(against_profile.max)},
                                {"algorithms", drift_per_algorithm}};
    drift["repeats_vs_median"] = per_repeat;
    std::string line = "machine drift (forward + backward per step):";
    if (!drifts.empty())
      line += fmt::format(" the runs {} against the profile's price",
                          against_profile.min == against_profile.max
                              ? percent(against_profile.median)
                              : fmt::format("{} ({} to {})", percent(against_profile.median),
                                            percent(against_profile.min),
                                            percent(against_profile.max)));
    if (!repeat_drifts.empty()) {
      const Repeated between = repeated(repeat_drifts);
      line += fmt::format("{} the repeats {} to {} of their median", drifts.empty() ? "" : ";",
                          percent(between.min), percent(between.max));
    }
    out.drift_line = line + "\n";
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
  op_table = fmt::format("{:<10} {:<26} {:>11} {:>11} {:>8} {:>7} {:>11} {:>11} {:>8}  {}\n",
                         "algorithm", "op (typical, per step)", "predicted", "measured", "error",
                         "noise", "predicted", "measured", "error", "typical op's repeats");
  for (std::size_t i = 0; i < algorithms && i < predicted_traces.size(); ++i) {
    if (!predicted_rows[i].error.empty() || measured_rows[i].empty())
      continue;
    const auto& joined = joined_ops[i];
    const auto& algorithm = measured_rows[i].front().algorithm;
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
      // The measured side's repeats (the median of each is the measured side above).
      const auto found =
          std::find_if(repeated_ops[i].begin(), repeated_ops[i].end(), [&](const RepeatedOp& r) {
            return r.cost.op == c.op && r.cost.stream == c.stream;
          });
      const RepeatedOp* reps = c.measured && found != repeated_ops[i].end() ? &*found : nullptr;
      const bool both = c.predicted && c.measured;
      const double median_err =
          both ? relative_error(c.predicted->median_s, c.measured->median_s) : std::nan("");
      const double step_err =
          both ? relative_error(c.predicted->per_step_s, c.measured->per_step_s) : std::nan("");
      const bool median_within =
          both && reps && within_noise(c.predicted->median_s, reps->median_s);
      const bool step_within =
          both && reps && within_noise(c.predicted->per_step_s, reps->per_step_s);
      nlohmann::ordered_json op;
      op["algorithm"] = algorithm;
      op["op"] = c.op;
      op["stream"] = c.stream == StreamKind::comm ? "comm" : "compute";
      op["predicted"] = side(c.predicted);
      op["measured"] = side(c.measured);
      op["median_error"] = number_or_null(median_err);
      op["per_step_error"] = number_or_null(step_err);
      op["measured_repeats"] =
          reps ? nlohmann::ordered_json{{"median_s", values_json(reps->median_s)},
                                        {"per_step_s", values_json(reps->per_step_s)}}
               : nlohmann::ordered_json(nullptr);
      op["median_within_noise"] = median_within;
      op["per_step_within_noise"] = step_within;
      ops.push_back(op);
      // comparison.csv keeps its columns: an op's two numbers are two metrics.
      std::string name = c.op;
      if (both_streams.contains(c.op))
        name += c.stream == StreamKind::comm ? " (comm)" : " (compute)";
      std::replace(name.begin(), name.end(), ',', ';');
      const auto csv_row = [&](const char* what, double OpCost::*field, double err,
                               const Repeated* measured, bool within) {
        if (!both)
          return;
        csv += fmt::format("{},op:{}:{},{:.9g},{:.9g},{},{:.9g},{},{},{}\n", algorithm, name, what,
                           (*c.predicted).*field, (*c.measured).*field,
                           std::isfinite(err) ? fmt::format("{:.6f}", err) : std::string(),
                           (*c.predicted).*field - (*c.measured).*field,
                           measured ? csv_number(measured->min) : std::string(),
                           measured ? csv_number(measured->max) : std::string(),
                           within ? "true" : "false");
      };
      csv_row("median_s", &OpCost::median_s, median_err, reps ? &reps->median_s : nullptr,
              median_within);
      csv_row("per_step_s", &OpCost::per_step_s, step_err, reps ? &reps->per_step_s : nullptr,
              step_within);
      const auto time = [](const std::optional<OpCost>& cost, double OpCost::*field) {
        return cost ? hw::format_time((*cost).*field) : std::string("-");
      };
      // The measured typical op's own noise (its halves' spread): an error inside it is noise.
      const std::string noise = c.measured && std::isfinite(c.measured->halves_spread)
                                    ? fmt::format("{:.1f}%", 100 * c.measured->halves_spread)
                                    : std::string("n/a");
      op_table += fmt::format(
          "{:<10} {:<26} {:>11} {:>11} {:>8} {:>7} {:>11} {:>11} {:>8}  {}\n", algorithm, name,
          time(c.predicted, &OpCost::median_s), time(c.measured, &OpCost::median_s),
          percent(median_err), noise, time(c.predicted, &OpCost::per_step_s),
          time(c.measured, &OpCost::per_step_s), percent(step_err),
          both && reps ? noise_note(reps->median_s, median_within) : std::string());
    }
  }
  out.table = without_trailing_spaces(out.table);
  out.op_table = without_trailing_spaces(out.op_table);
  return out;
}

} // namespace overlapsim
