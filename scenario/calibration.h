// Calibration profiles: what `overlapsim profile` measured on real hardware (per-layer forward and
// backward times, the optimizer's cost, memory bandwidth, and alpha-beta fits of the links), in a
// JSON file that scenarios reference with `model.profile` and `cluster.calibration`. The schema is
// documented in docs/VALIDATE.md ("Profile and calibration"). Also the alpha-beta fit itself and
// the import of nccl-tests logs, so that users can calibrate links from the tables they already
// have.
#pragma once

#include "comm/ring_shape.h"
#include "hw/model.h"
#include "hw/presets.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace overlapsim::scenario {

inline constexpr const char* kCalibrationSchema = "overlapsim-calibration/1";

struct LayerTiming {
  std::string name;
  double fwd_time_per_sample_s = 0;
  double bwd_time_per_sample_s = 0;
  double activation_bytes_per_sample = 0; // kept for backward; 0: not measured
  // Under tensor parallelism (Calibration::tensor_parallel), what the layer's TP collectives cost
  // one micro-batch's forward and backward in situ: the layer timed layer by layer with its
  // all-reduces inline, every TP rank in lockstep as a run executes it, less the same layer timed
  // without them (validate/profiler.cpp). Measured, seconds per micro-batch; 0: not measured.
  double tp_forward_s = 0;
  double tp_backward_s = 0;
};

struct SizeTime {
  double bytes = 0;
  double seconds = 0; // until the first member finished (a group of one: its own time)
  // How much later than the others the member that calls last finishes (measured with each
  // member calling late in turn, validate/profile_statistics.h's last_caller_lag); 0: not
  // measured, or none. Over an emulated 100 Mbit/s link Gloo's pieced reduce-scatter: 5-11 ms,
  // the late caller last in 501 of 502 steps of the runs; its one-call all-reduce: none (the
  // late caller last in 61 of 133, by chance).
  double last_caller_lag_s = 0;
  // How far apart the members end when they call together (the median over the synchronised
  // repeats of the last member's end less the first's; validate/profile_statistics.h's
  // end_spread); 0: not measured, or none. Over an emulated 100 Mbit/s link Gloo's one-call
  // all-reduce ends 0-10 ms apart with no lag of the last caller: which member ends last is
  // chance, and the simulator picks one (sim/collective/flows.cpp).
  double end_spread_s = 0;
};

// t = steps x latency + bus_factor x bytes / bandwidth, fitted to measured (size, time) points.
struct LinkFit {
  std::string op; // the collective the points were measured with, e.g. "all_reduce"
  int ranks = 0;  // group size of those measurements
  double latency_s = 0;
  double bandwidth_Bps = 0;
  double max_relative_residual = 0; // worst |fit - measured| / measured over the points
  std::vector<SizeTime> points;
  bool in_place = false; // a local op (ranks 1) whose output overwrote its input
  // send_recv only: what a message paid beyond this fit when the other direction carried a
  // message (hw::LinkSpec::reverse_busy_s); 0: not measured or nothing.
  double reverse_busy_s = 0;

  // The time of one op of `bytes` over a group of one rank (`ranks` 1, the fit one pass over the
  // array): the measured points, interpolated; beyond them the fit's slope from the nearest
  // point, never below the fixed cost (latency_s).
  double local_seconds_for(double bytes) const;
};

struct Calibration {
  std::string source; // what produced it: "overlapsim profile", "nccl-tests"
  std::string device; // e.g. "cpu (2 threads)"
  std::string model;  // the model it was measured on, with its micro-batch
  int micro_batch = 0;
  std::vector<LayerTiming> layers;
  // The tensor-parallel size the layers' shards and their tp_forward_s / tp_backward_s were
  // measured at (0: no tensor parallelism).
  int tensor_parallel = 0;
  double optimizer_time_per_param_s = 0; // one optimizer step, per parameter updated
  // Optimizer steps over a flat slice of `params` parameters, measured in seconds, ascending (issue
  // 30.1): the shards ZeRO-1, FSDP and ACCO step. A step's cost is not linear in its size where the
  // state fits a cache (a CPU's L3: a 2-worker ZeRO-1 shard stepped 4.7x faster than the full
  // step, not 2x); the simulator interpolates between them.
  std::vector<std::pair<double, double>> optimizer_points;
  // The same steps with each worker alone on the memory system it shares (hw::ModelSpec's
  // optimizer_alone_points, memory_shared_by); empty: not measured.
  std::vector<std::pair<double, double>> optimizer_alone_points;
  // Workers that shared one memory system while the ops above were measured (1: none).
  int memory_shared_by = 1;
  // ACCO's estimate over a committed step of the same shard, both measured after a forward and
  // backward (issue 30.3: priced as a step, the estimate was 13-19% short on a CPU, where it
  // reads the master and moments without writing them and writes another buffer); 0: not measured.
  double optimizer_estimate_ratio = 0;
  // Forward + backward of a micro-batch run right after another's backward (ACCO's and DPU's
  // rounds, gradient accumulation) over the layers' times, which are measured after a whole step
  // (the optimizer's traffic evicts the weights from a CPU's caches: the bench's mlp ran its
  // accumulated micro-batches 20% faster); 0: not measured.
  double back_to_back_compute_ratio = 0;
  // How far apart the workers' compute drifts: the sigma of a one-second op's noise, an op of t
  // seconds drawing sigma_1s / sqrt(t) (scenario::Jitter::sigma_1s); 0: not measured (one worker).
  double compute_jitter_sigma_1s = 0;
  // How much the machine's compute speed moved while the profile ran (issue 62.11): forward +
  // backward over the last third of each layer pass's timed repeats against the first third,
  // less 1 (+0.05: 5% slower by the end). A record for the reader, priced nowhere; absent: not
  // measured.
  std::optional<double> compute_drift;
  // DiLoCo's outer step (outer Nesterov from the anchor, momentum, the inner optimizer's state
  // reloaded), measured over the whole model, per parameter (issue 30.3): priced by the memory
  // bandwidth of a copy it was 12x short on a CPU, where it runs many element-wise passes.
  double outer_step_time_per_param_s = 0;
  // The same one worker at a time (memory_shared_by): the workers' outer steps follow the
  // parameters' all-reduce, whose members end apart, so they overlap only in part (gpt-tiny over
  // 100 Mbit/s: 4.5-5.2 ms in the runs, 7.3-8.0 ms priced at the price of both at once).
  double outer_step_alone_time_per_param_s = 0;
  double memory_bandwidth_Bps = 0; // element-wise copies (the simulator's HBM bandwidth)
  // Each element-wise op's own price (issue 30.3: accumulate and fill borrowed the copy's
  // bandwidth): by op name, a fixed cost per call and a cost per byte.
  std::map<std::string, hw::ModelSpec::MemoryOpPrice> memory_ops;
  // Each replicator phase the scenario's algorithms run (DeMo's and FlexDeMo's encode, decode +
  // update), by runtime/replicator_use.h's price_name: a fixed cost per call and a cost per element
  // of the piece (priced_elements: DeMo counts its whole blocks; issue 30.3: on a CPU DeMo's
  // encode cost 7x what its memory-bound kernels imply).
  std::map<std::string, hw::ModelSpec::PhasePrice> replicator_phases;
  // Fraction of compute speed lost while a collective runs on the same device (hw::GpuSpec).
  std::optional<double> comm_interference;
  // Fraction of communication speed lost while the same device computes (hw::GpuSpec).
  std::optional<double> compute_interference;
  // The two shares of the collective kinds measured apart from the all-reduce, by calibration op
  // name (hw::GpuSpec's comm_interference_by_op and compute_interference_by_op).
  struct InterferenceShares {
    std::optional<double> comm_interference;
    std::optional<double> compute_interference;
  };
  std::map<std::string, InterferenceShares> interference_by_op;
  // Share of compute speed the communication stream's compute gets beside the compute stream's.
  std::optional<double> comm_stream_share;
  // The compute a collective's start takes from its worker, by calibration op name: fixed_s and
  // per_byte_s of the call's data (hw::GpuSpec's collective_start_cost_by_op; CPU workers).
  std::map<std::string, hw::GpuSpec::StartCost> collective_start_costs;
  // Seconds a collective issued beside compute waits to start (hw::GpuSpec).
  std::optional<double> collective_handoff_wait_s;
  // Seconds the first compute op after such a wait takes longer (hw::GpuSpec).
  std::optional<double> compute_handoff_wait_s;
  std::optional<LinkFit> intra_node;
  std::optional<LinkFit> inter_node;
  // Fits of the other collectives the algorithms use, on the same links (profile measures them
  // where they differ: a CPU's Gloo implements each its own way).
  std::vector<LinkFit> intra_node_ops;
  std::vector<LinkFit> inter_node_ops;
  // Collectives over a group of one rank (one worker), by op and whether in place: NCCL and Gloo
  // still launch, copy or average what a larger group would (ZeRO-1's one-rank reduce-scatter
  // and all-gather took 2.4-2.7 ms a bucket with Gloo, 17-30 us with NCCL on an H100, where an
  // out-of-place one of the same 22 MB took 0.8 ms), which a network of no links prices at nothing.
  std::vector<LinkFit> local_ops;
};

// The byte mapping that makes `link`'s alpha-beta model give `op`'s measured time (both of
// ring_shape form): the simulator runs the op with bytes_for(S) bytes, S the full array as
// nccl-tests counts it. Where the group has the ranks the op was measured on, the measured points
// themselves, interpolated (Gloo's pieced all-gather on loopback: flat at 1.5 ms up to 400 kB, then
// 150 MB/s, a knee no alpha-beta line follows: the fit put 4 MB at 47 ms against 27 ms measured);
// elsewhere, and beyond the points, the fit: S' = S x B_link / B_op + steps (a_op - a_link)
// B_link / k.
struct BytesMap {
  double scale = 1;
  double offset = 0;
  int ranks = 0; // the group size the points were measured on
  // (S, S') at each measured S, ascending in both (a larger message never runs faster).
  std::vector<std::pair<double, double>> table;
  // (S, the last caller's lag in seconds) at each measured S, ascending in S; empty: none.
  std::vector<std::pair<double, double>> last_caller_lags;
  // (S, the members' end spread in seconds) likewise (SizeTime::end_spread_s).
  std::vector<std::pair<double, double>> end_spreads;

  double bytes_for(double array_bytes, int group_size) const;
  // How much later than the others the member that called last ends (SizeTime::last_caller_lag_s):
  // interpolated between the sizes it was measured at, the nearest one's beyond them; 0 where
  // the group does not have the measured ranks.
  double last_caller_lag_for(double array_bytes, int group_size) const;
  // How far apart the members end when they call together (SizeTime::end_spread_s), the same way.
  double end_spread_for(double array_bytes, int group_size) const;
};
BytesMap collective_bytes_map(const LinkFit& link, const LinkFit& op);

// The latency the simulated link gets so that every op's measured points are reachable: the fit's
// latency, lowered where some op's point took less than its steps x that latency (no byte count
// runs a collective faster than its latency floor). Gloo on loopback all-reduces one element per
// rank in 1 ms where the fit says 2 x 1.15 ms: ACCO's and DPU's count all-reduces were predicted
// at 2.3-3.9 ms against 0.4-0.9 ms measured in the run. The maps of collective_bytes_map against
// the lowered link still give every op its own fitted and measured times.
double latency_floor(const LinkFit& link, const std::vector<LinkFit>& ops);

// Throws std::runtime_error naming the file and what is wrong.
Calibration read_calibration(const std::string& path);
std::string calibration_json(const Calibration& calibration);

// The shape a fit of the calibration op `op` (all_reduce, reduce_scatter, all_gather, broadcast,
// reduce, all_to_all, send_recv) over `ranks` ranks has: comm::ring_shape's (the one statement of
// bus factors) for two ranks and more; a group of one rank (local_ops) 1 step and S, a fixed cost
// and one pass over the array. Throws std::runtime_error on an unknown op.
comm::RingShape ring_shape(std::string_view op, int ranks);

// Weighted least squares (weights 1/t: the large sizes pin the bandwidth, the small ones still
// count for the latency). Throws when fewer than two distinct sizes are given or the fit is not
// physical (negative bandwidth); a negative intercept is clamped to zero latency.
LinkFit fit_alpha_beta(std::string op, int ranks, std::vector<SizeTime> points);

// Parses the table nccl-tests prints (all_reduce_perf and friends): the out-of-place time column
// (microseconds) against the size column (bytes). Ranks are counted from its "#  Rank" lines when
// `ranks` is 0. Throws naming the line of a malformed row.
LinkFit import_nccl_tests(std::string_view log_text, const std::string& name_for_errors,
                          std::string op, int ranks);

} // namespace overlapsim::scenario
