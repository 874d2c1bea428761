// Where a real worker sits in a 3D-parallel job (issue 65.9): its pipeline stage and neighbours,
// the groups it exchanges activations, gradients and the tied embedding on, and the data-parallel
// group its algorithm sees as the world, all from parallel/layout.h's rank mapping, so that the
// real run places ranks exactly as the simulator does. Free of LibTorch
// (tests/validate/parallel_place_test.cpp).
#pragma once

#include "parallel/layout.h"
#include "runtime/topology.h"

namespace overlapsim::real {

struct ParallelPlace {
  int stage = 0;
  int stages = 1;
  LayerRange layers; // the stage's layers in the whole model's order
  int previous = -1; // the rank of the previous stage with the same (tensor, data) coordinates
  int next = -1;     // and of the next
  const Group* to_previous = nullptr; // {min, max} of this rank and the neighbour, as the
  const Group* to_next = nullptr;     // simulator names the pair (sim/sim_worker.cpp)
  const Group* data = nullptr;        // the ranks with the same (tensor, stage): DDP's world
  // The first and the last stage of this rank's pipeline (Megatron-LM's embedding group): the
  // tied word embedding's gradient is summed and its update sent on it. Null with one stage.
  const Group* embedding = nullptr;
  int data_rank = 0; // this rank's index in `data`: which samples it reads
  int data_size = 1;
  const Group* tensor = nullptr; // the tensor-parallel group (same data and pipeline coordinates)
  int tensor_rank = 0;
  int tensor_size = 1;
  // Forwards run before micro-batch i's backward: min(m, i + ahead), GPipe all m, 1F1B
  // (PipeDream-Flush) p - stage (parallel/pipeline_schedule.h's warm-up plus one).
  int ahead = 1;
  // A pipeline's tensor x pipeline ranks train the same samples: each reports this share of them.
  double sample_share = 1;

  bool pipelined() const { return stages > 1; }
  bool tensor_parallel() const { return tensor_size > 1; }
  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
};

// `rank`'s place; `topology` interns the groups (the job's, not a view). Throws
// std::invalid_argument for what the real runtime does not run: interleaved 1F1B and ZB-H1.
ParallelPlace parallel_place(const parallel::ParallelLayout& layout, const Topology& topology,
                             int rank, scenario::PipelineSchedule schedule, int grad_accum);

} // namespace overlapsim::real
