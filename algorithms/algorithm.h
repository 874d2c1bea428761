// An algorithm: a name, its options, and a factory for the program of one worker's two streams.
#pragma once

#include "algorithms/runtime.h"
#include "scenario/scenario.h"

#include <memory>
#include <string>
#include <vector>

namespace overlapsim {

class WorkerProgram {
public:
  virtual ~WorkerProgram() = default;
  virtual void run_compute() = 0;
  virtual void run_comm() = 0;
};

class Algorithm {
public:
  virtual ~Algorithm() = default;
  virtual std::string name() const = 0;
  // Built once per worker, before any stream runs; declares the worker's buffers.
  virtual std::unique_ptr<WorkerProgram> program(Worker& worker) const = 0;
};

// Builds the algorithm of a scenario entry; throws scenario::ScenarioError naming the file and line of
// a bad name or option.
std::unique_ptr<Algorithm> make_algorithm(const scenario::AlgorithmSpec& spec);
std::vector<std::string> algorithm_names();

} // namespace overlapsim
