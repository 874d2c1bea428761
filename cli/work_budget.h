// Before simulating: an estimate of the work, wall time and memory a command asks for, refused past
// a documented budget (issue 15.6: a bucket per parameter, a million nodes or a million steps ran
// on with no end in sight, or until memory ran out; issue 63.5-6: the estimate predicts time too,
// and counts what it missed: ring-step messages, ACCO's accumulation, a collective per layer).
#pragma once

#include "runtime/runtime.h"
#include "scenario/scenario.h"

#include <string>
#include <vector>

namespace overlapsim::cli {

// One simulation's work (one algorithm of a run, one size of `collective`).
struct SimulationWork {
  std::string label;
  double gpus = 0;            // simulated GPUs (fewer than the cluster's where rank classes fold)
  double world = 0;           // the cluster's GPUs: a folded run still walks some per-GPU tables
  double compute_ops = 0;     // forward/backward, optimizer and copy ops, all simulated GPUs
  double collective_ops = 0;  // collective calls, summed over the simulated GPUs
  double messages = 0;        // ring-step messages (cluster.collectives: steps), all GPUs
  double message_seconds = 0; // what one such message costs (it grows with the nodes)
  double collective_seconds = 0; // what one collective call costs (it grows with a node's GPUs)
  double micro_batches = 0;      // per step and GPU
  double collectives_per_step = 0;
  double steps = 0; // simulated, warm-up included
  // rank_classes: statistical: the extreme GPU keeps a clock per GPU it stands for (the GPUs
  // left out and itself) and draws for each at each compute op (sim/slowest_of.h): their count
  // times a GPU's compute ops, and what each costs (kSecondsPerStoodForOp and the draws').
  // Past sim::statistical_clocks() GPUs stood for (sim/slowest_of.h, order statistics): only the
  // slowed GPUs keep a clock and draws (stood_for_ops); the others' groups cost
  // kSecondsPerDrawnClockOp a clock and op (drawn_clock_ops), and each GPU's sequence length is
  // drawn once per micro-batch (length_draws, kSecondsPerLengthDraw).
  double stood_for_ops = 0;
  double stood_for_op_seconds = 0;
  double drawn_clock_ops = 0;
  double length_draws = 0;
  double ops() const { return compute_ops + collective_ops; }
};

struct WorkEstimate {
  double ops = 0;   // the largest simulation's trace events (forward/backward ops, collectives)
  double gpus = 0;  // the most GPUs one simulation runs
  double world = 0; // the cluster's GPUs
  double collective_ops = 0; // the most collective calls of one simulation
  double seconds = 0; // predicted wall time of every simulation the command runs (a fit, below)
  // Memory per GPU squared: SimGrid's per-flow state of collectives that span every GPU, 1.1 B;
  // 110 B with ring-step messages.
  double gpu_pair_bytes = 1.1;
  std::vector<SimulationWork> simulations;
  std::string breakdown;      // how the ops were counted, for the error message
  std::string time_breakdown; // how the time was estimated
};

// Past this many ops a run takes many minutes and gigabytes of trace (4096 GPUs x 10 steps of a
// 32-layer model, ~4M ops, took 101 s on one core).
constexpr double kWorkBudgetOps = 2e7;

// The wall-time model (issue 63.5), a fit (bench/work_estimate.py prints it against measured runs)
// to `overlapsim run`, `collective` and `sweep` on a 2-core shared x86 machine (Release build), on
// a 4 x 2M-parameter model, GPT-Neo presets and the default scenario: 1-1,048,576 GPUs, 2-20,000
// steps, bucket_cap 1 KB-25 MiB, collectives nccl and steps (256 nodes; 128 x 8):
//   0.08 s per command (start, parsing, outputs) + per simulation 10 ms (fork, SimGrid's engine,
//   the platform) + 2.5 us a compute op + 25 us x (1 + log2(simulated GPUs per node) / 8) a
//   collective call (SimGrid's flows, the trace: 25 us on one GPU; 34-37 us on a node of 8, 80k
//   calls at bucket_cap 160KB and 12.8M at 1KB)
//   + 3 us per GPU of the cluster (folded too: rank tables, trees over the nodes)
//   + per ring-step message 2 us on two-level rings, 2 us x nodes^0.4 on a flat ring over nodes
//   (SimGrid re-solves the sharing of every concurrent message at each one's end: 16 us a message
//   on 128 nodes, 31 us on 1,024).
constexpr double kSecondsPerCommand = 0.08;
constexpr double kSecondsPerSimulation = 0.01;
constexpr double kSecondsPerComputeOp = 2.5e-6;
constexpr double kSecondsPerCollective = 25e-6;
constexpr double kSecondsPerClusterGpu = 3e-6;
constexpr double kSecondsPerMessageBase = 2e-6;
constexpr double kMessageNodesExponent = 0.4;
// Loading a sweep point's scenario and checking its algorithms (before anything runs).
constexpr double kSecondsPerSweepLoad = 2e-3;
// Calls of 1 MiB or more (a model's gradient buckets at torch's 25 MiB), where SimGrid's flows
// and not the call's own bookkeeping set the cost (issue 64, "done when": the estimate within 2x
// of every row of bench/scale.py --issue-table), a fit measured on this 2-core machine (CPU
// seconds user + system, loaded) to DDP x GPT-Neo 2.7B x 10 steps on DGX H100 nodes, 202 calls
// of 26 MB a step, the whole run less its folded memory-advice probe: per call and simulated GPU
// 7.3 us on 8 nodes (1.55 s), 11.5 us on 32 (7.0 s), 28 us on 128 (64.6 s; 1.69 GB), so
// 13.3 us x (simulated nodes / 32)^0.48, and at least 10 us (folded on one or two nodes: 0.43 s
// for 8 of 1,024 GPUs, 1.1-1.3 s statistical, 16 of 256; 0.47 s on one node in full). Smaller
// calls and `collectives: steps` keep the fit above (25 us on one GPU, 1 KB to 160 KB calls).
// rank_classes: statistical, per GPU stood for and compute op: 0.25 us for its clock and
// slowdown, 0.2 us more for a jitter draw, 0.9 us more for a sequence-length draw (a fit
// measured on this machine, DDP x GPT-Neo 2.7B x 10 steps, 16 GPUs simulated, ddp and its
// statistical zero1 advice probe: jitter 1.42 s CPU on 1,024 GPUs and 3.48 s on 4,096 (0.42 us);
// on 1,024 lengths 2.43 s (1.15 us), stragglers 0.97-1.08 s (0.23-0.30 us); 16,384 GPUs with
// jitter, lengths, stragglers and a 2:1 rail fat tree 41.6 s (1.57 us), 83% of it in
// std::normal_distribution, SlowestOf's draws).
// Past 1,024 GPUs stood for (order statistics): 0.1 us per group clock and compute op (its sum's
// mean, variance and quantile), and 1.9 us per GPU stood for and micro-batch with per-GPU lengths
// (its length drawn, its sum folded, its group's slowest solved for; a fit to the realistic
// frontier bench, bench/scale.py --frontier: ddp and its zero1 probe 2.7 s CPU on 16,384 GPUs,
// 8.7 s on 131,072, 26 us more per GPU and simulation, 3 of them the per-GPU term above and
// 2 the stragglers' clocks). The extreme's compute ops are whole forward and backward passes
// for acco, acco-wp, dpu and diloco (no per-layer gradient hooks): 2 per micro-batch and 4 a
// step (measured: acco 8.8 a step at 3.65 micro-batches, diloco 3.3, on 1,024 GPUs).
// FSDP's compute stream waits for a unit's all-gather at each forward and backward, and each
// wait re-solves every group's slowest over its GPUs: 0.08 us per GPU stood for and wait, 2 a
// layer and micro-batch (a fit: fsdp and its ddp reference 17.1 s CPU on 131,072 GPUs, 3.5 s on
// 16,384, against ddp's 4.4 s and 1.4 s a simulation).
constexpr double kSecondsPerRestartGpu = 0.08e-6;
constexpr double kSecondsPerDrawnClockOp = 0.1e-6;
constexpr double kSecondsPerLengthDraw = 1.9e-6;
constexpr double kSecondsPerStoodForOp = 0.25e-6;
constexpr double kSecondsPerStoodForJitter = 0.2e-6;
constexpr double kSecondsPerStoodForLength = 0.9e-6;
constexpr double kLargeCollectiveBytes = 1024.0 * 1024;
constexpr double kSecondsPerLargeCollective = 13.3e-6;
constexpr double kLargeCollectiveNodes = 32;
constexpr double kLargeCollectiveExponent = 0.48;
constexpr double kSecondsPerLargeCollectiveAtLeast = 10e-6;
// A full simulation of nodes something tells apart (jitter, per-GPU lengths, stragglers, WAN
// sites, a node-placed oversubscribed fat tree: sim::rank_classes_obstacle) pays twice that per
// large call: the GPUs' flows no longer start and end together, so SimGrid re-solves more often
// (a fit measured on this machine: 256 GPUs, ddp and its full zero1 probe, jitter 25.7-32.2 s
// and per-GPU lengths 24.7-33.0 s CPU against 2 x 7.0-7.9 s without; 64 GPUs, two WAN sites
// and leaf-spine-2to1 6.6 s against 2 x 1.2 s).
constexpr double kLargeCollectiveToldApart = 2;

// The default of --max-time: a command predicted to take longer is refused with the estimate.
constexpr double kDefaultMaxTimeS = 600;

WorkEstimate estimate_work(const scenario::Scenario& scenario);
// `overlapsim collective`: one simulation of `op` per size.
WorkEstimate estimate_collective_work(const scenario::Scenario& scenario, CollectiveOp op,
                                      int sizes);
// The seconds one simulation is predicted to take (the fit above).
double predicted_seconds(const SimulationWork& w);

// Throws std::invalid_argument naming the estimate and what to change, unless `force`.
void check_work_budget(const scenario::Scenario& scenario, bool force);

// Throws std::invalid_argument when `seconds` (the estimate `what` describes) is past
// `max_time_s`: the message names the estimate and --max-time.
void check_time_budget(const std::string& source, double seconds, const std::string& what,
                       double max_time_s);
void check_time_budget(const scenario::Scenario& scenario, double max_time_s);

// Parses --max-time ("10min", "2h", "90s"; hw/units.h's durations); throws std::invalid_argument
// naming the option. Empty: kDefaultMaxTimeS.
double parse_max_time(const std::string& text);

// The simulator's own memory for one algorithm's simulation (issue 26.3): a fit to peak resident
// sizes measured on this project's DDP runs (512-16,384 GPUs, 1-20 steps; within 15%):
// 40 MB + 100 B per op + 9 KiB per GPU + 1.1 B per GPU squared (SimGrid's per-flow state of
// collectives that span every GPU), plus the traces the parent keeps (72 B per op and algorithm;
// issue 63.6: twice that while the largest is read back, its serialized copy beside it).
// With cluster.collectives: steps, 110 B per GPU squared instead of 1.1 (a fit: 100-110 B resident
// on 512-2,048 GPUs as 64-256 nodes x 8, one step; 4,096 GPUs ran out of a 4 GiB limit at 1.6 GB
// resident; issue 63.6).
// A collective call costs 800 B more than another op (a fit: 161 MB resident for 128k calls of 8
// GPUs on one node at bucket_cap 1KB, 56 MB for 12k calls of one GPU; issue 63.5d).
// Folded, a run still keeps tables per GPU of the cluster (its rank's class, the trees over the
// nodes): 310 B each (a fit: 87 MB on 131,072 and 373 MB on 1,048,576 GPUs of 8 simulated).
// The address space is 2.5 x that (a fit: the parent's VmPeak over its VmHWM, 1.74 GB over 689 MB,
// reading back 200,000 steps of one GPU, 2.6M ops: vectors and strings that grow by doubling map
// more than they touch; issue 63.6: 878 MiB of ulimit -v ran out after 11 s, estimated 675 MB),
// plus every actor's stack (two per GPU, 128 KiB each plus a guard page).
constexpr double kAddressSpacePerResident = 2.5;
struct MemoryEstimate {
  double resident_bytes = 0;
  double address_space_bytes = 0; // beyond what this process maps already
  double actor_stacks = 0;
  std::string breakdown;
};

MemoryEstimate estimate_memory(const scenario::Scenario& scenario);
MemoryEstimate estimate_memory(const WorkEstimate& work, double kept_traces);

// Throws std::invalid_argument with the estimate when `parallel` simulations of the scenario at
// once would need more memory than `max_memory_bytes` (0: the memory available now, MemAvailable
// of /proc/meminfo) or more address space than this process's limit (ulimit -v).
void check_memory_budget(const scenario::Scenario& scenario, double max_memory_bytes,
                         int parallel = 1);
void check_memory_budget(const std::string& source, const MemoryEstimate& m,
                         double max_memory_bytes, int parallel = 1);

// "out of memory" errors (a simulation's, or the parent's own std::bad_alloc) with the estimate
// made before the run beside them, so that a user sees what was expected.
std::string with_memory_estimate(const std::string& error, const MemoryEstimate& m);

// Parses --max-memory ("8GB", "512MiB"); throws std::invalid_argument naming the option.
double parse_max_memory(const std::string& text);

} // namespace overlapsim::cli
