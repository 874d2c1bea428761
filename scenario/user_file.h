// Files a user names (scenarios, calibration profiles, layer tables, loss curves, profiler traces,
// nccl-tests logs, shard summaries) are read through here (issue 26.4): `overlapsim run /dev/zero`
// read without end into std::bad_alloc, and a FIFO hung. A file must be a regular file (links are
// followed) no larger than its kind's limit; the error names the file and what was expected.
#pragma once

#include <cstdint>
#include <string>

namespace overlapsim::scenario {

struct UserFileKind {
  const char* what;         // "scenario file", for messages
  std::uintmax_t max_bytes; // documented in docs/SCENARIO.md ("Input files")
  // JSON kinds: the memory its parsed values may take (scenario/user_json.h), so that a file
  // within max_bytes cannot take more memory than the machine has once parsed.
  std::uintmax_t max_parsed_bytes = 0;
};

inline constexpr UserFileKind kScenarioFile{"scenario file", std::uintmax_t{16} << 20};
inline constexpr UserFileKind kCalibrationFile{"calibration profile", std::uintmax_t{64} << 20,
                                               std::uintmax_t{1} << 30};
inline constexpr UserFileKind kLayerTableFile{"layer table", std::uintmax_t{16} << 20};
inline constexpr UserFileKind kLossCurveFile{"loss curve", std::uintmax_t{256} << 20};
inline constexpr UserFileKind kNcclTestsLog{"nccl-tests log", std::uintmax_t{64} << 20};
// merge holds every shard's rows at once: its shards share one budget of parsed values, and the
// summary it writes takes them over, so a merge stays within about 2 GB (a shard took 14x its
// size).
inline constexpr UserFileKind kSummaryFile{"summary", std::uintmax_t{256} << 20,
                                           std::uintmax_t{1} << 30};
// A PyTorch profiler trace: its size on disk (gzip'd or not), and what it may inflate to (it is
// parsed as it inflates: the limit bounds the time, the parsed budget the memory).
inline constexpr UserFileKind kProfilerTrace{"PyTorch profiler trace", std::uintmax_t{2} << 30,
                                             std::uintmax_t{4} << 30};
inline constexpr std::uintmax_t kMaxInflatedTraceBytes = std::uintmax_t{8} << 30;

// Throws std::runtime_error unless `path` names a regular file of at most kind.max_bytes.
void check_user_file(const std::string& path, const UserFileKind& kind);

// The file's bytes, after check_user_file; throws std::runtime_error naming the file.
std::string read_user_file(const std::string& path, const UserFileKind& kind);

} // namespace overlapsim::scenario
