#include "algorithms/replicator_indices.h"

#include <algorithm>
#include <random>
#include <stdexcept>
#include <unordered_set>

namespace overlapsim {

namespace {
// SplitMix64's finaliser: decorrelates seeds that differ in one step or piece.
std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}
} // namespace

std::vector<std::int64_t> replicator_indices(const ReplicatorConfig& config, int step, int piece,
                                             std::int64_t elements) {
  const std::int64_t k = config.selected(elements);
  std::vector<std::int64_t> out;
  out.reserve(static_cast<std::size_t>(k));
  switch (config.kind) {
  case ReplicatorKind::random: {
    std::mt19937_64 rng(mix(mix(config.seed) ^ static_cast<std::uint64_t>(step)) ^
                        mix(static_cast<std::uint64_t>(piece) + 1));
    // Floyd: for j in [n - k, n): draw t in [0, j]; take t unless taken, else j.
    std::unordered_set<std::int64_t> taken;
    taken.reserve(static_cast<std::size_t>(k) * 2);
    for (std::int64_t j = elements - k; j < elements; ++j) {
      const auto t = static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(j + 1));
      const std::int64_t pick = taken.contains(t) ? j : t;
      taken.insert(pick);
      out.push_back(pick);
    }
    std::sort(out.begin(), out.end());
    return out;
  }
  case ReplicatorKind::striding: {
    const std::int64_t stride = (elements + k - 1) / k;
    const std::int64_t offset = step % stride;
    for (std::int64_t j = 0; j < k && offset + j * stride < elements; ++j)
      out.push_back(offset + j * stride);
    // The last stride may be short: fill up from the start so every step sends k values.
    for (std::int64_t i = 0; static_cast<std::int64_t>(out.size()) < k; ++i)
      if (i % stride != offset)
        out.push_back(i);
    std::sort(out.begin(), out.end());
    return out;
  }
  case ReplicatorKind::demo:
  case ReplicatorKind::diloco:
    break;
  }
  throw std::logic_error("replicator_indices: only random and striding select seeded indices");
}

std::uint64_t indices_digest(const std::vector<std::int64_t>& indices) {
  std::uint64_t h = 0xCBF29CE484222325ULL;
  for (const std::int64_t i : indices) {
    auto v = static_cast<std::uint64_t>(i);
    for (int byte = 0; byte < 8; ++byte, v >>= 8)
      h = (h ^ (v & 0xFFU)) * 0x100000001B3ULL;
  }
  return h;
}

} // namespace overlapsim
