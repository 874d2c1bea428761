#include "scenario/loader.h"

#include <nlohmann/json.hpp>

namespace overlapsim::scenario {

namespace {
// Echoes only the keys of the chosen kind, as a user would write them; null when fixed.
nlohmann::json to_json(const SeqLenDistribution& d) {
  using Kind = SeqLenDistribution::Kind;
  switch (d.kind) {
  case Kind::fixed:
    return nullptr;
  case Kind::lengths:
    return {{"lengths", d.lengths}, {"max_of", d.max_of}};
  case Kind::lognormal:
    return {{"lognormal", {{"median", d.median}, {"sigma", d.sigma}}}, {"max_of", d.max_of}};
  case Kind::uniform:
    return {{"uniform", {{"min", d.min}, {"max", d.max}}}, {"max_of", d.max_of}};
  }
  return nullptr;
}
} // namespace

nlohmann::json to_json(const Scenario& s) {
  using nlohmann::json;
  const auto& c = s.cluster;
  json stragglers = json::array();
  for (const auto& st : c.stragglers)
    stragglers.push_back({{"gpu", st.gpu}, {"slowdown", st.slowdown}});
  json jitter{{"distribution", to_string(c.jitter.distribution)}, {"sigma", c.jitter.sigma}};
  if (c.jitter.sigma_1s > 0) { // keys only where given: summaries without it stay as they were
    jitter["sigma_1s"] = c.jitter.sigma_1s;
    jitter["measured"] = c.jitter.measured;
  }
  auto link = [](const hw::LinkSpec& l) {
    json out{{"name", l.name},
             {"bandwidth_Bps", l.bandwidth_Bps},
             {"line_rate_Bps", l.line_rate_Bps()},
             {"efficiency", l.efficiency},
             {"latency_s", l.latency_s}};
    if (l.reverse_busy_s > 0) // where set or measured (most links have none)
      out["reverse_busy_s"] = l.reverse_busy_s;
    if (l.plugin_latency_s > 0) // EFA's aws-ofi-nccl (most transports report none)
      out["plugin_latency_s"] = l.plugin_latency_s;
    if (l.nccl_buffsize_bytes > 0) // where the network's NCCL profile sets NCCL_BUFFSIZE
      out["nccl_buffsize_bytes"] = l.nccl_buffsize_bytes;
    return out;
  };
  json sites = json::array();
  for (const auto& site : c.sites)
    sites.push_back({{"name", site.name}, {"nodes", site.nodes}});
  json algorithms = json::array();
  for (const auto& a : s.algorithms) {
    json opts = json::object();
    for (const auto& [k, v] : a.options)
      opts[k] = v.value;
    algorithms.push_back({{"name", a.name}, {"label", a.label}, {"options", opts}});
  }
  json cluster = {
      {"nodes", c.nodes},
      {"gpus_per_node", c.gpus_per_node},
      {"workers", c.world_size()},
      {"gpu",
       {{"name", c.gpu.name},
        {"peak_flops", c.gpu.peak_flops_bf16},
        {"memory_bytes", c.gpu.memory_bytes},
        {"memory_reserve_bytes", c.gpu.memory_reserve()},
        {"hbm_bandwidth_Bps", c.gpu.hbm_bandwidth_Bps},
        {"efficiency", c.gpu.efficiency},
        {"comm_interference", c.gpu.comm_interference},
        {"compute_interference", c.gpu.compute_interference},
        {"comm_stream_share", c.gpu.comm_stream_share},
        {"collective_handoff_wait_s", c.gpu.collective_handoff_wait_s},
        {"compute_handoff_wait_s", c.gpu.compute_handoff_wait_s}}},
      {"intra_node", link(c.intra_node)},
      {"inter_node", link(c.inter_node)},
      {"nics_per_node", c.nics_per_node},
      {"stragglers", stragglers},
      {"jitter", jitter},
      {"network_model", to_string(c.network_model)},
      {"collectives", to_string(c.collectives)},
      {"collective_algorithm", to_string(c.collective_algorithm)},
      {"nccl_protocol", to_string(c.nccl_protocol)},
      {"rank_classes", to_string(c.rank_classes)},
      {"calibration", c.calibration},
  };
  // The shares a profile measured per collective kind, where it did (hw::GpuSpec).
  for (const auto& [op, share] : c.gpu.comm_interference_by_op)
    cluster["gpu"]["interference_by_op"][op]["comm_interference"] = share;
  for (const auto& [op, share] : c.gpu.compute_interference_by_op)
    cluster["gpu"]["interference_by_op"][op]["compute_interference"] = share;
  for (const auto& [op, cost] : c.gpu.collective_start_cost_by_op)
    cluster["gpu"]["collective_start_costs"][op] = {
        {"fixed_s", cost.fixed_s}, {"per_byte_s", cost.per_byte_s}, {"share", cost.share}};
  if (c.fabric.topology == hw::FabricSpec::Topology::fat_tree)
    cluster["fabric"] = {
        {"topology", "fat_tree"},
        {"radix", c.fabric.radix},
        {"levels", c.fabric.levels},
        {"oversubscription", c.fabric.oversubscription},
        {"placement", c.fabric.placement == hw::FabricSpec::Placement::rail ? "rail" : "node"},
        {"hop_latency_s", c.fabric.hop_latency_s}};
  for (const auto& type : c.node_types)
    cluster["node_types"].push_back({{"nodes", type.nodes},
                                     {"gpu",
                                      {{"name", type.gpu.name},
                                       {"peak_flops", type.gpu.peak_flops_bf16},
                                       {"memory_bytes", type.gpu.memory_bytes},
                                       {"hbm_bandwidth_Bps", type.gpu.hbm_bandwidth_Bps},
                                       {"efficiency", type.gpu.efficiency}}}});
  if (!c.sites.empty()) {
    cluster["sites"] = sites;
    cluster["wan"] = link(c.wan);
  }
  json layers = json::array();
  for (const auto& l : s.model.spec.layers) {
    json layer = {{"name", l.name},
                  {"params", l.params},
                  {"fwd_flops_per_sample", l.fwd_flops_per_sample},
                  {"bwd_flops_per_sample", l.bwd_flops_per_sample},
                  {"activation_bytes_per_sample", l.activation_bytes_per_sample}};
    if (l.fwd_model_time_per_sample_s > 0) {
      layer["fwd_model_time_per_sample_s"] = l.fwd_model_time_per_sample_s;
      layer["bwd_model_time_per_sample_s"] = l.bwd_model_time_per_sample_s;
    }
    layers.push_back(std::move(layer));
  }
  json out{
      {"name", s.name},
      {"source", s.source},
      {"seed", s.seed},
      {"cluster", cluster},
      {"model",
       {{"name", s.model.spec.name},
        {"preset", s.model.preset},
        {"dtype", to_string(s.model.dtype)},
        {"params", s.model.spec.total_params()},
        {"profile", s.model.profile},
        {"compute", s.model.compute},
        {"layers", layers}}},
      {"training",
       {{"micro_batch", s.training.micro_batch},
        {"seq_len", s.training.seq_len},
        {"seq_len_distribution", to_json(s.training.seq_len_distribution)},
        {"grad_accum", s.training.grad_accum},
        {"steps", s.training.steps},
        {"warmup_steps", s.training.warmup_steps},
        {"optimizer", to_string(s.training.optimizer)},
        {"learning_rate", s.training.learning_rate},
        {"weight_decay", s.training.weight_decay},
        {"target_loss", s.training.target_loss ? nlohmann::json(*s.training.target_loss)
                                               : nlohmann::json(nullptr)},
        {"loss_curve", s.training.loss_curve}}},
      {"algorithms", algorithms},
      {"output",
       {{"dir", s.output.dir},
        {"traces", s.output.traces},
        {"plots", s.output.plots},
        {"trace_gzip", s.output.trace_gzip},
        {"trace_gpus", s.output.trace_gpus}}},
  };
  // Only when set, so that summaries of scenarios without it read as before.
  if (const auto& ckpt = s.model.checkpointing; ckpt.enabled())
    out["model"]["activation_checkpointing"] =
        ckpt.every == 1 ? json("full") : json{{"every", ckpt.every}};
  // Only when not the default (issue 65), so that summaries of data-parallel scenarios read as
  // before.
  if (const auto& p = s.parallelism; !p.is_default())
    out["parallelism"] = {{"tensor", p.tensor},
                          {"sequence_parallel", p.sequence_parallel},
                          {"pipeline", p.pipeline},
                          {"data", p.data_parallel(c.world_size())},
                          {"schedule", to_string(p.schedule)},
                          {"virtual_stages", p.virtual_stages},
                          {"stages", p.stages.empty() ? json("balanced") : json(p.stages)},
                          {"order", order_string(p.order)},
                          {"recompute", to_string(p.recompute)},
                          {"tp_comm_overlap", p.tp_comm_overlap}};
  if (!s.warnings.empty())
    out["warnings"] = s.warnings;
  return out;
}

} // namespace overlapsim::scenario
