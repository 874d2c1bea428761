#include "trace/op_costs.h"

#include <algorithm>
#include <map>

namespace overlapsim {

std::string op_kind(OpCategory category, const std::string& name) {
  if (category == OpCategory::forward || category == OpCategory::backward)
    return to_string(category);
  auto kind = name;
  if (const auto open = kind.rfind(" ("); open != std::string::npos && kind.back() == ')')
    kind.erase(open);
  // "all-reduce bucket 3": every bucket is one kind.
  if (const auto space = kind.rfind(' ');
      space != std::string::npos && space + 1 < kind.size() &&
      kind.find_first_not_of("0123456789", space + 1) == std::string::npos)
    kind.erase(space);
  return kind;
}

std::vector<OpCost> op_costs(const Trace& trace, double window_start_s, double window_end_s,
                             int steps) {
  struct Kind {
    OpCost cost;
    std::vector<double> durations;
  };
  std::vector<Kind> kinds;
  std::map<std::pair<StreamKind, std::string>, std::size_t> index;
  for (const auto& e : trace.events) {
    if (e.start < window_start_s || e.start >= window_end_s || e.category == OpCategory::idle)
      continue;
    const auto kind = op_kind(e.category, trace.name_of(e.name));
    const auto [it, fresh] = index.try_emplace({e.stream, kind}, kinds.size());
    if (fresh)
      kinds.push_back({OpCost{kind, e.category, e.stream}, {}});
    kinds[it->second].durations.push_back(e.end - e.start);
  }
  const double per = steps > 0 && trace.workers > 0 ? 1.0 / (steps * trace.workers) : 0.0;
  std::vector<OpCost> out;
  for (auto& [cost, durations] : kinds) {
    std::sort(durations.begin(), durations.end());
    const std::size_t n = durations.size();
    cost.median_s = n % 2 ? durations[n / 2] : (durations[n / 2 - 1] + durations[n / 2]) / 2;
    double total = 0;
    for (double d : durations)
      total += d;
    cost.count_per_step = static_cast<double>(n) * per;
    cost.per_step_s = total * per;
    out.push_back(cost);
  }
  return out;
}

std::vector<OpComparison> compare_op_costs(const std::vector<OpCost>& predicted,
                                           const std::vector<OpCost>& measured) {
  std::vector<OpComparison> out;
  for (const auto& m : measured)
    out.push_back({m.op, m.stream, std::nullopt, m});
  for (const auto& p : predicted) {
    const auto it = std::find_if(out.begin(), out.end(), [&](const OpComparison& c) {
      return c.op == p.op && c.stream == p.stream;
    });
    if (it != out.end())
      it->predicted = p;
    else
      out.push_back({p.op, p.stream, p, std::nullopt});
  }
  return out;
}

} // namespace overlapsim
