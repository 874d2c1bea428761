#include "sim/collective/hierarchical.h"

#include "sim/collective/ring.h"

namespace overlapsim::sim::collective {

CollectiveOutcome two_level_all_reduce(Fabric& fabric, int rank, const Scope& s, double bytes,
                                       const Split& sp, const char* label_fused,
                                       const char* label_steps) {
  const int i = s.group.index_of(rank);
  const Group& intra =
      *sp.intra[static_cast<std::size_t>(sp.node_index[static_cast<std::size_t>(i)])];
  const Group& cross =
      *sp.cross[static_cast<std::size_t>(sp.position[static_cast<std::size_t>(i)])];
  // Sub-collectives of this group's collective number s.seq; site and node splits of one group
  // never run the same collective, so they share the tag.
  const int tag = s.group.id + 1;
  const int G = intra.size(), M = cross.size();
  CollectiveOutcome a{0, ""}, c{0, ""};
  if (G > 1)
    a = ring_steps(fabric, rank, Scope{intra, s.seq * 3 + 0, tag, s.op}, G - 1, bytes / G);
  const auto b =
      ring_steps(fabric, rank, Scope{cross, s.seq * 3 + 1, tag, s.op}, 2 * (M - 1), bytes / G / M);
  if (G > 1)
    c = ring_steps(fabric, rank, Scope{intra, s.seq * 3 + 2, tag, s.op}, G - 1, bytes / G);
  CollectiveOutcome out{a.bytes_sent + b.bytes_sent + c.bytes_sent,
                        fabric.steps() ? label_steps : label_fused};
  fabric.add_class(out, rank, next_rank(intra, rank), a.bytes_sent + c.bytes_sent);
  fabric.add_class(out, rank, next_rank(cross, rank), b.bytes_sent);
  out.classified = true;
  return out;
}

CollectiveOutcome Hierarchical::run(int rank, const Scope& s, double bytes, int /*root*/) {
  return two_level_all_reduce(fabric_, rank, s, bytes, *fabric_.split(s.group),
                              "hierarchical/fused", "hierarchical/steps");
}

} // namespace overlapsim::sim::collective
