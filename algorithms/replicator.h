// The DeToNATION replicators (DeMo, Peng et al. 2024; FlexDeMo, Algorithm 1 of the DeToNATION
// paper) as one worker runs them: the decoupled momentum it keeps per piece of the model, what it
// selects, what goes on the wire between the replicas of its group, and the DeMo-SGD update. Used
// by `demo` (one piece, the whole model, over all workers) and `flexdemo` (one piece per wrap
// unit's shard, over the replication group). The arithmetic of each phase is in runtime.h
// (ReplicatorPhase); its price in replicator_cost.h.
//
// On the wire per worker, piece of E elements and exchanging step (k = config.selected(E)):
//   demo:            all-gather of k values (value_dtype) and k int32 indices: a worker receives
//                    (n - 1) x k x (value + 4) bytes, growing with the group (the paper's
//                    "all_gather ... which is inherently slow").
//   random/striding: all-reduce (average) of k values; the indices come from the shared seed or
//                    the stride, so at equal compression half of demo's bytes (fp32 values).
//   diloco:          all-reduce (average) of the E gradient elements every round(1/compression)
//                    steps (DeToNATION's full replicator with replicate_every), nothing between.
#pragma once

#include "algorithms/options.h"
#include "runtime/runtime.h"

#include <cstdint>
#include <vector>

namespace overlapsim {

// Reads replicator (when `with_kind`), compression, chunk, top_k, decay, sign, value_dtype and
// seed from an algorithm entry; errors name the key.
ReplicatorConfig replicator_config(const AlgorithmOptions& opts, bool with_kind);
// The options replicator_config reads: DeMo's, and with the replicator kind FlexDeMo's.
std::vector<OptionSchema> replicator_options(bool with_kind);

// Bytes per parameter of the state a replicator keeps beside the parameters and gradients: the
// fp32 master copy of 16-bit parameters (4, none for fp32) and the fp32 decoupled momentum (4,
// none for diloco, which keeps no momentum).
double decoupled_state_bytes_per_param(ReplicatorKind kind, scenario::Dtype dtype);

struct ReplicatorPiece {
  Slice grads;    // the (reduced) gradient of the piece
  Slice params;   // its parameters
  Slice momentum; // its decoupled momentum (any buffer; unset for diloco)
};

class Replicator {
public:
  // `grad_scale` turns the gradients' sums into means (1 / (micro-batches x reducing ranks)).
  Replicator(Worker& w, const ReplicatorConfig& config, const Group& group,
             std::vector<ReplicatorPiece> pieces, double grad_scale);

  // Compute stream: momentum update, selection, removal of what is sent.
  void encode(int step);
  // Communication stream: the exchange over the group (nothing on steps that do not exchange).
  void exchange(int step);
  // Compute stream: decode what was received and apply the DeMo-SGD update.
  void decode_and_update(int step);

  // Bytes this worker puts on the wire per exchanging step, as its collectives count them
  // (all-gather: its own block; all-reduce: the data), summed over pieces.
  double bytes_per_exchange() const;

private:
  ReplicatorPhase phase(std::size_t piece, ReplicatorPhase::Kind kind, int step) const;
  bool exchanges(int step) const;

  Worker& w_;
  ReplicatorConfig c_;
  const Group& group_;
  std::vector<ReplicatorPiece> pieces_;
  double grad_scale_;
  double lr_;
  std::vector<Slice> values_, indices_; // per piece: its exchange region
};

} // namespace overlapsim
