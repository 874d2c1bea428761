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

struct Comparison {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array(); // comparison.json "rows"
  nlohmann::ordered_json ops = nlohmann::ordered_json::array();  // comparison.json "ops"
  std::vector<std::string> warnings; // iteration times more than 15% off; compute off in all
  std::string csv;                   // comparison.csv
  std::string table;                 // the metrics, as validate prints them
  std::string step_lines;            // each algorithm's measured steps (min / median / max)
  std::string op_table;              // the ops, as validate prints them
};

// Row i of each list is one algorithm: its predicted and measured summary rows and traces (a
// predicted row with an error has no op table).
Comparison compare_predicted_measured(const std::vector<SummaryRow>& predicted_rows,
                                      const std::vector<SummaryRow>& measured_rows,
                                      const std::vector<const Trace*>& predicted_traces,
                                      const std::vector<const Trace*>& measured_traces);

// (predicted - measured) / measured; 0 when both are 0, NaN when only the measurement is.
double relative_error(double predicted, double measured);

} // namespace overlapsim
