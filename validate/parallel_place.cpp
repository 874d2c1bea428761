#include "validate/parallel_place.h"

#include <algorithm>
#include <fmt/format.h>
#include <stdexcept>

namespace overlapsim::real {

ParallelPlace parallel_place(const parallel::ParallelLayout& layout, const Topology& topology,
                             int rank, scenario::PipelineSchedule schedule, int grad_accum) {
  if (schedule != scenario::PipelineSchedule::one_f_one_b &&
      schedule != scenario::PipelineSchedule::gpipe)
    throw std::invalid_argument(
        fmt::format("parallelism.schedule: {}: the real runtime runs 1f1b and gpipe",
                    scenario::to_string(schedule)));
  ParallelPlace p;
  const auto c = layout.coordinates(rank);
  p.stage = c.pipeline;
  p.stages = layout.pipeline();
  p.layers = layout.stage_layers(p.stage).front();
  const auto pair = [&](int peer) {
    return &topology.group({std::min(peer, rank), std::max(peer, rank)});
  };
  if (!p.first()) {
    p.previous = layout.rank_of({c.tensor, c.data, c.pipeline - 1});
    p.to_previous = pair(p.previous);
  }
  if (!p.last()) {
    p.next = layout.rank_of({c.tensor, c.data, c.pipeline + 1});
    p.to_next = pair(p.next);
  }
  const auto data = layout.data_group(rank);
  p.data = &topology.group(data);
  p.data_rank = static_cast<int>(std::find(data.begin(), data.end(), rank) - data.begin());
  p.data_size = static_cast<int>(data.size());
  const auto tensor = layout.tensor_group(rank);
  p.tensor = &topology.group(tensor);
  p.tensor_rank = c.tensor;
  p.tensor_size = layout.tensor();
  if (p.pipelined()) {
    const auto pipe = layout.pipeline_group(rank);
    p.embedding = &topology.group({pipe.front(), pipe.back()});
  }
  p.ahead = schedule == scenario::PipelineSchedule::gpipe ? grad_accum : p.stages - p.stage;
  p.sample_share = 1.0 / (layout.tensor() * layout.pipeline());
  return p;
}

} // namespace overlapsim::real
