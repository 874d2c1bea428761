#include "validate/profile_statistics.h"

#include <algorithm>
#include <cmath>

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

int repeats_for(const ProfileOptions& o, double one) {
  const double wanted = std::ceil(o.min_time_s / std::max(one, 1e-9));
  return static_cast<int>(
      std::clamp<double>(wanted, o.repeats, std::max(o.repeats, o.max_repeats)));
}

} // namespace overlapsim::real
