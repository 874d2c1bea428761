// Chrome trace event format (Perfetto, chrome://tracing): one process per worker ("node N gpu G"),
// one thread per stream ("compute" tid 0, "comm" tid 1) plus a track ("comm 2", "comm 3", ...,
// sorted below their stream's) for each further op a stream has open at once, so that the events
// of every thread are disjoint; complete events with ts/dur in microseconds, "memory" counter
// events and "step_end" instants.
#pragma once

#include "trace/trace.h"

#include <string>
#include <vector>

namespace overlapsim {

// `workers`: the GPUs to write (a subset keeps a large cluster's trace small enough to open); empty
// writes every GPU. Communication events carry their process group (id and size) and, for rooted
// and point-to-point ops, the peer rank in `args`, and `bytes`: what the GPU sent, for a
// point-to-point receive what it received; one that waited for a slower peer (see
// peer_arrivals()) carries the wait, from its start, as `waiting_us`.
std::string chrome_trace_json(const Trace& trace, const std::string& title,
                              const std::vector<int>& workers = {});

} // namespace overlapsim
