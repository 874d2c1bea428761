// `overlapsim validate` (run the scenario's algorithms for real, then predict the same run with
// the measured calibration and score the prediction) and `overlapsim profile` (measure, or import
// nccl-tests logs, and write a calibration profile).
#pragma once

#include <string>
#include <vector>

namespace overlapsim::cli {

struct ValidateOptions {
  std::string scenario;
  std::string out;
  std::vector<std::string> algorithms;
  std::vector<std::string> overrides;
  int workers = 2;
  std::string backend = "gloo";
  std::string emulate_link; // a bandwidth ("100Mbit/s"); empty: no emulation
  double timeout_s = 120;
  double profile_time_s = 0.25;   // timed repeats per profiled quantity (real::ProfileOptions)
  std::string cpu_bind = "cores"; // cores: each local worker on its own cores; none: unbound
  long long gloo_piece_bytes = 0; // real::WorkerOptions::gloo_piece_bytes (0: measured)
  // Runs of each algorithm, interleaved (real::WorkerOptions::repeats); 0: the default, 3 for a
  // short run (default_repeats), else 1.
  int repeats = 0;
  bool plots = true;
  bool progress = true; // a bar on stderr when it is a terminal
};
int validate_command(const ValidateOptions& options);

struct ProfileOptions {
  std::string scenario;
  std::string out; // the profile file (default: <output.dir>/profile.json)
  std::vector<std::string> overrides;
  int workers = 2;
  std::string backend = "gloo";
  std::string emulate_link;
  double timeout_s = 120;
  double profile_time_s = 0.25;
  std::string cpu_bind = "cores";
  long long gloo_piece_bytes = 0;
  // Import instead of measuring:
  std::string nccl_tests_log;
  std::string op = "all_reduce";
  int ranks = 0;
  std::string link = "inter_node";
  std::string torch_profiler_trace; // a PyTorch profiler (Kineto) trace to import
};
int profile_command(const ProfileOptions& options);

// A validate run is short when its algorithms run at most this many steps in all (each one's
// warm-up and measured steps as validate runs it, summed): it then repeats kShortRunRepeats times
// unless --repeats says otherwise, else once.
inline constexpr int kShortRunSteps = 60;
inline constexpr int kShortRunRepeats = 3;

// The algorithms that run for real (the rest are simulated only, so far).
const std::vector<std::string>& real_algorithm_names();

} // namespace overlapsim::cli
