// Collectives across WAN sites of unequal size, site by site (issue 64 item 4: 16,384 GPUs as
// 683/683/682 nodes). sites.h's cross-site phase is a ring among the same-position GPUs of every
// site, which needs sites of equal size; here the K sites hold n_0, ..., n_{K-1} of the group's
// members and (docs/MODEL.md "WAN sites of unequal size"):
//
//   all-reduce of S bytes: a ring reduce-scatter inside each site (n_s - 1 steps of S / n_s), after
//   which member i of site s holds the site's sum of the array's slice [i / n_s, (i + 1) / n_s);
//   across sites, each piece of the common refinement of the K sites' slicings (length l) is
//   all-reduced by a ring among its K holders, one per site in site order (2 (K - 1) steps of
//   l / K): member i of site s sends 2 (K - 1) / K x S x |slice_s(i) ^ slice_{s+1}(j)| to each
//   member j of the next site whose slice overlaps its own (one or two where sizes are close),
//   2 (K - 1) / K x S / n_s in all; then a ring all-gather inside each site.
//   reduce-scatter: the first two phases, the ring across sites a reduce-scatter (K - 1 steps of
//   l / K): each member ends with 1 / K of its site's slice, S / (K n_s) (members of smaller sites
//   hold larger shards; the runtime's memory keeps S / N).
//   all-gather (`bytes` the shard b, S = b N): the mirror, across sites first, then inside.
//
// Where sizes are equal this is sites.h's scheme (one piece a member, its peer the same
// position). The ring across sites runs fused as one collective of the whole group (its pieces'
// rings chain every member of every site together): every member's flows start when the last
// has reduce-scattered inside its site, and the phase ends when the last flow ends.
#pragma once

#include "sim/collective/algorithm.h"

#include <map>
#include <memory>
#include <utility>
#include <vector>

namespace overlapsim::sim::collective {

// A group cut by WAN site where the sites hold unequal numbers of its members.
struct SiteSlices {
  std::vector<const Group*> intra; // per site, in order of first member: its members
  std::vector<int> site;           // per member (group index): its site's index in `intra`
  // Per member: the members of the next site whose slice overlaps its own, with the overlap as
  // a fraction of the array; and the members of the previous site whose slice overlaps its own.
  std::vector<std::vector<std::pair<int, double>>> next;
  std::vector<std::vector<int>> prev;
  double max_latency = 0; // the slowest hop across sites
};

// The fraction of an array that slice i of n and slice j of m share.
double slice_overlap(int i, int n, int j, int m);

class UnequalSites final : public Algorithm {
public:
  // `unequal`: the cluster's sites hold unequal node counts (otherwise sites.h runs every group).
  UnequalSites(Fabric& fabric, bool unequal) : fabric_(fabric), unequal_(unequal) {}
  // The group's slices, or nullptr where it does not span two sites or does so evenly.
  const SiteSlices* slices(const Group& group);
  // s.op: all-reduce, reduce-scatter or all-gather, on a group slices() cuts.
  CollectiveOutcome run(int rank, const Scope& s, double bytes, int root) override;

private:
  // The phase across sites: `steps` ring steps per piece, `fraction` x the piece's bytes sent.
  double across(int rank, const Scope& s, const SiteSlices& sl, int steps, double array);
  Fabric& fabric_;
  bool unequal_;
  std::map<int, std::unique_ptr<SiteSlices>> slices_; // by group id; null: not cut
  // Folded on an oversubscribed fat tree: the phase across sites' hold per byte of array, by
  // (group id, steps).
  std::map<std::pair<int, int>, double> hold_per_byte_;
};

} // namespace overlapsim::sim::collective
