#include "sim/collective/sites.h"

#include "sim/collective/hierarchical.h"
#include "sim/collective/ring.h"

namespace overlapsim::sim::collective {

CollectiveOutcome Sites::run(int rank, const Scope& s, double bytes, int /*root*/) {
  if (s.op == CollectiveOp::all_reduce)
    return two_level_all_reduce(fabric_, rank, s, bytes, *fabric_.site_split(s.group),
                                "sites/fused", "sites/steps");
  return half_op(rank, s, bytes, s.op == CollectiveOp::all_gather);
}

CollectiveOutcome Sites::half_op(int rank, const Scope& s, double bytes, bool gather) {
  const Split& sp = *fabric_.site_split(s.group);
  const int i = s.group.index_of(rank);
  const Group& intra =
      *sp.intra[static_cast<std::size_t>(sp.node_index[static_cast<std::size_t>(i)])];
  const Group& cross =
      *sp.cross[static_cast<std::size_t>(sp.position[static_cast<std::size_t>(i)])];
  const int tag = s.group.id + 1; // as two_level_all_reduce: one collective per s.seq
  const int L = intra.size(), K = cross.size();
  CollectiveOutcome in_site{0, ""}, across{0, ""};
  if (gather) {
    // Each shard to its peers in the other sites first, then the site gathers K shards a rank.
    across = ring_steps(fabric_, rank, Scope{cross, s.seq * 3 + 1, tag, s.op}, K - 1, bytes);
    if (L > 1)
      in_site = ring_steps(fabric_, rank, Scope{intra, s.seq * 3 + 2, tag, s.op}, L - 1, bytes * K);
  } else {
    if (L > 1)
      in_site = ring_steps(fabric_, rank, Scope{intra, s.seq * 3 + 0, tag, s.op}, L - 1, bytes / L);
    across =
        ring_steps(fabric_, rank, Scope{cross, s.seq * 3 + 1, tag, s.op}, K - 1, bytes / L / K);
  }
  CollectiveOutcome out{in_site.bytes_sent + across.bytes_sent,
                        fabric_.steps() ? "sites/steps" : "sites/fused"};
  fabric_.add_class(out, rank, next_rank(intra, rank), in_site.bytes_sent);
  fabric_.add_class(out, rank, next_rank(cross, rank), across.bytes_sent);
  out.classified = true;
  return out;
}

} // namespace overlapsim::sim::collective
