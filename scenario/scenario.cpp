#include "scenario/scenario.h"
#include "scenario/checkpointing.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace overlapsim::scenario {

double ClusterSpec::slowdown_of(int rank) const {
  double s = 1.0;
  for (const auto& st : stragglers)
    if (st.gpu == rank)
      s *= st.slowdown;
  return s;
}

int ClusterSpec::node_type_of(int node) const {
  for (std::size_t t = 0; t < node_types.size(); ++t)
    if (std::binary_search(node_types[t].nodes.begin(), node_types[t].nodes.end(), node))
      return static_cast<int>(t);
  return -1;
}

const hw::GpuSpec& ClusterSpec::gpu_of_node(int node) const {
  const int t = node_type_of(node);
  return t < 0 ? gpu : node_types[static_cast<std::size_t>(t)].gpu;
}

ActivationCheckpointing checkpointing_of(const ModelConfig& m, int every) {
  ActivationCheckpointing c;
  const int layers = static_cast<int>(m.spec.layers.size());
  c.first = 0;
  c.last = layers;
  if (layers >= 2 && m.spec.layers.front().name == "embedding" &&
      m.spec.layers.back().name == "head" && !m.dims.empty() && m.dims.contains("n_heads")) {
    c.first = 1;
    c.last = layers - 1;
  }
  c.every = every;
  return c;
}

double dtype_bytes(Dtype dtype) {
  return dtype == Dtype::fp32 ? 4.0 : 2.0;
}

std::string to_string(Dtype dtype) {
  switch (dtype) {
  case Dtype::fp32:
    return "fp32";
  case Dtype::bf16:
    return "bf16";
  case Dtype::fp16:
    return "fp16";
  }
  return "?";
}
std::string to_string(Optimizer optimizer) {
  switch (optimizer) {
  case Optimizer::adamw:
    return "adamw";
  case Optimizer::sgd:
    return "sgd";
  case Optimizer::sgd_momentum:
    return "sgd-momentum";
  }
  return "?";
}
std::string to_string(NetworkModel model) {
  return model == NetworkModel::exact ? "exact" : "tcp";
}
std::string to_string(CollectiveFidelity fidelity) {
  return fidelity == CollectiveFidelity::nccl    ? "nccl"
         : fidelity == CollectiveFidelity::fused ? "fused"
                                                 : "steps";
}
std::string to_string(CollectiveAlgorithm algorithm) {
  switch (algorithm) {
  case CollectiveAlgorithm::ring:
    return "ring";
  case CollectiveAlgorithm::tree:
    return "tree";
  case CollectiveAlgorithm::hierarchical:
    return "hierarchical";
  case CollectiveAlgorithm::automatic:
    return "auto";
  case CollectiveAlgorithm::collnet:
    return "collnet";
  }
  return "?";
}
std::string to_string(NcclProtocolChoice protocol) {
  switch (protocol) {
  case NcclProtocolChoice::ll:
    return "LL";
  case NcclProtocolChoice::ll128:
    return "LL128";
  case NcclProtocolChoice::simple:
    return "Simple";
  default:
    return "auto";
  }
}
std::string to_string(RankClassesChoice choice) {
  switch (choice) {
  case RankClassesChoice::off:
    return "off";
  case RankClassesChoice::statistical:
    return "statistical";
  case RankClassesChoice::automatic:
    break;
  }
  return "auto";
}
double Jitter::sigma_of(double seconds) const {
  if (sigma_1s <= 0)
    return sigma;
  return seconds > 0 ? std::min(kMaxSigma, sigma_1s / std::sqrt(seconds)) : kMaxSigma;
}

std::string to_string(JitterDistribution distribution) {
  switch (distribution) {
  case JitterDistribution::none:
    return "none";
  case JitterDistribution::lognormal:
    return "lognormal";
  case JitterDistribution::normal:
    return "normal";
  }
  return "?";
}

std::string to_string(PipelineSchedule schedule) {
  switch (schedule) {
  case PipelineSchedule::gpipe:
    return "gpipe";
  case PipelineSchedule::one_f_one_b:
    return "1f1b";
  case PipelineSchedule::interleaved:
    return "interleaved";
  case PipelineSchedule::zero_bubble:
    return "zero-bubble";
  }
  return "?";
}

std::string to_string(Recompute recompute) {
  switch (recompute) {
  case Recompute::none:
    return "none";
  case Recompute::selective:
    return "selective";
  case Recompute::full:
    return "full";
  }
  return "?";
}

std::string to_string(ParallelAxis axis) {
  switch (axis) {
  case ParallelAxis::tensor:
    return "tp";
  case ParallelAxis::data:
    return "dp";
  case ParallelAxis::pipeline:
    return "pp";
  }
  return "?";
}

std::string order_string(const std::array<ParallelAxis, 3>& order) {
  return fmt::format("{}-{}-{}", to_string(order[0]), to_string(order[1]), to_string(order[2]));
}

bool ParallelismSpec::is_default() const {
  const ParallelismSpec d;
  return tensor == d.tensor && sequence_parallel == d.sequence_parallel && pipeline == d.pipeline &&
         schedule == d.schedule && virtual_stages == d.virtual_stages && stages == d.stages &&
         order == d.order && recompute == d.recompute && tp_comm_overlap == d.tp_comm_overlap;
}

} // namespace overlapsim::scenario
