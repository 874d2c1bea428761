// Signs of life for the local launcher: each worker touches its own file (at most every 100 ms,
// from whichever thread finishes an op), so that when a job fails the launcher can tell which
// rank stopped making progress first: the one that hung, rather than the peer that timed out
// waiting for it.
#pragma once

#include <string>

namespace overlapsim::real {

// Sets the file this process touches (created now); empty: heartbeats off.
void set_heartbeat_file(const std::string& path);
void heartbeat();

// Seconds since `path` was last touched; negative when it does not exist.
double seconds_since_heartbeat(const std::string& path);

} // namespace overlapsim::real
