// asc-wfbp: wait-free backpropagation with merged small tensors, the S-SGD baseline of the DreamDDP
// paper ([45], Shi et al., "Exploiting simultaneous communications to accelerate data parallel
// distributed deep learning", INFOCOM 2021, which merges gradients with the rule of MG-WFBP, Shi,
// Chu and Li, INFOCOM 2019). Each group of layers is all-reduced on the communication stream as
// soon as the backward of its last (input-side) layer is done; the optimizer step follows the
// last all-reduce. Against ddp, whose groups are 25 MiB buckets whatever the timing, the groups
// here come from per-layer times (algorithms/layer_cost_estimate.h).
//
// The merge rule (MG-WFBP): walk the layers from the output with the open group's all-reduce
// start tau_c = max(when the previous all-reduce ends, when the group's last gradient is ready).
// The next layer l joins the group when its backward ends before tau_c + a, a being the
// all-reduce's startup time: the group then starts at most `a` later and one startup `a` is saved,
// so merging never makes the iteration longer in the alpha-beta model. Otherwise the group is
// closed (its all-reduce ends at tau_c + a + its bytes' time) and l opens the next one. With a
// layer table (a = 0, each layer's own measured time) layers merge only while the stream is
// backlogged, which changes nothing: the table's times do not reward merging.
// Simultaneous communications (ASC-WFBP's addition to WFBP): a group whose gradients are ready
// while earlier all-reduces are in flight starts at once on another communicator (option
// `simultaneous`, default 2, round robin), sharing the links and overlapping its startup with
// their transfers; 1 gives the serial stream of MG-WFBP and of the DreamDDP cost model. Not
// modelled: ASC-WFBP's per-iteration search over fusion and simultaneity; the merge rule above
// still assumes one stream.
#pragma once

#include "algorithms/algorithm.h"
#include "algorithms/descriptor.h"
#include "algorithms/partial_sync_schedule.h"

#include <vector>

namespace overlapsim {

struct LayerGroup {
  int first = 0; // [first, last) in forward order; groups are listed from the output
  int last = 0;
};

// `costs.comm_s[l]` is a layer's all-reduce alone (startup included), `startup_s` its startup.
std::vector<LayerGroup> asc_wfbp_groups(const LayerCosts& costs, double startup_s);

std::unique_ptr<Algorithm> make_asc_wfbp(const scenario::AlgorithmSpec& spec);

const AlgorithmDescriptor& asc_wfbp_descriptor();

} // namespace overlapsim
