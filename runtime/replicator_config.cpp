#include "runtime/replicator_config.h"

#include <algorithm>
#include <cmath>

namespace overlapsim {

const char* to_string(ReplicatorKind kind) {
  switch (kind) {
  case ReplicatorKind::demo:
    return "demo";
  case ReplicatorKind::random:
    return "random";
  case ReplicatorKind::striding:
    return "striding";
  case ReplicatorKind::diloco:
    return "diloco";
  }
  return "?";
}

std::int64_t ReplicatorConfig::selected(std::int64_t elements) const {
  switch (kind) {
  case ReplicatorKind::demo: {
    // Whole blocks of chunk^2 (the last one zero-padded), top_k of each.
    const std::int64_t block = static_cast<std::int64_t>(chunk) * chunk;
    return (elements + block - 1) / block * top_k;
  }
  case ReplicatorKind::random:
  case ReplicatorKind::striding:
    return std::clamp<std::int64_t>(std::llround(compression * static_cast<double>(elements)), 1,
                                    elements);
  case ReplicatorKind::diloco:
    return elements;
  }
  return elements;
}

bool ReplicatorConfig::exchanges(int step) const {
  if (kind != ReplicatorKind::diloco)
    return true;
  const int period = std::max(1, static_cast<int>(std::lround(1.0 / compression)));
  return (step + 1) % period == 0;
}

} // namespace overlapsim
