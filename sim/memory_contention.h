// Workers that share one memory system slowing each other's memory-bound ops (hw::ModelSpec's
// memory_shared_by; issue 30.2). CPU workers on one host share its DRAM bandwidth and last-level
// cache: two workers streaming at once each ran 1.3-1.5x slower than one alone (a C loop of
// 64 MB passes: 1.8-2.1 ms alone, 2.65-2.97 ms beside its twin; DDP's copies 1.52 ms alone and
// 1.98-2.25 ms beside the other worker's, ACCO's optimizer step 4.9 ms beside the other's compute
// against 7.3 ms with both stepping). The profile prices those ops with every worker running them
// at once (as DDP, ZeRO-1 and FSDP do) and alone; algorithms whose workers drift apart (ACCO,
// DPU, DiLoCo's inner steps, CDP's stages) ran theirs at the alone price and were predicted
// 30-90% slow.
//
// Mechanism, as sim/compute_interference.h's: the op runs at its alone price; the progress it
// lost while another worker of its memory system ran a memory-bound op, (contended - alone) x the
// share of the op's time that overlapped one, is made up right after it, on the same stream.
// With k workers per memory system the overlap counts each other worker's busy time / (k - 1),
// the contended price being all k at once. A memory-bound op without an alone price (the outer
// step) still counts as busy to the others. Under rank classes a rank that is not simulated is
// busy when the rank standing for it is (its own class: all the time the op runs).
//
// By hand (tests/memory_contention_test.cpp): a 10 ms step (5 ms alone) on two workers at once
// runs 5 + 5 = 10 ms; beside a worker whose GPU runs at a third of the speed it runs 5 ms, overlap
// 5 ms, make-up 5 ms: 10 ms, and the slow worker's, begun 0.8 ms later, runs 15 ms, 9.2 of them
// overlapped, make-up 5 x 9.2 / 15 ms of work at a third of the speed: 24.2 ms.
#pragma once

#include <vector>

namespace overlapsim::sim {

class MemoryContention {
public:
  // `shared_by` consecutive ranks per memory system (1 or less: none shared); `stand_in`, per
  // rank of the world, the simulated rank whose ops it runs at the same times (itself, or its
  // representative under rank classes, sim/rank_classes.h).
  MemoryContention(std::vector<int> stand_in, int shared_by);

  bool enabled() const { return shared_by_ > 1; }

  // A memory-bound op starts or ends on `rank` (any stream; ops at once count once).
  void begin(int rank);
  void end(int rank);

  // Seconds the other workers of `rank`'s memory system have been busy so far, over (k - 1).
  double others_busy(int rank) const;

private:
  double busy_seconds(int rank) const;

  std::vector<int> stand_in_;
  int shared_by_;
  std::vector<int> busy_;            // memory-bound ops running, per rank
  std::vector<double> busy_since_;   // when the current busy period began
  std::vector<double> busy_seconds_; // closed busy periods, summed
};

} // namespace overlapsim::sim
