// An algorithm: a name, its options, and a factory for the program of one worker's two streams.
#pragma once

#include "runtime/runtime.h"
#include "scenario/scenario.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace overlapsim {

class WorkerProgram {
public:
  virtual ~WorkerProgram() = default;
  virtual void run_compute() = 0;
  virtual void run_comm() = 0;
};

// What one of an algorithm's optimizer steps is, next to DDP's (issue 27.2): the same update from
// the same samples (synchronous); updates each worker makes on its own between synchronisations, or
// from compressed exchanges (local: local SGD, DiLoCo, DeMo); or gradients applied a round late,
// from a number of micro-batches that follows the communication (delayed: ACCO, DPU). Speedups of
// the last two compare steps that are not DDP's: what they are worth shows in time to a target
// loss.
enum class UpdateKind { synchronous, local, delayed };
std::string_view to_string(UpdateKind kind);

class Algorithm {
public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  // Optimizer steps between two synchronisations of the replicas (local SGD's H): a measuring
  // window shorter than one holds none of the algorithm's communication (algorithms/sync_period.h).
  virtual int sync_period() const { return 1; }
  // True when every rank runs the same ops (up to its place in the groups it uses; shards differ
  // by at most one element) and meets other ranks only in collectives over the world, its node
  // or the ranks at its position on every node: then one node's ranks stand for every node's
  // (rank classes, sim/rank_classes.h; issue 29). Point-to-point schedules (CDP) are not.
  virtual bool node_symmetric() const { return false; }
  // Built once per worker, before any stream runs; declares the worker's buffers.
  virtual std::unique_ptr<WorkerProgram> program(Worker& worker) const = 0;
};

// Builds the algorithm of a scenario entry; throws scenario::ScenarioError naming the file and line
// of a bad name or option.
std::unique_ptr<Algorithm> make_algorithm(const scenario::AlgorithmSpec& spec);
std::vector<std::string> algorithm_names();

} // namespace overlapsim
