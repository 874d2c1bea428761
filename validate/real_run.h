// One worker process of a real run: joins the job (a c10d store and one Gloo process group per
// group and stream), profiles the model and the links when asked, runs each algorithm of the
// scenario with RealWorker (a compute thread and a communication thread), and hands everything
// to rank 0, which returns the merged, measured traces and the loss curves.
#pragma once

#include "runtime/collective_size.h"
#include "runtime/replicator_use.h"
#include "scenario/calibration.h"
#include "scenario/scenario.h"
#include "trace/trace.h"

#include <exception>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim::real {

// Where this process sits in the job and how it reaches the others.
struct JobEnv {
  int rank = 0;
  int world = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  std::string store_file;  // set by the local launcher: a FileStore, no listening socket
  std::string bind_addr;   // the address Gloo binds (the worker's own); default master_addr
  std::string gloo_iface;  // GLOO_SOCKET_IFNAME, when given
  std::string launched_by; // "overlapsim", "torchrun-style", "slurm", "open-mpi"
};

// Reads RANK/WORLD_SIZE (torchrun and our launcher), SLURM_PROCID/SLURM_NTASKS or
// OMPI_COMM_WORLD_RANK/SIZE, with MASTER_ADDR/MASTER_PORT; nullopt when none is set. Throws
// std::runtime_error when they are inconsistent (a rank outside the world).
std::optional<JobEnv> job_env_from_environment();

struct LossPoint {
  int step = 0;
  double samples = 0; // samples consumed by the whole job up to the end of this step
  double loss = 0;    // mean over the step's micro-batches on every rank
  double wall_time_s = 0;
};

struct MeasuredRun {
  std::string algorithm; // the scenario's label
  Trace trace;           // every rank's ops, measured: true
  std::vector<LossPoint> loss;
};

struct WorkerOptions {
  double timeout_s = 120;       // one collective, and the rendezvous
  bool profile = true;          // measure per-layer and link costs first
  double profile_time_s = 0.25; // ProfileOptions::min_time_s
  std::string backend = "gloo";
  // Gloo's reduce-scatter/all-gather pieces (RealContext::gloo_piece_elements); 0: what the link
  // moves in about 20 ms, measured at the start (validate/collective_pieces.h).
  std::int64_t gloo_piece_bytes = 0;
  // The collective sizes the algorithms issue, measured by the profile (ProfileOptions::issued).
  std::map<CollectiveSize, std::int64_t> profile_sizes;
  // And the replicator phases they run (ProfileOptions::issued_replicator_phases).
  std::map<ReplicatorSize, std::int64_t> profile_replicator_phases;
  // Times each algorithm runs, interleaved (every algorithm's first run, then every algorithm's
  // second, ...), so that the machine's drift meets every algorithm alike (issue 62.11).
  int repeats = 1;
  // Called on rank 0 as the job's parts (the profile, then each algorithm's runs) end: parts
  // done, all.
  std::function<void(int, int)> progress;
};

struct WorkerResult {
  bool root = false; // rank 0 holds the rest
  std::optional<scenario::Calibration> calibration;
  std::int64_t gloo_piece_bytes = 0; // the pieces every collective ran in; 0 on NCCL
  // How far apart the ranks' time 0 may be (validate/clock_origin.h): 0 with every rank on rank
  // 0's host, else the bound of the worst rank's estimate.
  double clock_uncertainty_s = 0;
  std::vector<std::vector<MeasuredRun>> runs; // [algorithm][repeat], in the scenario's order
};

// The topology a real job has: the scenario's nodes x gpus_per_node when that is the job's size,
// else one worker per node.
std::pair<int, int> job_shape(const scenario::Scenario& scenario, int world);

// Throws std::runtime_error when this build cannot run `backend` ("gloo" or "nccl").
void check_backend(const std::string& backend);

// One line for a worker's error: LibTorch's c10::Error carries a C++ backtrace of ~16 lines in
// what() (a peer that stopped showed it as Gloo's timeout); the message alone says what happened.
std::string error_summary(const std::exception& e);

WorkerResult run_worker(const scenario::Scenario& scenario, const JobEnv& env,
                        const WorkerOptions& options);

} // namespace overlapsim::real
