// The trace: every op either runtime executed, with the same schema for simulated and measured
// runs, so that metrics, plots and the critical-path analysis are computed by the same code from
// both.
#pragma once

#include "runtime/runtime.h"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace overlapsim {

struct TraceEvent {
  double start = 0; // seconds since the run started
  double end = 0;
  std::int32_t worker = 0;
  StreamKind stream = StreamKind::compute;
  OpCategory category = OpCategory::forward;
  std::int32_t name = 0;    // index into Trace::names
  std::int32_t detail = -1; // index into Trace::names (e.g. "ring/fused"), -1 for none
  std::int32_t step = -1;
  std::int32_t micro_batch = -1;
  double bytes = 0; // bytes this worker sent (communication)
  double flops = 0; // FLOPs of a compute op
  // Communication: the process group (its id and size) and the root (broadcast, reduce) or the
  // other rank (send, recv), so a trace shows who waited for whom; -1 where none applies.
  std::int32_t group = -1;
  std::int32_t group_size = -1;
  std::int32_t peer = -1;
  // Bytes a point-to-point receive took in (its message); 0 for every other op. `bytes` counts
  // each transfer once, at its sender, which the metrics sum and the analysis relies on (a receive
  // sends nothing, so it waits for its peer's send).
  double received = 0;
  // Of `bytes`, what crossed a network between nodes, and a WAN between sites (issue 25.6); the
  // rest stayed inside a node. A measured trace leaves both 0 unless its runtime knows them.
  double inter_node_bytes = 0;
  double wan_bytes = 0;
};

struct MemorySample {
  double time = 0;
  std::int32_t worker = 0;
  double bytes = 0; // total in use on the worker after the change
};

struct StepMark {
  double time = 0;
  std::int32_t worker = 0;
  std::int32_t step = 0;
  double samples = 0;
};

struct AccumulationMark {
  std::int32_t worker = 0;
  std::int32_t step = 0;
  std::int32_t micro_batches = 0;
};

using MemoryByCategory = std::array<double, kMemoryCategories>; // indexed by MemoryCategory

struct Trace {
  int workers = 0;
  int gpus_per_node = 1;
  bool measured = false;
  double end_time = 0;
  std::vector<std::string> names;
  std::vector<TraceEvent> events;
  std::vector<MemorySample> memory;
  std::vector<StepMark> steps;
  std::vector<AccumulationMark> accumulations;
  std::vector<MemoryByCategory> peak_memory; // per worker; activations at their peak
  // Rank classes (issue 29; sim/rank_classes.h): empty when every GPU ran. Otherwise the trace's
  // workers are classes of alike GPUs: worker w is GPU `representative[w]`, and `class_of[g]` is
  // the worker that stands for GPU g of the job. Metrics weigh each worker by its class's size
  // (means over GPUs), count samples for every member, and give per-GPU lists for every GPU.
  std::vector<std::int32_t> representative;
  std::vector<std::int32_t> class_of;
  // Under tensor or pipeline parallelism (issue 65.7): each GPU's place in the job, "stage 2, tp 0,
  // dp 1" (the axes it has), which the timelines add to its name; empty otherwise.
  std::vector<std::string> gpu_roles;

  // GPUs of the job (workers, or every GPU the classes stand for).
  int gpus() const { return class_of.empty() ? workers : static_cast<int>(class_of.size()); }
  // The GPU worker w is (itself without classes).
  int gpu_of(int worker) const {
    return representative.empty() ? worker : representative[static_cast<std::size_t>(worker)];
  }
  // GPUs each worker stands for: 1 each without classes.
  std::vector<double> class_sizes() const;

  std::int32_t intern(std::string_view name);
  const std::string& name_of(std::int32_t id) const { return names[static_cast<std::size_t>(id)]; }

  // Adds another trace's records (re-interning its names); peak memory is merged per worker. Used
  // to assemble a measured run from the traces each rank recorded.
  void append(const Trace& other);

  // A compact binary form, to hand a trace from a simulation process to its parent.
  std::string serialize() const;
  static Trace deserialize(std::string_view bytes);

private:
  std::unordered_map<std::string, std::int32_t> index_;
};

} // namespace overlapsim
