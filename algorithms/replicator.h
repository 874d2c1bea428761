// The DeToNATION replicators (DeMo, Peng et al. 2024; FlexDeMo, Algorithm 1 of the DeToNATION
// paper): what a worker keeps as decoupled momentum, what it selects from it, what goes on the wire
// between replicas and what it costs the GPU. Used by `demo` (over all workers, DDP-style) and
// `flexdemo` (over the replication group, on the FSDP shard).
//
// Per step, on elements E of momentum (the whole model, or the shard):
//   m <- beta m + g                                   (decoupled momentum, never synchronised)
//   q <- select(m)                                    (demo: chunked DCT-II top-k; random,
//                                                      striding: seeded indices; diloco: all of m
//                                                      every n-th step, nothing otherwise)
//   m <- m - decode(q)                                (what is transmitted leaves the momentum)
//   Q <- exchange(q) over the group, decoded, averaged
//   theta <- theta - lr sign(Q)                        (DeMo-SGD; `sign: false` applies Q)
//
// On the wire per worker and step: demo all-gathers top_k values (value_dtype) and top_k int32
// indices per chunk of chunk x chunk elements (DeMo's 2-D DCT blocks; the indices address a block's
// chunk^2 coefficients, int32 as DeToNATION sends them: int64 would add a third of the bytes for no
// information), so the volume received grows with the group; random and striding all-reduce
// (average) compression x E values, the indices being drawn from a shared seed; diloco all-reduces
// all E momentum values every round(1 / compression) steps.
#pragma once

#include "algorithms/options.h"
#include "algorithms/runtime.h"

#include <cstdint>

namespace overlapsim {

enum class ReplicatorKind : std::uint8_t { demo, random, striding, diloco };

struct ReplicatorConfig {
  ReplicatorKind kind = ReplicatorKind::demo;
  int chunk = 64;            // DCT block side: blocks of chunk x chunk elements
  int top_k = 32;            // coefficients kept per block (demo)
  double compression = 0.0;  // fraction of elements transmitted (random, striding; diloco 1/n)
  bool sign = true;          // DeMo-SGD applies sign(Q)
  double value_bytes = 4;    // value_dtype: fp32 by default (the paper's Appendix B: full
                             // precision transfers train best)
  std::uint64_t seed = 42;   // random: the shared index stream
};

// Reads chunk, top_k, compression, sign, value_dtype, seed (and, when `with_kind`, replicator)
// from an algorithm entry; errors name the key.
ReplicatorConfig replicator_config(const AlgorithmOptions& opts, bool with_kind);

// Decoupled momentum state per parameter: the delta (fp32) and the fp32 master copy of 16-bit
// parameters that DeMo-SGD updates.
double decoupled_state_bytes_per_param(spec::Dtype dtype);

class Replicator {
public:
  // `elements` of momentum (contiguous in `momentum`), exchanged over `group`.
  Replicator(Worker& w, const ReplicatorConfig& config, const Group& group, Slice momentum);

  // Elements one worker transmits per step (0 on a diloco step without synchronisation).
  std::int64_t selected(int step) const;

  // Compute stream: momentum update, selection, removal of what is transmitted.
  void encode(int step);
  // Communication stream: the exchange over the group.
  void exchange(int step);
  // Compute stream: decode the received components and apply the DeMo-SGD update.
  void decode_and_update(int step);

private:
  void op(const char* name, OpCategory category, double bytes_per_element, int step);
  bool syncs(int step) const;

  Worker& w_;
  ReplicatorConfig c_;
  const Group& group_;
  Slice momentum_;
  std::int64_t per_step_ = 0; // elements selected on a step that exchanges
  BufferId values_ = -1, indices_ = -1;
};

} // namespace overlapsim
