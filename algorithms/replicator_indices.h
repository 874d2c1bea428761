// The indices the seeded replicators select (DeToNATION paper, Sec. 3 "Replication Schemes"):
// Random draws them from a seed shared by every replica, Striding takes every n-th element, so
// no index travels on the wire. A pure function of (config, step, piece, elements): every worker,
// in either runtime, computes the same list.
#pragma once

#include "runtime/replicator_config.h"

#include <cstdint>
#include <vector>

namespace overlapsim {

// Sorted, distinct indices in [0, elements), config.selected(elements) of them.
//   random:   drawn without replacement (Floyd's algorithm) from a 64-bit Mersenne Twister seeded
//             with (seed, step, piece); the reduction of draws to ranges is spelled out here, not
//             left to std::uniform_int_distribution, whose results differ between libraries.
//   striding: stride s = ceil(elements / k), offset step mod s: offset, offset + s, ... so that
//             s consecutive steps cover every element once.
std::vector<std::int64_t> replicator_indices(const ReplicatorConfig& config, int step, int piece,
                                             std::int64_t elements);

// FNV-1a over the indices' 64-bit values: a short fingerprint of a selection. A real run puts it
// in the trace of each encode, so that a reader sees every replica sent the same elements (the
// paper's premise for sending no indices) without the lists themselves.
std::uint64_t indices_digest(const std::vector<std::int64_t>& indices);

} // namespace overlapsim
