#include "validate/profile_statistics.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

namespace overlapsim::real {

double expected_time(std::vector<double> seconds) {
  if (seconds.empty())
    return 0;
  std::sort(seconds.begin(), seconds.end());
  seconds.resize(seconds.size() - seconds.size() / 20);
  double total = 0;
  for (const double s : seconds)
    total += s;
  return total / static_cast<double>(seconds.size());
}

std::vector<double> every_nth(const std::vector<double>& values, int n) {
  if (n <= 1)
    return values;
  std::vector<double> kept;
  for (std::size_t i = static_cast<std::size_t>(n) - 1; i < values.size();
       i += static_cast<std::size_t>(n))
    kept.push_back(values[i]);
  return kept;
}

namespace {
std::size_t common_repeats(const std::vector<std::vector<double>>& per_member) {
  if (per_member.empty())
    return 0;
  std::size_t repeats = per_member.front().size();
  for (const auto& m : per_member)
    repeats = std::min(repeats, m.size());
  return repeats;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : (v[mid - 1] + v[mid]) / 2;
}
} // namespace

double compute_drift(const std::map<std::string, std::vector<double>>& passes) {
  double first = 0, last = 0;
  for (const auto& [name, seconds] : passes) {
    const std::size_t third = seconds.size() / 3;
    if (third == 0)
      continue;
    first += median({seconds.begin(), seconds.begin() + static_cast<std::ptrdiff_t>(third)});
    last += median({seconds.end() - static_cast<std::ptrdiff_t>(third), seconds.end()});
  }
  return first > 0 ? last / first - 1 : std::nan("");
}

double first_end_time(const std::vector<std::vector<double>>& durations) {
  std::vector<double> first;
  for (std::size_t r = 0; r < common_repeats(durations); ++r) {
    double lo = durations.front()[r];
    for (const auto& d : durations)
      lo = std::min(lo, d[r]);
    first.push_back(lo);
  }
  return expected_time(std::move(first));
}

double last_caller_lag(const std::vector<std::vector<double>>& ends) {
  const std::size_t n = ends.size();
  const std::size_t repeats = common_repeats(ends);
  if (n < 2 || repeats == 0)
    return 0;
  std::vector<double> lags;
  for (std::size_t r = 0; r < repeats; ++r) {
    const std::size_t late = r % n;
    double others = std::numeric_limits<double>::infinity();
    for (std::size_t m = 0; m < n; ++m)
      if (m != late)
        others = std::min(others, ends[m][r]);
    if (!(ends[late][r] > others))
      return 0;
    lags.push_back(ends[late][r] - others);
  }
  return median(std::move(lags));
}

double end_spread(const std::vector<std::vector<double>>& durations) {
  const std::size_t repeats = common_repeats(durations);
  if (durations.size() < 2 || repeats == 0)
    return 0;
  std::vector<double> spreads;
  for (std::size_t r = 0; r < repeats; ++r) {
    double lo = durations.front()[r], hi = lo;
    for (const auto& d : durations)
      lo = std::min(lo, d[r]), hi = std::max(hi, d[r]);
    spreads.push_back(hi - lo);
  }
  return median(std::move(spreads));
}

double paired_median_delay(const std::vector<double>& alone, const std::vector<double>& loaded) {
  const std::size_t repeats = std::min(alone.size(), loaded.size());
  if (repeats == 0)
    return 0;
  std::vector<double> delays;
  for (std::size_t r = 0; r < repeats; ++r)
    delays.push_back(loaded[r] - alone[r]);
  return std::max(0.0, median(std::move(delays)));
}

std::vector<double> sweep_sizes(const ProfileOptions& o, double max_bytes, std::string_view op,
                                int ranks) {
  const int sizes = std::max(2, o.sizes);
  std::vector<double> bytes{0};
  for (int i = 0; i < sizes; ++i)
    bytes.push_back(o.min_bytes * std::pow(max_bytes / o.min_bytes, i / (sizes - 1.0)));
  std::vector<std::pair<std::int64_t, double>> issued; // (calls, bytes)
  for (const auto& [size, calls] : o.issued)
    if (size.op == op && size.ranks == ranks && size.bytes > 0)
      issued.emplace_back(calls, size.bytes);
  // The most called first; of as many calls, the larger (it costs a run more).
  std::sort(issued.begin(), issued.end(), std::greater<>());
  // What the 0 measures: one element (4 bytes) per rank, one element for a message.
  const double smallest = 4.0 * (op == "send_recv" ? 1 : ranks);
  int added = 0;
  for (const auto& call_size : issued) {
    const double b = call_size.second;
    if (added == kMaxIssuedSizes)
      break;
    const bool near = std::any_of(bytes.begin(), bytes.end(), [&](double x) {
      return std::abs(std::max(x, smallest) - b) <= 0.02 * b;
    });
    if (!near) {
      bytes.push_back(b);
      ++added;
    }
  }
  std::sort(bytes.begin(), bytes.end());
  return bytes;
}

std::vector<std::int64_t> optimizer_step_sizes(const ProfileOptions& o, std::int64_t n,
                                               std::vector<std::int64_t> shards) {
  std::vector<std::pair<std::int64_t, std::int64_t>> issued; // (calls, parameters)
  for (const auto& [size, calls] : o.issued)
    if (size.op == kOptimizerStep && size.bytes >= 1)
      issued.emplace_back(calls, std::llround(size.bytes));
  std::sort(issued.begin(), issued.end(), std::greater<>());
  const auto near = [&](std::int64_t p) {
    return std::abs(static_cast<double>(n - p)) <= 0.02 * static_cast<double>(p) ||
           std::any_of(shards.begin(), shards.end(), [&](std::int64_t s) {
             return std::abs(static_cast<double>(s - p)) <= 0.02 * static_cast<double>(p);
           });
  };
  int added = 0;
  for (const auto& [calls, p] : issued) {
    if (added == kMaxIssuedSizes)
      break;
    if (p < n && !near(p)) {
      shards.push_back(p);
      ++added;
    }
  }
  std::sort(shards.begin(), shards.end());
  return shards;
}

int repeats_for(const ProfileOptions& o, double one) {
  const double wanted = std::ceil(o.min_time_s / std::max(one, 1e-9));
  return static_cast<int>(
      std::clamp<double>(wanted, o.repeats, std::max(o.repeats, o.max_repeats)));
}

int interference_rounds(int compute_repeats, double compute_s,
                        const std::vector<double>& probe_medians, double wall_round_s) {
  double round = 0;
  for (const double m : probe_medians)
    round += std::max(1e-6, m);
  round = std::max(round, wall_round_s);
  return static_cast<int>(std::ceil(2.0 * compute_repeats * compute_s / round)) + 2;
}

std::int64_t interference_probe_elements(std::int64_t n, double compute_s, double full_s,
                                         int world) {
  const double lasting =
      static_cast<double>(n) * kComputeRepeatsPerProbe * compute_s / std::max(1e-6, full_s);
  return static_cast<std::int64_t>(std::floor(std::clamp(
      lasting, static_cast<double>(world), static_cast<double>(std::max<std::int64_t>(n, world)))));
}

std::optional<StartCostLine> start_cost_line(double small_bytes, double small_s, double large_bytes,
                                             double large_s) {
  small_s = std::max(0.0, small_s);
  large_s = std::max(0.0, large_s);
  if (small_s <= 0 && large_s <= 0)
    return std::nullopt;
  if (large_bytes <= small_bytes || large_s <= small_s)
    return StartCostLine{(small_s + large_s) / 2, 0};
  const double slope = (large_s - small_s) / (large_bytes - small_bytes);
  const double fixed = small_s - slope * small_bytes;
  if (fixed < 0)
    return StartCostLine{0, large_s / large_bytes};
  return StartCostLine{fixed, slope};
}

int start_probe_fills(double longest_pass_s, double fill_s) {
  if (!(fill_s > 0) || !(longest_pass_s > 0))
    return 1;
  return static_cast<int>(std::clamp(std::round(longest_pass_s / fill_s), 1.0, 20.0));
}

std::optional<double> paired_transfer_weight(const std::vector<double>& alone,
                                             const std::vector<double>& beside) {
  std::vector<double> ratios;
  for (std::size_t i = 0; i < std::min(alone.size(), beside.size()); ++i)
    if (alone[i] > 0 && beside[i] > 0)
      ratios.push_back(beside[i] / alone[i] - 1);
  if (ratios.empty())
    return std::nullopt;
  return std::max(0.0, median(std::move(ratios)));
}

std::optional<double> paired_transfer_share(const std::vector<double>& alone,
                                            const std::vector<double>& beside) {
  const auto weight = paired_transfer_weight(alone, beside);
  return weight ? std::optional(*weight / (1 + *weight)) : std::nullopt;
}

std::int64_t outlasting_shard(std::int64_t shard, std::int64_t most, double at_least_s,
                              const std::function<double(std::int64_t)>& lasts) {
  shard = std::clamp<std::int64_t>(shard, 1, std::max<std::int64_t>(1, most));
  while (shard < most && lasts(shard) < at_least_s)
    shard = std::min(most, 2 * shard);
  return shard;
}

} // namespace overlapsim::real
