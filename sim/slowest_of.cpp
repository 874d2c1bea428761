#include "sim/slowest_of.h"

#include "sim/gpu_draws.h"
#include "sim/order_statistic.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <stdexcept>
#include <string>

namespace overlapsim::sim {

namespace {
// A uniform in (0, 1), never 0 or 1 (the order statistic's quantile needs both open).
double open_uniform(std::mt19937_64& rng) {
  return (static_cast<double>(rng() >> 11) + 0.5) * 0x1p-53;
}
} // namespace

int statistical_clocks() {
  static const int clocks = [] {
    const char* text = std::getenv("OVERLAPSIM_STATISTICAL_CLOCKS");
    if (!text || !*text)
      return kStatisticalClocks;
    char* end = nullptr;
    const long value = std::strtol(text, &end, 10);
    if (*end != '\0' || value < 1 || value > (1L << 30))
      throw std::invalid_argument(fmt::format(
          "OVERLAPSIM_STATISTICAL_CLOCKS: '{}' is not a whole number of clocks from 1", text));
    return static_cast<int>(value);
  }();
  return clocks;
}

double max_of_lognormals_quantile(double mu, double sigma, int n, double q) {
  return std::exp(mu + sigma * max_of_normals_z(q, n));
}

SlowestOf::SlowestOf(const scenario::Scenario& s, const std::vector<int>& ranks,
                     double nominal_speed, int max_clocks)
    : scenario_(s), nominal_speed_(nominal_speed) {
  const bool grouped = static_cast<double>(ranks.size()) > max_clocks;
  for (const int r : ranks) {
    const double slowdown = s.cluster.slowdown_of(r);
    if (grouped && slowdown == 1.0)
      member_rank_.push_back(r);
    else
      gpus_.push_back({r, slowdown, jitter_generator(s.seed, r)});
  }
  for (auto& c : clock_)
    c.assign(gpus_.size(), 0.0);
  if (member_rank_.empty())
    return;
  // max_clocks groups of consecutive GPUs (by the order of `ranks`), as even as they divide.
  const std::size_t n = member_rank_.size();
  const std::size_t count = std::min(n, static_cast<std::size_t>(max_clocks));
  groups_.resize(count);
  for (std::size_t j = 0; j < count; ++j) {
    Group& g = groups_[j];
    g.first = j * n / count;
    g.count = (j + 1) * n / count - g.first;
    // The group's draws from the seed and its first GPU, as that GPU's own would be.
    g.rng = jitter_generator(s.seed, member_rank_[g.first]);
    for (auto& c : g.stream) {
      c.top = c.leader = g.first;
      c.top_ties = c.ties = static_cast<double>(g.count);
    }
  }
  for (auto& m : members_) {
    m.mean.assign(n, 0.0);
    m.variance.assign(n, 0.0);
    m.ratio.assign(n, 1.0);
  }
  restart_groups(0, 0);
  restart_groups(1, 0);
}

double SlowestOf::op_seconds(int stream, double now, double amount, MicroBatch mb,
                             const std::function<double(double)>& at_ratio) {
  auto& clock = clock_[static_cast<std::size_t>(stream)];
  double& latest = latest_[static_cast<std::size_t>(stream)];
  waited(stream, now);
  const bool by_length = at_ratio && scenario_.training.seq_len_distribution.kind !=
                                         scenario::SeqLenDistribution::Kind::fixed;
  double slowest = now;
  for (std::size_t i = 0; i < gpus_.size(); ++i) {
    auto& g = gpus_[i];
    const double mine = by_length ? at_ratio(seq_ratio_of(scenario_, g.rank, mb)) : amount;
    const double seconds = mine / nominal_speed_;
    clock[i] += seconds * draw_jitter(scenario_.cluster.jitter, seconds, g.rng) * g.slowdown;
    slowest = std::max(slowest, clock[i]);
  }
  if (!groups_.empty()) {
    const auto& jitter = scenario_.cluster.jitter;
    const auto variance_of = [&](double seconds) {
      return jitter_factor_variance(jitter.distribution, jitter.sigma_of(seconds));
    };
    Members& m = members_[static_cast<std::size_t>(stream)];
    // The op's cost at length ratio r, a r + b r^2 (SimWorker::layer_cost: the attention share
    // grows with r^2, the rest with r), from its cost at r = 1 and r = 1/2.
    double a = 0, b = 0;
    if (by_length) {
      if (!m.has_mb || m.starts || m.mb.step != mb.step || m.mb.index != mb.index)
        next_micro_batch(stream, mb);
      m.starts = false;
      const double whole = at_ratio(1.0) / nominal_speed_, half = at_ratio(0.5) / nominal_speed_;
      b = 2 * (whole - 2 * half);
      a = whole - b;
      const double v = variance_of(amount / nominal_speed_);
      const std::array<double, 5> add{a, b, a * a * v, 2 * a * b * v, b * b * v};
      m.a += add[0];
      m.b += add[1];
      m.va += add[2];
      m.vb += add[3];
      m.vc += add[4];
      for (std::size_t k = 0; k < add.size(); ++k)
        m.whole[k] += add[k];
    } else {
      a = amount / nominal_speed_;
      m.alike_mean += a;
      m.alike_variance += a * a * variance_of(a);
    }
    for (auto& g : groups_) {
      GroupClock& c = g.stream[static_cast<std::size_t>(stream)];
      double seconds = a;
      if (by_length) {
        const double r = m.ratio[c.leader];
        seconds = a * r + b * r * r;
      }
      c.mean += seconds;
      c.variance += seconds * seconds * variance_of(seconds);
      c.clock = std::max(c.clock, c.base + group_quantile(c));
      slowest = std::max(slowest, c.clock);
    }
  }
  latest = slowest;
  ended_[static_cast<std::size_t>(stream)] = slowest;
  return slowest - now;
}

void SlowestOf::waited(int stream, double now) {
  // The stream starts later than its last op ended: it waited (for a collective, for the other
  // stream), and so did every GPU it stands for, until the same moment.
  if (now > ended_[static_cast<std::size_t>(stream)] * (1 + 1e-12) + 1e-15) {
    for (double& c : clock_[static_cast<std::size_t>(stream)])
      c = std::max(c, now);
    if (!groups_.empty())
      restart_groups(stream, now);
  }
}

void SlowestOf::op_ended(int stream, double end) {
  double& latest = latest_[static_cast<std::size_t>(stream)];
  ended_[static_cast<std::size_t>(stream)] = end;
  if (const double stretch = end - latest; stretch > 0) {
    for (double& c : clock_[static_cast<std::size_t>(stream)])
      c += stretch;
    for (auto& g : groups_) {
      GroupClock& c = g.stream[static_cast<std::size_t>(stream)];
      c.base += stretch;
      c.clock += stretch;
    }
    latest = end;
  }
}

void SlowestOf::restart_groups(int stream, double now) {
  // Every grouped GPU's clock is at most the latest, which the wait passed: all start at `now`,
  // each group with a new draw, its GPUs tied (the current micro-batch's longest).
  Members& m = members_[static_cast<std::size_t>(stream)];
  if (m.folded) {
    std::fill(m.mean.begin(), m.mean.end(), 0.0);
    std::fill(m.variance.begin(), m.variance.end(), 0.0);
    m.folded = false;
  }
  m.a = m.b = m.va = m.vb = m.vc = 0;
  m.alike_mean = m.alike_variance = 0;
  for (auto& g : groups_) {
    GroupClock& c = g.stream[static_cast<std::size_t>(stream)];
    c.base = c.clock = now;
    c.u = open_uniform(g.rng);
    choose_leader(g, stream);
  }
}

void SlowestOf::next_micro_batch(int stream, MicroBatch mb) {
  Members& m = members_[static_cast<std::size_t>(stream)];
  if (m.has_mb && (m.a > 0 || m.b > 0)) {
    // The finished micro-batch into every GPU's sum, at its own length.
    for (std::size_t i = 0; i < m.ratio.size(); ++i) {
      const double r = m.ratio[i];
      m.mean[i] += r * (m.a + m.b * r);
      m.variance[i] += r * r * (m.va + r * (m.vb + r * m.vc));
    }
    m.folded = true;
  }
  if (m.has_mb && (m.whole[0] > 0 || m.whole[1] > 0)) {
    m.previous = m.whole;
    m.has_previous = true;
  }
  m.whole = {};
  m.a = m.b = m.va = m.vb = m.vc = 0;
  m.mb = mb;
  m.has_mb = true;
  for (std::size_t i = 0; i < m.ratio.size(); ++i)
    m.ratio[i] = seq_ratio_of(scenario_, member_rank_[i], mb);
  for (auto& g : groups_) {
    GroupClock& c = g.stream[static_cast<std::size_t>(stream)];
    c.top = g.first;
    c.top_ties = 0;
    for (std::size_t i = g.first; i < g.first + g.count; ++i) {
      if (m.ratio[i] > m.ratio[c.top]) {
        c.top = i;
        c.top_ties = 0;
      }
      if (m.ratio[i] == m.ratio[c.top])
        ++c.top_ties;
    }
    choose_leader(g, stream);
  }
}

void SlowestOf::choose_leader(Group& g, int stream) {
  Members& m = members_[static_cast<std::size_t>(stream)];
  GroupClock& c = g.stream[static_cast<std::size_t>(stream)];
  if (!m.has_previous) {
    // No micro-batch to project with yet (or lengths alike): the longest sequence leads, it and
    // its ties alike, so the slowest of them is the order statistic of their count.
    c.leader = c.top;
    c.ties = c.top_ties;
    c.mean = m.mean[c.leader] + m.alike_mean;
    c.variance = m.variance[c.leader] + m.alike_variance;
    c.z = max_of_normals_z(c.u, c.ties);
    return;
  }
  // Each GPU's sum at this micro-batch's end, were it to cost what the previous one did: mean
  // mu_i and deviation sd_i (normal; what jitter adds to them alike is left out of the choice).
  // The group's slowest is at most x with probability prod_i Phi((x - mu_i) / sd_i); its
  // u-quantile x_u, solved by bisection over the GPUs that can reach it, sets the leader's z:
  // (x_u - mu_L) / sd_L, so the leader's clock reaches x_u there.
  const auto& p = m.previous;
  const auto mu = [&](std::size_t i) {
    const double r = m.ratio[i];
    return m.mean[i] + r * (p[0] + p[1] * r);
  };
  const auto sd = [&](std::size_t i) {
    const double r = m.ratio[i];
    return std::sqrt(m.alike_variance + m.variance[i] + r * r * (p[2] + r * (p[3] + r * p[4])));
  };
  std::size_t best = g.first;
  for (std::size_t i = g.first + 1; i < g.first + g.count; ++i)
    if (mu(i) > mu(best))
      best = i;
  c.leader = best;
  c.ties = 1;
  c.mean = m.mean[best] + m.alike_mean;
  c.variance = m.variance[best] + m.alike_variance;
  const double mu_l = mu(best), sd_l = sd(best);
  if (sd_l <= 0) { // nothing drawn: the longest sum is the slowest
    c.z = 0;
    return;
  }
  const double lo0 = mu_l + sd_l * normal_quantile(c.u);
  std::vector<std::pair<double, double>>& reach = reach_;
  reach.clear();
  for (std::size_t i = g.first; i < g.first + g.count; ++i) {
    const double s = sd(i), e = mu(i);
    if (e + 8.3 * s >= lo0) // Phi(-8.3) ~ 5e-17: the rest are below lo0 for certain
      reach.emplace_back(e, s);
  }
  const double z_all = max_of_normals_z(c.u, static_cast<double>(reach.size()));
  double hi = lo0;
  for (const auto& [e, s] : reach)
    hi = std::max(hi, e + s * z_all);
  const double log_u = std::log(c.u);
  double lo = lo0;
  for (int k = 0; k < 60 && hi - lo > 1e-12 * std::abs(hi); ++k) {
    const double x = (lo + hi) / 2;
    double log_p = 0;
    for (const auto& [e, s] : reach)
      log_p += s > 0 ? std::log(0.5 * std::erfc((e - x) / (s * std::sqrt(2.0))))
                     : (x >= e ? 0.0 : -std::numeric_limits<double>::infinity());
    (log_p < log_u ? lo : hi) = x;
  }
  c.z = ((lo + hi) / 2 - mu_l) / sd_l;
}

double SlowestOf::group_quantile(const GroupClock& c) const {
  return sum_quantile(scenario_.cluster.jitter.distribution, c.mean, c.variance, c.z);
}

} // namespace overlapsim::sim
