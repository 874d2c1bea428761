#include "sim/gpu_draws.h"

#include <cstdlib>

#include <algorithm>
#include <cmath>

namespace overlapsim::sim {

std::mt19937_64 jitter_generator(std::uint64_t seed, int rank) {
  // OVERLAPSIM_JITTER_SALT (measurements only, see gpu_draws.h): 0 or unset keeps the draws.
  static const std::uint64_t salt = [] {
    const char* text = std::getenv("OVERLAPSIM_JITTER_SALT");
    return text && *text ? std::strtoull(text, nullptr, 10) : 0ULL;
  }();
  return std::mt19937_64((seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) + 1) ^
                         (salt * 0xD1B54A32D192ED03ULL));
}

double draw_jitter(const scenario::Jitter& jitter, double seconds, std::mt19937_64& rng) {
  const double sigma = jitter.sigma_of(seconds);
  switch (jitter.distribution) {
  case scenario::JitterDistribution::none:
    return 1.0;
  case scenario::JitterDistribution::lognormal: {
    // mu = -sigma^2 / 2 makes the mean 1, so jitter slows no GPU on average.
    std::lognormal_distribution<double> d(-sigma * sigma / 2, sigma);
    return d(rng);
  }
  case scenario::JitterDistribution::normal: {
    std::normal_distribution<double> d(1.0, sigma);
    return std::max(0.05, d(rng));
  }
  }
  return 1.0;
}

double seq_ratio_of(const scenario::Scenario& s, int rank, MicroBatch mb) {
  const auto& t = s.training;
  const auto& d = t.seq_len_distribution;
  if (d.kind == scenario::SeqLenDistribution::Kind::fixed || mb.step < 0)
    return 1.0;
  // Drawn from (seed, GPU, step, micro-batch) alone: the micro-batch's forward and backward see
  // the same length, and reruns are bit-identical whatever else drew numbers in between.
  std::uint64_t key = s.seed * 0x9E3779B97F4A7C15ULL;
  for (const std::uint64_t part :
       {static_cast<std::uint64_t>(rank), static_cast<std::uint64_t>(mb.step),
        static_cast<std::uint64_t>(mb.index)}) {
    key ^= part + 0x9E3779B97F4A7C15ULL + (key << 6) + (key >> 2);
  }
  std::mt19937_64 gen(key);
  int longest = 1;
  for (int k = 0; k < d.max_of; ++k) {
    int length = t.seq_len;
    switch (d.kind) {
    case scenario::SeqLenDistribution::Kind::lengths:
      length = d.lengths[std::uniform_int_distribution<std::size_t>(0, d.lengths.size() - 1)(gen)];
      break;
    case scenario::SeqLenDistribution::Kind::lognormal:
      length = static_cast<int>(
          std::lround(std::lognormal_distribution<double>(std::log(d.median), d.sigma)(gen)));
      break;
    case scenario::SeqLenDistribution::Kind::uniform:
      length = std::uniform_int_distribution<int>(d.min, d.max)(gen);
      break;
    case scenario::SeqLenDistribution::Kind::fixed:
      break;
    }
    longest = std::max(longest, std::clamp(length, 1, t.seq_len));
  }
  return static_cast<double>(longest) / t.seq_len;
}

} // namespace overlapsim::sim
