// How long a collective takes when the model came from a per-layer time table (model.profile:
// *.tsv): the table says what each layer's all-reduce costs (comm_s, measured by the DreamDDP
// authors as a blocking all-reduce of that layer's parameters), so a collective over a slice of a
// model-shaped buffer (parameters, gradients, or any buffer of the same length) takes the sum of
// the comm_s of the layers it covers, a partly covered layer pro rata. Reduce-scatter and
// all-gather are half a ring all-reduce (N-1 of its 2(N-1) steps). The table's time replaces the
// network model's: it already holds the latency and bandwidth of the cluster it was measured on.
#pragma once

#include "algorithms/model_state.h"
#include "runtime/runtime.h"

#include <optional>

namespace overlapsim::sim {

class TableCommTime {
public:
  explicit TableCommTime(const hw::ModelSpec& model);

  // The table's duration for `call` on a buffer of `buffer_elements` elements; nullopt when the
  // model has no table, the op is not a reduction or gather, or the buffer is not model-shaped
  // (the network model times it then).
  std::optional<double> seconds(const CollectiveCall& call, std::int64_t buffer_elements) const;

private:
  bool active_ = false;
  ParamLayout layout_;
  std::vector<double> comm_s_; // per layer
};

} // namespace overlapsim::sim
