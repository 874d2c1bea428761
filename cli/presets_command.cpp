#include "cli/presets_command.h"

#include "hw/fat_tree.h"
#include "hw/model.h"
#include "hw/presets.h"
#include "hw/system_presets.h"

#include <cstdio>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace overlapsim::cli {

namespace {

// Transformer presets' parameter counts do not depend on the sequence length: any will do.
constexpr int kAnySeqLen = 2048;

const char* mlp_name(hw::TransformerDims::Mlp mlp) {
  switch (mlp) {
  case hw::TransformerDims::Mlp::gelu:
    return "gelu";
  case hw::TransformerDims::Mlp::gelu_new:
    return "gelu_new";
  case hw::TransformerDims::Mlp::swiglu:
    return "swiglu";
  }
  return "?";
}

nlohmann::ordered_json presets_json() {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const auto& name : hw::gpu_preset_names()) {
    const auto g = *hw::find_gpu_preset(name);
    gpus.push_back({{"name", name},
                    {"peak_flops_bf16", g.peak_flops_bf16},
                    {"peak_flops_fp32", g.peak_flops_fp32},
                    {"memory_bytes", g.memory_bytes},
                    {"hbm_bandwidth_Bps", g.hbm_bandwidth_Bps},
                    {"efficiency", g.efficiency},
                    {"comm_interference", g.comm_interference},
                    {"compute_interference", g.compute_interference},
                    {"comm_stream_share", g.comm_stream_share},
                    {"collective_handoff_wait_s", g.collective_handoff_wait_s},
                    {"compute_handoff_wait_s", g.compute_handoff_wait_s},
                    {"sms", g.sms},
                    {"compute_capability", g.compute_capability}});
  }
  nlohmann::ordered_json links = nlohmann::ordered_json::array();
  for (const auto& name : hw::link_preset_names()) {
    const auto l = *hw::find_link_preset(name);
    links.push_back({{"name", name},
                     {"bandwidth_Bps", l.bandwidth_Bps},
                     {"line_rate_Bps", l.line_rate_Bps()},
                     {"efficiency", l.efficiency},
                     {"latency_s", l.latency_s},
                     {"kind", hw::to_string(l.kind)},
                     {"nvlink_sharp", l.nvlink_sharp}});
  }
  nlohmann::ordered_json models = nlohmann::ordered_json::array();
  for (const auto& name : hw::model_preset_names()) {
    if (const auto d = hw::find_transformer_preset(name))
      models.push_back({{"name", name},
                        {"kind", "transformer"},
                        {"params", hw::transformer_model(name, *d, kAnySeqLen).total_params()},
                        {"n_layers", d->n_layers},
                        {"d_model", d->d_model},
                        {"n_heads", d->n_heads},
                        {"n_kv_heads", d->kv_heads()},
                        {"d_ff", d->ffn_dim > 0 ? d->ffn_dim : 4 * d->d_model},
                        {"vocab", d->vocab},
                        {"max_positions", d->max_positions},
                        {"mlp", mlp_name(d->mlp)}});
    else if (name == "resnet-50")
      models.push_back({{"name", name},
                        {"kind", "resnet"},
                        {"params", hw::resnet50_model().total_params()},
                        {"layers", hw::resnet50_model().layers.size()},
                        {"about", "ResNet-50 at 224x224"}});
    else if (name == "vit-b16")
      models.push_back({{"name", name},
                        {"kind", "vit"},
                        {"params", hw::vit_model(name, hw::vit_b16_dims()).total_params()},
                        {"layers", hw::vit_model(name, hw::vit_b16_dims()).layers.size()},
                        {"about", "ViT-B/16 at 224x224, 197 tokens"}});
  }
  nlohmann::ordered_json systems = nlohmann::ordered_json::array();
  for (const auto& name : hw::system_preset_names()) {
    const auto sys = *hw::find_system_preset(name);
    const auto nic = *hw::find_link_preset(sys.inter_node);
    systems.push_back({{"name", name},
                       {"gpu", sys.gpu},
                       {"gpus_per_node", sys.gpus_per_node},
                       {"intra_node", sys.intra_node},
                       {"inter_node", sys.inter_node},
                       {"nics_per_node", sys.nics_per_node},
                       {"node_bandwidth_Bps", sys.nics_per_node * nic.bandwidth_Bps}});
  }
  nlohmann::ordered_json fabrics = nlohmann::ordered_json::array();
  for (const auto& name : hw::fabric_preset_names()) {
    const auto f = *hw::find_fabric_preset(name);
    const bool tree = f.topology == hw::FabricSpec::Topology::fat_tree;
    fabrics.push_back(
        {{"name", name},
         {"topology", tree ? "fat_tree" : "star"},
         {"radix", tree ? nlohmann::ordered_json(f.radix) : nlohmann::ordered_json()},
         {"levels", tree ? nlohmann::ordered_json(f.levels) : nlohmann::ordered_json()},
         {"oversubscription", f.oversubscription},
         {"placement", f.placement == hw::FabricSpec::Placement::rail ? "rail" : "node"},
         {"hop_latency_s",
          tree ? nlohmann::ordered_json(f.hop_latency_s) : nlohmann::ordered_json()}});
  }
  return {{"gpus", gpus},
          {"links", links},
          {"systems", systems},
          {"fabrics", fabrics},
          {"models", models}};
}

} // namespace

std::string presets_text() {
  const auto p = presets_json();
  std::string out = "GPU presets (cluster.gpu)\n";
  out += fmt::format("  {:<14} {:>10} {:>10} {:>8} {:>9} {:>6} {:>8} {:>5} {:>5}\n", "name", "bf16",
                     "fp32", "memory", "HBM", "MFU", "interf.", "SMs", "CC");
  out += fmt::format("  {:<14} {:>10} {:>10} {:>8} {:>9} {:>6} {:>8} {:>5} {:>5}\n", "",
                     "(TFLOP/s)", "(TFLOP/s)", "(GB)", "(TB/s)", "", "", "", "");
  for (const auto& g : p["gpus"]) {
    const int cc = g["compute_capability"].get<int>();
    out += fmt::format(
        "  {:<14} {:>10.1f} {:>10.1f} {:>8.1f} {:>9.3f} {:>6.2f} {:>8.2f} {:>5} {:>5}\n",
        g["name"].get<std::string>(), g["peak_flops_bf16"].get<double>() / 1e12,
        g["peak_flops_fp32"].get<double>() / 1e12, g["memory_bytes"].get<double>() / 1e9,
        g["hbm_bandwidth_Bps"].get<double>() / 1e12, g["efficiency"].get<double>(),
        g["comm_interference"].get<double>(), g["sms"].get<int>(),
        cc > 0 ? fmt::format("{}.{}", cc / 10, cc % 10) : "-");
  }
  // Issue 27.6: the roofline prices transformers, ResNet-50 and ViT-B/16 per op at their own
  // efficiencies; the flat MFU scales only layers priced by their FLOPs.
  out += "  MFU (cluster.gpu.efficiency) prices layers by their FLOPs (model.compute: flops, a "
         "'layers' list,\n  preset mlp); the roofline (the default for transformers, resnet-50, "
         "vit-b16) and measured\n  times (model.profile, cluster.calibration) do not use it. CC: "
         "the CUDA compute capability\n  (cluster.gpu.compute_capability), which NCCL's defaults "
         "key on.\n";
  out += "\nLink presets (cluster.intra_node, cluster.inter_node)\n";
  out += fmt::format("  {:<16} {:>12} {:>12} {:>10} {:>9}  {}\n", "name", "bandwidth", "line rate",
                     "efficiency", "latency", "kind");
  out += fmt::format("  {:<16} {:>12} {:>12} {:>10} {:>9}\n", "", "(GB/s)", "(Gb/s)", "", "(us)");
  for (const auto& l : p["links"])
    out += fmt::format("  {:<16} {:>12.4g} {:>12.4g} {:>10.2f} {:>9.6g}  {}{}\n",
                       l["name"].get<std::string>(), l["bandwidth_Bps"].get<double>() / 1e9,
                       l["line_rate_Bps"].get<double>() * 8 / 1e9, l["efficiency"].get<double>(),
                       l["latency_s"].get<double>() * 1e6, l["kind"].get<std::string>(),
                       l["nvlink_sharp"].get<bool>() ? " (NVLink SHARP)" : "");
  // What a system preset fills in (the cluster's own keys win), and the node's network bandwidth
  // that follows: NICs x the link's collective bandwidth.
  out += "\nSystem presets (cluster.preset; the cluster's own keys override them)\n";
  out += fmt::format("  {:<12} {:<10} {:>5} {:<12} {:<14} {:>5} {:>12}\n", "name", "gpu", "GPUs",
                     "intra", "inter", "NICs", "node net");
  out += fmt::format("  {:<12} {:<10} {:>5} {:<12} {:<14} {:>5} {:>12}\n", "", "", "", "", "", "",
                     "(GB/s)");
  for (const auto& sys : p["systems"])
    out += fmt::format("  {:<12} {:<10} {:>5} {:<12} {:<14} {:>5} {:>12.4g}\n",
                       sys["name"].get<std::string>(), sys["gpu"].get<std::string>(),
                       sys["gpus_per_node"].get<int>(), sys["intra_node"].get<std::string>(),
                       sys["inter_node"].get<std::string>(), sys["nics_per_node"].get<int>(),
                       sys["node_bandwidth_Bps"].get<double>() / 1e9);
  out += "\nFabric presets (cluster.fabric; a map {preset: NAME, ...} overrides its keys)\n";
  out += fmt::format("  {:<16} {:<9} {:>6} {:>7} {:>9} {:<10} {:>9}\n", "name", "topology", "radix",
                     "levels", "oversub.", "placement", "hop (ns)");
  for (const auto& f : p["fabrics"]) {
    const bool tree = f["topology"] == "fat_tree";
    const auto levels = tree ? f["levels"].get<int>() : 0;
    out += fmt::format("  {:<16} {:<9} {:>6} {:>7} {:>9} {:<10} {:>9}\n",
                       f["name"].get<std::string>(), f["topology"].get<std::string>(),
                       tree ? std::to_string(f["radix"].get<int>()) : "-",
                       !tree         ? "-"
                       : levels == 0 ? "auto"
                                     : std::to_string(levels),
                       tree ? fmt::format("{:g}:1", f["oversubscription"].get<double>()) : "-",
                       tree ? f["placement"].get<std::string>() : "-",
                       tree ? fmt::format("{:g}", f["hop_latency_s"].get<double>() * 1e9) : "-");
  }
  out += "\nModel presets (model.preset)\n";
  out += fmt::format("  {:<14} {:>9} {:>7} {:>7} {:>6} {:>6} {:>7} {:>7} {:>9}  {}\n", "name",
                     "params", "layers", "d_model", "heads", "kv", "d_ff", "vocab", "positions",
                     "mlp");
  for (const auto& m : p["models"]) {
    if (m["kind"] == "transformer")
      out += fmt::format(
          "  {:<14} {:>8.1f}M {:>7} {:>7.0f} {:>6} {:>6} {:>7.0f} {:>7.0f} {:>9.0f}  {}\n",
          m["name"].get<std::string>(), m["params"].get<double>() / 1e6, m["n_layers"].get<int>(),
          m["d_model"].get<double>(), m["n_heads"].get<int>(), m["n_kv_heads"].get<int>(),
          m["d_ff"].get<double>(), m["vocab"].get<double>(), m["max_positions"].get<double>(),
          m["mlp"].get<std::string>());
    else
      out += fmt::format("  {:<14} {:>8.1f}M {:>7}  ({})\n", m["name"].get<std::string>(),
                         m["params"].get<double>() / 1e6, m["layers"].get<std::size_t>(),
                         m["about"].get<std::string>());
  }
  out += "  transformer, gpt-tiny: dimensions from the scenario; mlp: width and depth from the "
         "scenario\n";
  return out;
}

int presets_command(bool json) {
  if (json)
    std::printf("%s\n", presets_json().dump(2).c_str());
  else
    std::printf("%s", presets_text().c_str());
  return 0;
}

} // namespace overlapsim::cli
