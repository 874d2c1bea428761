// Pipeline-parallel schedules: the order in which each pipeline stage runs the forward and backward
// passes of the micro-batches of one step, as the reference implementations order them, and a
// dependency evaluator that times such an order from per-stage op durations (issue 65).
//
// Stage s (0 .. p-1) holds, with v virtual stages (model chunks) per stage, the virtual stages
// vs = c * p + s for its chunks c = 0 .. v-1 (Megatron-LM's interleaved layout); without
// interleaving v = 1 and the chunk is 0.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace overlapsim::parallel {

enum class PipelineSchedule {
  gpipe,          // GPipe (Huang et al., NeurIPS 2019): all forwards, then all backwards
  one_f_one_b,    // 1F1B / PipeDream-Flush (Narayanan et al., SC 2021), Megatron-LM's default
  interleaved,    // interleaved 1F1B over v model chunks per stage (Narayanan et al., SC 2021)
  zero_bubble_h1, // ZB-H1 (Qi et al., "Zero Bubble Pipeline Parallelism", ICLR 2024)
};

// The scenario's names: "gpipe", "1f1b", "interleaved", "zero-bubble".
std::string to_string(PipelineSchedule schedule);
// The schedule a scenario name stands for; throws std::invalid_argument naming the known ones.
PipelineSchedule parse_pipeline_schedule(std::string_view name);

struct PipelineOp {
  enum class Kind {
    forward,         // F
    backward,        // full backward: input and weight gradients (GPipe, 1F1B, interleaved)
    backward_input,  // B of ZB-H1: the input gradient only, what the previous stage waits for
    backward_weight, // W of ZB-H1: the weight gradient, needed by no other stage
  };
  Kind kind = Kind::forward;
  int micro_batch = 0;
  int chunk = 0; // model chunk on this stage; 0 without interleaving

  friend bool operator==(const PipelineOp&, const PipelineOp&) = default;
};

std::string to_string(PipelineOp::Kind kind);
// "F3", "B3.1" (micro-batch 3, chunk 1), "Bi3", "W3": for messages and tests.
std::string to_string(const PipelineOp& op);

// The ops stage s runs, in order, for s = 0 .. stages-1 (outer index = stage).
using PipelineOps = std::vector<std::vector<PipelineOp>>;

// The op order of each stage for `micro_batches` micro-batches of one step:
// - gpipe: F0 .. F(m-1), then the backwards in reverse micro-batch order B(m-1) .. B0 (GPipe's
//   backward replays the forward's clock cycles backwards, autograd's last-in first-out order:
//   the last stage starts with the micro-batch whose forward it has just finished);
// - one_f_one_b: Megatron-LM's forward_backward_pipelining_without_interleaving: warmup
//   min(p - s - 1, m) forwards, then steady one forward and one backward, then the cooldown's
//   remaining backwards;
// - interleaved: Megatron-LM's forward_backward_pipelining_with_interleaving over m * v
//   (micro-batch, chunk) passes: warmup (p - s - 1) * 2 + (v - 1) * p forwards capped at m * v
//   (all of them when m == p), steady 1F1B, cooldown; the k-th forward runs chunk (k / p) % v,
//   the k-th backward chunk v - 1 - (k / p) % v, each on micro-batch (k / (p v)) p + k % p;
//   requires m % p == 0;
// - zero_bubble_h1: the handcrafted ZB-H1 of sail-sg/zero-bubble-pipeline-parallelism (its
//   WeightGradStore in Megatron-LM's 1F1B): 1F1B's forwards and backwards (warmup
//   min(p - s - 1, m), so as many micro-batches in flight), each backward as B then W. Stage 0
//   runs every W right after its B. Stage s > 0 queues (FIFO) the W of its steady-state backwards
//   i < s, of its last steady one and of every cooldown one; after the last steady B and after
//   each cooldown B of a backward i >= s it runs the oldest queued W, and the rest at the end.
//   The deferred Ws fill the cooldown bubble. (sail-sg runs an unqueued B and W as one full
//   backward for its batched p2p; here they are two ops, B's gradient leaving before W runs, as
//   in the paper's Figure 3.)
// virtual_stages must be 1 except for interleaved. Throws std::invalid_argument on stages < 1,
// micro_batches < 1, virtual_stages < 1, v != 1 without interleaving or m % p != 0 with it.
PipelineOps pipeline_schedule(PipelineSchedule schedule, int stages, int micro_batches,
                              int virtual_stages = 1);

// How long one op of one model chunk takes on a stage. A full backward takes
// backward_input + backward_weight; a schedule without W can put the whole backward in either.
struct ChunkDurations {
  double forward = 0;
  double backward_input = 0;
  double backward_weight = 0;
  double backward() const { return backward_input + backward_weight; }
};

// durations[s][c]: stage s, chunk c.
using StageDurations = std::vector<std::vector<ChunkDurations>>;
// The same durations for every chunk of every stage.
StageDurations uniform_durations(int stages, int virtual_stages, ChunkDurations each);

struct PipelineTiming {
  double makespan = 0;                // the last op's end; the step starts at 0
  std::vector<double> first_start;    // per stage: when its first op starts
  std::vector<double> busy;           // per stage: the sum of its ops' durations
  std::vector<double> bubble;         // per stage: makespan - first_start - busy, its idle time
                                      // after it started (the warmup wait for input not included)
  std::vector<double> peak_in_flight; // per stage: the most micro-batches forwarded and not yet
                                      // backwarded (B for ZB), a chunk counting 1/v
  // Idle share of the pipeline's device time: 1 - sum(busy) / (p * makespan). With every stage
  // alike it is each stage's (makespan - busy) / makespan, the papers' bubble fraction, e.g.
  // (p-1) / (m+p-1) for GPipe and 1F1B.
  double bubble_fraction = 0;
};

// Times `ops` (one list per stage, each run in order, one op at a time): F(mb, c) on virtual stage
// vs = c p + s starts once F(mb) of virtual stage vs - 1 has ended, plus p2p_seconds when that is
// on another stage; a backward (full or B) once its own F has and the backward (full or B) of
// vs + 1 has, plus p2p_seconds across stages; W once its own B has. Throws std::invalid_argument
// on a shape mismatch, an out-of-range micro-batch or chunk, a negative duration or an op listed
// twice, and std::runtime_error naming the stuck stages when the order deadlocks (an op waits on
// one that can never run).
PipelineTiming evaluate_schedule(const PipelineOps& ops, const StageDurations& durations,
                                 double p2p_seconds = 0);

// The papers' closed forms of bubble_fraction above (idle over makespan) with every stage alike
// and no p2p time:
// - gpipe, one_f_one_b: (p-1) / (m+p-1) for any forward and backward times (Huang et al.;
//   Narayanan et al.);
// - interleaved: (p-1) / (v m + p - 1), i.e. bubble over compute time (p-1) / (v m), the
//   1/v-th of 1F1B's (p-1) / m (Narayanan et al., Sec. 2.2.2);
// - zero_bubble_h1 with T_F = T_B = T_W = T (Qi et al., Sec. 3.1): for m >= p bubble
//   (p-1)(T_F + T_B - T_W) = (p-1) T over compute 3 m T: (p-1) / (3m + p - 1). For m < p too few
//   Ws fill the drain: the F and B chain takes (m+p-1)(T_F + T_B) as in 1F1B without W, then
//   stage 0 runs its last W: makespan (2m + 2p - 1) T, fraction 1 - 3m / (2m + 2p - 1).
// Throws std::invalid_argument where pipeline_schedule would.
double ideal_bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                             int virtual_stages = 1);

// The same for given per-chunk durations, every stage alike, no p2p time. GPipe, 1F1B and
// interleaved do not depend on them. ZB-H1 with m >= p: each stage idles
// (p-1)(T_F + T_B - min(T_W, T_F, T_B)) beside its m (T_F + T_B + T_W) of compute: Qi et al.'s
// (p-1)(T_F + T_B - T_W) where T_W <= T_F and T_W <= T_B; a longer W fills only part of a
// cooldown gap (checked against evaluate_schedule). Throws std::invalid_argument where the other
// overload would, on a negative duration, and for ZB-H1 with m < p and T_F, T_B, T_W not all
// equal (evaluate_schedule times that).
double ideal_bubble_fraction(PipelineSchedule schedule, int stages, int micro_batches,
                             int virtual_stages, ChunkDurations per_chunk);

} // namespace overlapsim::parallel
