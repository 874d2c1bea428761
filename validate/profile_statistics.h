// How `overlapsim profile` turns repeated timings into one number per quantity, and how many
// repeats it takes. No LibTorch: the profiler (profiler.cpp) and its tests share it.
#pragma once

#include "runtime/collective_size.h"
#include "runtime/replicator_use.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::real {

struct ProfileOptions {
  // Timed repeats per quantity (a layer, the optimizer step, a collective size): at least
  // `repeats`, more while they add up to less than `min_time_s`, at most `max_repeats`. Fast ops
  // on a noisy machine need many for a stable mean; a GPU model's 300 ms step needs few.
  int repeats = 5;
  double min_time_s = 0.25;
  int max_repeats = 200;
  double max_bytes = 0; // largest collective size; 0: the model's gradients
  double min_bytes = 4096;
  int sizes = 7; // geometric steps from min_bytes to max_bytes
  // The sizes the algorithms issue, with their calls (cli/profile_sizes.h): measured too, so that
  // an op is priced at its own size, not interpolated across a knee of the curve.
  std::map<CollectiveSize, std::int64_t> issued;
  // The replicator phases the algorithms run, with their piece sizes and calls
  // (runtime/replicator_use.h): each use timed at the smallest and largest piece.
  std::map<ReplicatorSize, std::int64_t> issued_replicator_phases;
  // Under tensor parallelism: this rank's TP group (its ranks), whose process group exists; each
  // layer's TP collectives are then timed in situ (scenario::LayerTiming's tp_forward_s).
  std::vector<int> tensor_group;
};

// At most this many of the issued sizes per op and group size, the most called first: FSDP's units
// and DDP's buckets have a handful of sizes; each costs the profile about min_time_s.
inline constexpr int kMaxIssuedSizes = 8;

// The message sizes a sweep of `op` (the calibration's name) on `ranks` ranks measures, ascending:
// first 0, the smallest message (one element per rank: the counts and flags that ACCO and DPU
// all-reduce every round ran in 0.4-0.9 ms on loopback Gloo, where 4 kB took 3.3-3.9 ms); o.sizes
// (at least 2) geometric steps from o.min_bytes to max_bytes; the issued sizes of `op` on `ranks`
// ranks (kMaxIssuedSizes, the most called first), each unless within 2% of a size already there.
std::vector<double> sweep_sizes(const ProfileOptions& options, double max_bytes,
                                std::string_view op, int ranks);

// The parameter counts profile times an optimizer step over, ascending: `shards` (the shards the
// algorithms step) and the counts they issue (o.issued's kOptimizerStep sizes, the most called
// first, kMaxIssuedSizes of them), each below `n` (the full step, measured anyway) and not within
// 2% of a count already there.
std::vector<std::int64_t> optimizer_step_sizes(const ProfileOptions& options, std::int64_t n,
                                               std::vector<std::int64_t> shards);

// What an op costs a run on average: the mean of its repeats without the slowest 5% (rounded
// down), so that a one-off page fault or preemption in a short profile does not weigh as much as
// hundreds of repeats. Not the median: an iteration's time is the sum of its ops' times, and on a
// busy or virtualised CPU their distribution has a slow tail that the run pays and the median
// drops. Empty input: 0.
double expected_time(std::vector<double> seconds);

// How much the machine's compute speed moved while the profile ran (Calibration::compute_drift),
// from each layer pass's timed repeats in the order they ran (name -> seconds): the sum over the
// passes of the median of their last third over the sum of the medians of their first third,
// less 1 (a third: n / 3 repeats, rounded down). Passes with fewer than 3 repeats are left out;
// none left: NaN. Medians, not expected_time: one stall is not a drift.
double compute_drift(const std::map<std::string, std::vector<double>>& passes);

// The last of each `n` consecutive values (`n` at most 1: all of them): a repeat that runs an op
// `n` times to time it in the state its predecessor leaves (a GPU step issued while the one
// before runs) keeps only that one. A trailing incomplete group is dropped.
std::vector<double> every_nth(const std::vector<double>& values, int n);

// One collective's repeats as each member timed them (`durations[member][repeat]`, each from the
// common start after a barrier): the expected time until the first member finished, over each
// repeat's fastest (scenario::SizeTime::seconds). Members with fewer repeats than the first are
// cut to the shortest; nothing: 0.
double first_end_time(const std::vector<std::vector<double>>& durations);

// Repeats of the lag probe per member of the group: each member calls late in turn this often.
// Three: an end that falls either way by chance shows the late caller last in all six repeats of
// two members one time in 64.
inline constexpr int kLastCallerRounds = 3;

// How much later than the others the member that calls a collective last finishes
// (scenario::SizeTime::last_caller_lag_s), from `ends[member][repeat]`: each member's end after
// the barrier that began the repeat, member k % n having called late in repeat k. The median
// over the repeats where the late member ended last in every one, else 0: a lag the simulator
// gives the last caller must show whichever member is late, not an end that falls either way by
// chance (over an emulated 100 Mbit/s link Gloo's one-call all-reduce ended 0-10 ms apart with
// the late caller last in 61 of 133 steps; its pieced reduce-scatter 5-10 ms apart, the late
// caller last in 501 of 502). Not the least: one repeat in a few ended 2.8 ms apart where the
// runs' steps were 5-6 ms apart.
double last_caller_lag(const std::vector<std::vector<double>>& ends);

// How far apart the members of a collective end when they call it together
// (scenario::SizeTime::end_spread_s), from `durations[member][repeat]` as first_end_time takes
// them: the median over the repeats of the last member's time less the first's; 0 for one member
// or none. Where the late caller's lag is 0, which member ends last is chance, yet the members
// still end apart: DDP's workers began their optimizer steps 3-5 ms apart after the bucket's
// all-reduce over an emulated 100 Mbit/s link (gpt-wide, gpt-tiny), and so met in the memory
// system less than the simulator's, which left together (0.1-0.4 ms apart).
double end_spread(const std::vector<std::vector<double>>& durations);

// What a message pays when the opposite direction carries one (hw::LinkSpec::reverse_busy_s), from
// the same message's repeats timed alone and loaded, paired by repeat (cut to the shorter): the
// median of loaded - alone, never below 0; nothing: 0. Not expected_time's mean: over TCP through
// a queue a loaded repeat now and then stalls for a retransmission, and five repeats cannot tell
// how often: the mlp's 1.77 MB message over an emulated 100 Mbit/s link paid 21-25 ms loaded in
// three repeats, 60 and 147 ms in the other two, a mean of 55 ms against the median's 25, and three
// profiles of one scenario read 32, 42 and 98 ms, the last predicting CDP-v2's step 54% slow
// (measured 0.31-0.35 s in all three validates; a probe of 22-25 ms predicts it within 6%).
double paired_median_delay(const std::vector<double>& alone, const std::vector<double>& loaded);

// How many timed repeats a quantity gets when one repeat takes `one` seconds.
int repeats_for(const ProfileOptions& options, double one);

// The rounds (every probe kind once) the interference loop runs between its checks of how much
// compute ran beside them: enough to cover twice `compute_repeats` forwards + backwards of
// `compute_s` each, a round lasting the sum of the probes' medians alone (each at least 1 us) or,
// where longer, what one took on the clock alone (`wall_round_s`). Priced from the medians
// only, a message probe that read 0 set 1 us a round and the loop ran for over ten minutes.
int interference_rounds(int compute_repeats, double compute_s,
                        const std::vector<double>& probe_medians, double wall_round_s);

// Forwards + backwards that one interference probe lasts where the gradients' all-reduce lasts
// longer (a slow link): a collective's own costs (its Gloo work, the threads it wakes, its
// result's copy) come once per probe, where a run's whole-gradient collectives over the link pay
// them once per hundreds of milliseconds. Probes of one forward + backward priced the mlp's
// compute slowed 0.22-0.32 beside them over an emulated 100 Mbit/s (ACCO's and DPU's measured
// throughput 15-27% above the prediction); probes of eight, 0.03-0.08 (9-12%).
inline constexpr int kComputeRepeatsPerProbe = 8;

// The elements of the interference loop's all-reduce: the gradients' `n` where their all-reduce
// (`full_s`) lasts at most kComputeRepeatsPerProbe forwards + backwards of `compute_s`, else the
// share of them that lasts that long, at least one element per rank (`world`).
std::int64_t interference_probe_elements(std::int64_t n, double compute_s, double full_s,
                                         int world);

// What a collective's start costs its worker's compute (hw::GpuSpec's StartCost), from what
// compute lost beside the start of two sizes (`small_s` beside `small_bytes` of data, `large_s`
// beside `large_bytes`): the line through both, its fixed part at least 0 (else through the
// origin and the larger point), flat at their mean when the larger start cost less (noise, or a
// start whose cost does not grow). None when neither lost anything.
struct StartCostLine {
  double fixed_s = 0;
  double per_byte_s = 0;
};
std::optional<StartCostLine> start_cost_line(double small_bytes, double small_s, double large_bytes,
                                             double large_s);

// How many fills of `fill_s` a start-cost probe runs back to back, timed as one, to last as long
// as the model's longest layer pass (`longest_pass_s`): what a start costs is what the compute
// beside it loses while it runs, and a start's work outlasts a short fill (gpt-tiny's all-gather
// of 0.9 MB over 100 Mbit/s: 0.3-0.5 ms lost by fills of 2 ms, 1.8-3.2 ms by fills of 20-32 ms,
// 4-6 ms by the forwards of FSDP's units). At least 1, at most 20 (40 ms of 2 ms fills).
int start_probe_fills(double longest_pass_s, double fill_s);

// What a moving transfer takes of the compute beside it (hw::GpuSpec's comm_interference of a
// collective kind), from compute timed alone and beside the transfer in interleaved pairs (alone[i]
// just before beside[i]; the machine drifts by more than the share between loops): the median over
// the pairs of beside / alone - 1 is the transfer's weight against the compute's 1 (the
// simulator's sharing, sim/comm_interference.h), never below 0; a pair with a time that is not
// positive is skipped. Nothing: none.
std::optional<double> paired_transfer_weight(const std::vector<double>& alone,
                                             const std::vector<double>& beside);
// The weight as the share of the compute's speed it takes: weight / (1 + weight).
std::optional<double> paired_transfer_share(const std::vector<double>& alone,
                                            const std::vector<double>& beside);

// The shard (elements per rank) of a transfer probe's collective: `shard`, doubled until its call
// lasts `at_least_s` by `lasts` (seconds for a shard of so many elements), at most `most`. A
// transfer that ends before the compute beside it does prices part of the compute alone.
std::int64_t outlasting_shard(std::int64_t shard, std::int64_t most, double at_least_s,
                              const std::function<double(std::int64_t)>& lasts);

} // namespace overlapsim::real
