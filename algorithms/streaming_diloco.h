// Streaming DiLoCo (Douillard et al. 2025, "Streaming DiLoCo with overlapping communication",
// arXiv 2501.18512), options `H` (inner steps per outer step of a fragment, default 10),
// `fragments` (P, default 4), `overlap_steps` (tau, default 1), `alpha` (default 0.5), `outer_lr`
// (default 0.7) and `outer_momentum` (default 0.9).
//
// The model's layers are cut into P contiguous groups of equal count (fragments). Fragment p is
// synchronised every H inner steps, staggered by p*H/P steps (Sec. 2.2), so an outer period
// carries P all-reduces of about 1/P of the model instead of one of all of it. A fragment's sync
// snapshots its parameters into an in-flight buffer and starts their all-reduce on the
// communication stream; the worker keeps taking inner steps, and tau steps later (Sec. 2.3) it
// waits for the average, takes the outer Nesterov step of DiLoCo on the fragment (its own anchor
// and momentum) and merges (Sec. 2.3, Eq. 3):
//   theta_p <- alpha theta_p,local + (1 - alpha) theta_p,global
// where theta_p,local has moved on tau inner steps since the snapshot and theta_p,global is the
// fragment's new anchor. The inner optimizer continues from the merged parameters.
//
// A sync whose merge would fall after the run's last step is not started. With P = 1, tau = 0 and
// alpha = 0 this is diloco (the same all-reduce of the same values, the same outer step).
// Memory: diloco's (anchor and momentum in fp32, 8 bytes per parameter, optimizer state) plus the
// in-flight buffer in the model's dtype, counted for the fragments in flight at once (buffers).
// The paper's 4-bit quantised exchange is not modelled: fragments travel in the model's dtype.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"

#include <vector>

namespace overlapsim {

// The steps after which fragment syncs start: (c, p) with c the number of inner steps done (1 ..
// total), in the order they start. Fragment p starts when c = p*H/P (mod H), c >= 1, and
// c + tau <= total.
struct FragmentSync {
  int after_step = 0; // c
  int fragment = 0;   // p
};
std::vector<FragmentSync> streaming_sync_schedule(int total_steps, int period, int fragments,
                                                  int overlap_steps);

std::unique_ptr<Algorithm> make_streaming_diloco(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& streaming_diloco_descriptor();

} // namespace overlapsim
