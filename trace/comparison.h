// What validate reports (issue 30.4): the prediction of each algorithm against its measurement,
// metric by metric and op by op, as comparison.json's rows and ops, comparison.csv and the tables
// validate prints. Pure: rows and traces in, text and JSON out, no LibTorch or SimGrid, so the
// comparison is tested without a real run (issue 28.4: it lived in cli/).
#pragma once

#include "trace/summary.h"
#include "trace/trace.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace overlapsim {

// One measured figure over validate's repeats (`--repeats`, issue 62.11): each repeat's value
// in the order they ran, and the median and range of the finite ones (the median of an even
// count is the mean of the middle two). No finite value: NaN throughout.
struct Repeated {
  std::vector<double> values;
  double median = 0, min = 0, max = 0;
  // (max - min) / |median|: 0 with one repeat, NaN where the median is 0 or NaN.
  double spread() const;
};
Repeated repeated(std::vector<double> values);

// Whether a prediction is inside the measured noise: inside the repeats' [min, max], so that its
// error is no larger than what the machine varied by between runs of the same job. With one
// repeat only a prediction equal to the measurement is.
bool within_noise(double predicted, const Repeated& measured);

// The repeat whose iteration time is nearest the repeats' median (the earliest of equals): its
// measured summary row, traces and losses are the ones validate writes. 0 when there is none.
std::size_t median_repeat(const std::vector<SummaryRow>& repeats);

struct Comparison {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array(); // comparison.json "rows"
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();  // comparison.json "ops"
  // comparison.json "machine_drift": how much the machine's compute speed moved, from forward +
  // backward per worker per step (null where no algorithm ran both): the runs' against the
  // profile's price, and each repeat's against the repeats' median.
  nlohmann::ordered_json machine_drift;
  std::string drift_line;            // the same, one printed line (empty where null)
  std::vector<std::string> warnings; // iteration times more than 15% off; compute off in all
  std::string csv;                   // comparison.csv
  std::string table;                 // the metrics, as validate prints them
  std::string step_lines;            // each algorithm's measured steps (min / median / max)
  std::string op_table;              // the ops, as validate prints them
};

// Row i of each list is one algorithm: its predicted summary row and trace (a predicted row with
// an error has no op table), and its measured rows and traces, one per repeat (at least one).
// Every measured figure is the median over the repeats, with each repeat's value and the range
// beside it; errors are against the median. The step times (`measured_step_s`) are the median
// repeat's (median_repeat).
Comparison
compare_predicted_measured(const std::vector<SummaryRow>& predicted_rows,
                           const std::vector<std::vector<SummaryRow>>& measured_rows,
                           const std::vector<const Trace*>& predicted_traces,
                           const std::vector<std::vector<const Trace*>>& measured_traces);

// One repeat per algorithm.
Comparison compare_predicted_measured(const std::vector<SummaryRow>& predicted_rows,
                                      const std::vector<SummaryRow>& measured_rows,
                                      const std::vector<const Trace*>& predicted_traces,
                                      const std::vector<const Trace*>& measured_traces);

// (predicted - measured) / measured; 0 when both are 0, NaN when only the measurement is.
double relative_error(double predicted, double measured);

} // namespace overlapsim
