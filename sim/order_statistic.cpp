#include "sim/order_statistic.h"

#include <boost/math/special_functions/erf.hpp>

#include <cmath>
#include <stdexcept>

namespace overlapsim::sim {

double normal_quantile(double p) {
  if (!(p > 0 && p < 1))
    throw std::invalid_argument("normal_quantile: p must lie in (0, 1)");
  return -std::sqrt(2.0) * boost::math::erfc_inv(2 * p);
}

double max_of_normals_z(double u, double m) {
  if (!(u > 0 && u < 1) || !(m >= 1))
    throw std::invalid_argument("max_of_normals_z: u must lie in (0, 1) and m be at least 1");
  // Phi^-1(1 - t) = sqrt(2) erfc^-1(2t) with t = 1 - u^(1/m), kept in the tail.
  const double tail = -std::expm1(std::log(u) / m);
  return std::sqrt(2.0) * boost::math::erfc_inv(2 * tail);
}

double jitter_factor_variance(scenario::JitterDistribution d, double sigma) {
  switch (d) {
  case scenario::JitterDistribution::lognormal:
    return std::expm1(sigma * sigma);
  case scenario::JitterDistribution::normal:
    return sigma * sigma;
  case scenario::JitterDistribution::none:
    break;
  }
  return 0;
}

double sum_quantile(scenario::JitterDistribution d, double mean, double variance, double z) {
  if (mean <= 0 || variance <= 0)
    return mean;
  switch (d) {
  case scenario::JitterDistribution::lognormal: {
    const double s2 = std::log1p(variance / (mean * mean));
    return std::exp(std::log(mean) - s2 / 2 + std::sqrt(s2) * z);
  }
  case scenario::JitterDistribution::normal:
    return mean + z * std::sqrt(variance);
  case scenario::JitterDistribution::none:
    break;
  }
  return mean;
}

} // namespace overlapsim::sim
