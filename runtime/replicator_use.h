// A replicator phase (runtime.h, ReplicatorPhase) as `overlapsim profile` measures it and the
// simulator prices it (issue 30.3: every op the real runtime executes has its own measured price).
// On a CPU, DeMo's encode is a batched chunk x chunk matrix multiply and a top-k per block, well
// above the memory-bound kernels the roofline prices on a GPU: DeMo's encode of a 0.43 M-parameter
// gpt-tiny was predicted at 1.8 ms against 12.7 ms measured, DeMo's and FlexDeMo's iterations
// 51-52% short. The simulator lists the uses an algorithm issues, with their piece sizes; the
// profile times each use at the sizes issued and records a fixed cost per call and a cost per
// element under price_name(use).
#pragma once

#include "runtime/runtime.h"

#include <compare>
#include <cstdint>
#include <string>

namespace overlapsim {

// What a phase's cost depends on besides its piece's size: the configuration, which phase,
// whether anything was exchanged (what decode reads), and over how many workers (a DeMo decode
// reads every worker's selection).
struct ReplicatorUse {
  ReplicatorConfig config;
  ReplicatorPhase::Kind phase = ReplicatorPhase::Kind::encode;
  bool exchanged = true;
  int group_size = 1;

  friend auto operator<=>(const ReplicatorUse&, const ReplicatorUse&) = default;
};

// A use with the size of the piece it ran on, as the simulator counts its calls.
struct ReplicatorSize {
  ReplicatorUse use;
  std::int64_t elements = 0;

  friend auto operator<=>(const ReplicatorSize&, const ReplicatorSize&) = default;
};

ReplicatorUse replicator_use(const ReplicatorPhase& op);

// The elements a phase's price counts for a piece of `elements`: DeMo transforms whole chunk x
// chunk blocks, the last one zero-padded, so a 192-element piece costs a 4,096-element block (a
// line through such a piece and a whole model put FlexDeMo's pieces 18-24% slow); the others their
// elements.
double priced_elements(const ReplicatorConfig& config, std::int64_t elements);

// The calibration's name of a use's price (model.replicator_phases): the real runtime's op name
// without its piece, then what the cost depends on, e.g. "demo encode (chunk 64, top-k 32, fp32
// values, 2 ranks)", "random decode + update (compression 0.0625, 2 ranks)", "demo encode (no
// exchange)". Two uses of one name cost alike.
std::string price_name(const ReplicatorUse& use);

} // namespace overlapsim
