// Order statistics of sums of jittered op times (issue 64.2 and 64.4; sim/slowest_of.h): what
// the slowest of m alike GPUs' clocks reaches, drawn once per clock instead of m paths of draws.
//
// m GPUs that run the same ops at the same sequence lengths draw independent jitter: GPU g's time
// since the GPUs last started together is a sum S_g of op times a_k x J_g,k, with
// E S = sum a_k and Var S = sum a_k^2 x v_k, v_k the variance of op k's jitter factor
// (lognormal with mu = -sigma^2 / 2: e^(sigma^2) - 1; normal N(1, sigma): sigma^2). The slowest of
// m such sums has the CDF F^m, so its u-quantile is F^-1(u^(1/m)): one uniform u per clock and
// interval, z = Phi^-1(u^(1/m)), and the clock is the sum's quantile at z. For the sum's F:
// exact for normal jitter (a sum of normals), Fenton-Wilkinson for lognormal jitter (the sum as
// the lognormal of the same mean and variance: s^2 = ln(1 + Var / E^2), m_ln = ln E - s^2 / 2;
// exact for one op, and near normal for many, where a sum of lognormals is too).
#pragma once

#include "scenario/scenario.h"

namespace overlapsim::sim {

// Phi^-1(p), the standard normal quantile, p in (0, 1) (boost::math::erfc_inv: -sqrt(2) x
// erfc^-1(2p), accurate to double precision).
double normal_quantile(double p);

// z = Phi^-1(u^(1/m)): the standard normal value the largest of m independent standard normals
// stays under with probability u, m >= 1 (not necessarily whole), u in (0, 1). Computed from the
// upper tail 1 - u^(1/m) = -expm1(ln(u) / m), so that m = 10^6 keeps its digits.
double max_of_normals_z(double u, double m);

// The variance of one op's jitter factor at `sigma` (see above); 0 without jitter.
double jitter_factor_variance(scenario::JitterDistribution d, double sigma);

// The z-quantile of a sum of op times of mean `mean` and variance `variance` (see above):
// mean + z sqrt(variance) for normal jitter, the Fenton-Wilkinson lognormal's for lognormal
// jitter, `mean` without jitter.
double sum_quantile(scenario::JitterDistribution d, double mean, double variance, double z);

} // namespace overlapsim::sim
