#include "cli/time_to_target.h"

#include <algorithm>
#include <cmath>

namespace overlapsim::cli {

void add_time_to_target(SummaryRow& row, const scenario::Scenario& s,
                        const std::vector<scenario::LossPoint>* curve, const char* source) {
  if (!s.training.target_loss || !row.error.empty())
    return;
  const double target = *s.training.target_loss;
  nlohmann::ordered_json t;
  t["target_loss"] = target;
  t["curve"] = curve != nullptr ? nlohmann::ordered_json(source) : nlohmann::ordered_json(nullptr);
  t["samples"] = nullptr;
  t["time_s"] = nullptr;
  if (curve != nullptr && !curve->empty()) {
    const auto lowest = std::min_element(
        curve->begin(), curve->end(), [](const auto& a, const auto& b) { return a.loss < b.loss; });
    t["lowest_loss"] = lowest->loss;
    if (const auto samples = scenario::samples_to_reach(*curve, target)) {
      t["samples"] = *samples;
      const double throughput = row.metrics.throughput_samples_s;
      if (throughput > 0 && std::isfinite(throughput))
        t["time_s"] = *samples / throughput;
    }
  }
  row.extra["time_to_target"] = t;
}

void add_supplied_time_to_target(SummaryRow& row, const scenario::Scenario& s) {
  const auto it = s.training.loss_curves.find(row.algorithm);
  add_time_to_target(row, s, it != s.training.loss_curves.end() ? &it->second : nullptr,
                     "supplied");
}

} // namespace overlapsim::cli
