#include "scenario/loader.h"
#include "scenario/user_file.h"

#include "hw/conv_ops.h"
#include "hw/system_presets.h"
#include "hw/transformer_ops.h"
#include "hw/units.h"
#include "hw/vit_ops.h"
#include "scenario/calibration.h"
#include "scenario/layer_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h> // fmt::join (in <fmt/format.h> before fmt 11)
#include <nlohmann/json.hpp>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>

namespace overlapsim::scenario {

// Repeated keys, keys that are maps or lists, alias bombs and aliases that contain themselves
// (below, before parsing).
void check_keys(const YAML::Node& node, const std::string& path, const std::string& file,
                long& visited, int depth = 0);

namespace {

// Where each value came from, so that errors can say "file:line" or "--set key".
struct Context {
  std::string file;
  std::set<std::string> overridden; // dotted paths replaced by --set
};

// The documented range of each kind of quantity: past it a value is a typo, or makes the
// simulation overflow (a bandwidth of 1e-300 B/s never delivers; 1e308 h is no latency).
struct QuantityRange {
  double min;
  double max;
  std::string (*format)(double);
};

QuantityRange quantity_range(double (*parse)(std::string_view)) {
  if (parse == hw::parse_bandwidth_Bps)
    return {1e3, 1e15, hw::format_bandwidth}; // 1 kB/s to 1 PB/s
  if (parse == hw::parse_time_s)
    return {0, 3600, hw::format_time}; // up to an hour
  if (parse == hw::parse_size_bytes)
    return {0, 1e15, hw::format_bytes}; // up to 1 PB
  return {0, 1e18, hw::format_count};
}

// A node together with its dotted key path; every accessor checks the YAML shape and reports
// the file, the line and the key on failure.
class Entry {
public:
  Entry(const Context& ctx, YAML::Node node, std::string path)
      : ctx_(&ctx), node_(std::move(node)), path_(std::move(path)) {}

  const std::string& path() const { return path_; }
  const YAML::Node& node() const { return node_; }

  std::string where() const {
    for (const auto& p : ctx_->overridden)
      if (path_ == p || path_.starts_with(p + ".") ||
          (node_.Mark().line < 0 && p.starts_with(path_ + "."))) // a map made by --set a.b=...
        return fmt::format("--set {}", p);
    if (node_.Mark().line >= 0)
      return fmt::format("{}:{}", ctx_->file, node_.Mark().line + 1);
    return ctx_->file;
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw ScenarioError(fmt::format("{}: key '{}': {}", where(), path_, what));
  }

  bool is_map() const { return node_.IsMap(); }
  bool is_scalar() const { return node_.IsScalar(); }
  bool is_sequence() const { return node_.IsSequence(); }

  // Rejects keys outside `allowed` (SCENARIO.md: unknown keys are errors, not ignored).
  void expect_map(std::initializer_list<std::string_view> allowed) const {
    expect_map(std::vector<std::string_view>(allowed));
  }
  void expect_map(const std::vector<std::string_view>& allowed) const {
    if (!node_.IsMap())
      fail("expected a map");
    for (const auto& kv : node_) {
      if (!kv.first.IsScalar())
        Entry(*ctx_, kv.first, path_).fail("a key must be a plain name, not a map or a list");
      const auto key = kv.first.Scalar();
      if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
        std::string list;
        for (auto a : allowed)
          list += fmt::format("{}{}", list.empty() ? "" : ", ", a);
        Entry(*ctx_, kv.first, join(key))
            .fail(fmt::format("unknown key; expected one of: {}", list));
      }
    }
  }

  bool has(const std::string& key) const { return node_.IsMap() && node_[key].IsDefined(); }

  Entry child(const std::string& key) const {
    if (!has(key))
      fail(fmt::format("missing required key '{}'", key));
    return Entry(*ctx_, node_[key], join(key));
  }

  std::vector<Entry> items() const {
    if (!node_.IsSequence())
      fail("expected a list");
    std::vector<Entry> out;
    for (std::size_t i = 0; i < node_.size(); ++i)
      out.emplace_back(*ctx_, node_[i], join(std::to_string(i)));
    return out;
  }

  std::string text() const {
    if (!node_.IsScalar())
      fail("expected a single value, not a map or a list");
    return node_.Scalar();
  }

  // A quantity parsed by one of hw/units.h's parsers; errors carry the parser's explanation. The
  // value must lie in the kind's documented range (docs/SCENARIO.md, "Ranges"), or below `max`.
  double quantity(double (*parse)(std::string_view), bool allow_zero = false,
                  double max = std::numeric_limits<double>::infinity()) const {
    double v = 0;
    try {
      v = parse(text());
    } catch (const hw::UnitError& e) {
      fail(e.what());
    }
    if (!allow_zero && v <= 0)
      fail(fmt::format("expected a value greater than 0, got '{}'", text()));
    const QuantityRange range = quantity_range(parse);
    max = std::min(max, range.max);
    if ((v > 0 && v < range.min) || v > max)
      fail(fmt::format("'{}' is outside the range [{}, {}]", text(), range.format(range.min),
                       range.format(max)));
    return v;
  }

  // A count that must be whole (parameters, vocab, widths): "1.5" and "2.5k" are errors
  // (issue 26.12: d_ff: 1.5 was accepted).
  double whole_count(bool allow_zero = false,
                     double max = std::numeric_limits<double>::infinity()) const {
    const double v = quantity(hw::parse_count, allow_zero, max);
    if (v != std::floor(v))
      fail(fmt::format("expected a whole number, got '{}' ({})", text(), v));
    return v;
  }

  double number(double min, double max) const {
    const std::string s = text();
    double v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
      fail(fmt::format("expected a number, got '{}'", s));
    if (v < min || v > max)
      fail(fmt::format("expected a number in [{}, {}], got '{}'", min, max, s));
    return v;
  }

  long long integer(long long min, long long max) const {
    const std::string s = text();
    long long v = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size())
      fail(fmt::format("expected a whole number, got '{}'", s));
    if (v < min || v > max)
      fail(fmt::format("expected a whole number in [{}, {}], got {}", min, max, v));
    return v;
  }

  // A file path: relative paths resolve against the scenario file's directory, or against the
  // working directory when the value came from --set.
  std::string path_value() const {
    const std::filesystem::path p(text());
    if (p.is_absolute() || where().starts_with("--set"))
      return p.string();
    return (std::filesystem::path(ctx_->file).parent_path() / p).lexically_normal().string();
  }

  // Reads a calibration profile, reporting its problems at this key.
  Calibration calibration() const {
    try {
      return read_calibration(path_value());
    } catch (const std::runtime_error& e) {
      fail(e.what());
    }
  }

  bool boolean() const {
    const std::string s = text();
    if (s == "true" || s == "yes" || s == "on")
      return true;
    if (s == "false" || s == "no" || s == "off")
      return false;
    fail(fmt::format("expected true or false, got '{}'", s));
  }

  template <typename E>
  E choice(std::initializer_list<std::pair<std::string_view, E>> options) const {
    const std::string s = text();
    std::string list;
    for (const auto& [name, value] : options) {
      if (s == name)
        return value;
      list += fmt::format("{}{}", list.empty() ? "" : ", ", name);
    }
    fail(fmt::format("expected one of {}, got '{}'", list, s));
  }

private:
  std::string join(const std::string& key) const { return path_.empty() ? key : path_ + "." + key; }

  const Context* ctx_;
  YAML::Node node_;
  std::string path_;
};

hw::GpuSpec read_gpu(const Entry& e) {
  if (e.is_scalar()) {
    if (auto gpu = hw::find_gpu_preset(e.text()))
      return *gpu;
    std::string names;
    for (const auto& n : hw::gpu_preset_names())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    e.fail(fmt::format("unknown GPU preset '{}'; expected one of: {} (or a map with peak_tflops, "
                       "memory, efficiency, hbm_bandwidth)",
                       e.text(), names));
  }
  e.expect_map({"preset", "name", "peak_tflops", "memory", "efficiency", "hbm_bandwidth",
                "comm_interference"});
  hw::GpuSpec gpu;
  if (e.has("preset"))
    gpu = read_gpu(e.child("preset"));
  else
    gpu.name = "custom";
  if (e.has("name"))
    gpu.name = e.child("name").text();
  auto need = [&](const char* key) {
    if (!e.has("preset") && !e.has(key))
      e.child(key); // reports the missing key
  };
  need("peak_tflops");
  need("memory");
  need("hbm_bandwidth");
  if (e.has("peak_tflops"))
    gpu.peak_flops_bf16 = e.child("peak_tflops").number(1e-6, 1e9) * 1e12;
  if (e.has("memory"))
    gpu.memory_bytes = e.child("memory").quantity(hw::parse_size_bytes);
  if (e.has("efficiency"))
    gpu.efficiency = e.child("efficiency").number(1e-6, 1.0);
  if (e.has("hbm_bandwidth"))
    gpu.hbm_bandwidth_Bps = e.child("hbm_bandwidth").quantity(hw::parse_bandwidth_Bps);
  if (e.has("comm_interference"))
    gpu.comm_interference = e.child("comm_interference").number(0.0, 0.9);
  if (gpu.peak_flops_fp32 <= 0)
    gpu.peak_flops_fp32 = gpu.peak_flops_bf16;
  return gpu;
}

hw::LinkSpec read_link(const Entry& e) {
  if (e.is_scalar()) {
    if (auto link = hw::find_link_preset(e.text()))
      return *link;
    std::string names;
    for (const auto& n : hw::link_preset_names())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    e.fail(fmt::format("unknown link preset '{}'; expected one of: {} (or a map with bandwidth "
                       "and latency)",
                       e.text(), names));
  }
  e.expect_map({"preset", "name", "bandwidth", "latency", "efficiency"});
  hw::LinkSpec link;
  if (e.has("preset"))
    link = read_link(e.child("preset"));
  else
    link.name = "custom";
  if (e.has("name"))
    link.name = e.child("name").text();
  if (!e.has("preset")) {
    e.child("bandwidth");
    e.child("latency");
  }
  // `bandwidth` is the line rate; collectives reach `efficiency` of it (the preset's, else 1).
  double line_rate = link.line_rate_Bps();
  if (e.has("bandwidth"))
    line_rate = e.child("bandwidth").quantity(hw::parse_bandwidth_Bps);
  if (e.has("efficiency"))
    link.efficiency = e.child("efficiency").number(0.01, 1.0);
  link.bandwidth_Bps = line_rate * link.efficiency;
  if (e.has("latency"))
    link.latency_s = e.child("latency").quantity(hw::parse_time_s, /*allow_zero=*/true);
  return link;
}

// A system preset (cluster.preset): what it fills in unless the cluster sets the key itself.
hw::SystemSpec read_system(const Entry& e) {
  if (auto system = hw::find_system_preset(e.text()))
    return *system;
  e.fail(fmt::format("unknown system preset '{}'; expected one of: {}", e.text(),
                     fmt::join(hw::system_preset_names(), ", ")));
}

ClusterSpec read_cluster(const Entry& e) {
  e.expect_map({"preset", "nodes", "gpus_per_node", "gpu", "intra_node", "inter_node",
                "nics_per_node", "stragglers", "jitter", "network_model", "collectives",
                "collective_algorithm", "nccl_protocol", "sites", "wan", "calibration"});
  ClusterSpec c;
  c.nodes = static_cast<int>(e.child("nodes").integer(1, 1 << 20));
  std::optional<hw::SystemSpec> system;
  if (e.has("preset"))
    system = read_system(e.child("preset"));
  c.gpus_per_node = system && !e.has("gpus_per_node")
                        ? system->gpus_per_node
                        : static_cast<int>(e.child("gpus_per_node").integer(1, 1024));
  // A million GPUs is past any machine built; ranks and per-GPU tables stay well inside int.
  constexpr long long kMaxGpus = 1 << 20;
  if (static_cast<long long>(c.nodes) * c.gpus_per_node > kMaxGpus)
    e.child("gpus_per_node")
        .fail(fmt::format("expected at most {} GPUs in all (cluster.nodes x gpus_per_node), got "
                          "{} x {} = {}",
                          kMaxGpus, c.nodes, c.gpus_per_node,
                          static_cast<long long>(c.nodes) * c.gpus_per_node));
  c.gpu = system && !e.has("gpu") ? *hw::find_gpu_preset(system->gpu) : read_gpu(e.child("gpu"));
  // A calibration profile's fitted links replace the latency and bandwidth of the ones it holds;
  // those links may then be left out.
  std::optional<Calibration> calibration;
  if (e.has("calibration")) {
    calibration = e.child("calibration").calibration();
    c.calibration = e.child("calibration").path_value();
  }
  auto link = [&](const char* key, bool needed, const std::optional<LinkFit>& fit,
                  const std::string& from_system) {
    hw::LinkSpec l;
    if (e.has(key) || (needed && !fit && from_system.empty()))
      l = read_link(e.child(key));
    else if (!from_system.empty())
      l = *hw::find_link_preset(from_system);
    if (fit) {
      l.name = l.name.empty() ? "calibrated" : l.name + " (calibrated)";
      l.latency_s = fit->latency_s;
      l.bandwidth_Bps = fit->bandwidth_Bps; // measured: what collectives reach
      l.efficiency = 1;
    }
    return l;
  };
  if (c.gpus_per_node > 1 || e.has("intra_node"))
    c.intra_node = link("intra_node", true, calibration ? calibration->intra_node : std::nullopt,
                        system ? system->intra_node : "");
  if (c.nodes > 1 || e.has("inter_node") || (calibration && calibration->inter_node))
    c.inter_node =
        link("inter_node", c.nodes > 1, calibration ? calibration->inter_node : std::nullopt,
             system ? system->inter_node : "");
  // Per-op fits map onto the link that carries the job's collectives: across nodes when there
  // are several, else inside the node.
  if (calibration) {
    const bool across = c.nodes > 1;
    const auto& base = across ? calibration->inter_node : calibration->intra_node;
    if (base) {
      // The link's own collective too: its measured points, where the fit's line misses them.
      auto ops = across ? calibration->inter_node_ops : calibration->intra_node_ops;
      ops.push_back(*base);
      LinkFit carrier = *base;
      carrier.latency_s = latency_floor(*base, ops);
      (across ? c.inter_node : c.intra_node).latency_s = carrier.latency_s;
      for (const auto& f : ops)
        c.collective_bytes[f.op] = collective_bytes_map(carrier, f);
    }
  }
  if (e.has("nics_per_node"))
    c.nics_per_node = static_cast<int>(e.child("nics_per_node").integer(1, 64));
  else if (system)
    c.nics_per_node = system->nics_per_node; // one NIC per GPU on DGX-like nodes
  else if ((c.intra_node.name == "nvlink3" || c.intra_node.name == "nvlink4") &&
           c.inter_node.name.starts_with("ib-") && c.gpus_per_node <= 64)
    // A DGX/HGX-like node (NVSwitch inside, InfiniBand between) has a NIC per GPU (issue 25.3):
    // 8 x 200 Gb/s HDR on a DGX A100, 8 x 400 Gb/s NDR on a DGX H100. One NIC would make every
    // cross-node collective 8x too slow.
    c.nics_per_node = c.gpus_per_node;
  if (e.has("stragglers")) {
    // GPU -> its index in the list: a list of every GPU of a large cluster is checked in
    // O(n log n), not by scanning the list for each entry.
    std::map<int, std::size_t> listed;
    for (const auto& s : e.child("stragglers").items()) {
      s.expect_map({"gpu", "slowdown"});
      Straggler st;
      st.gpu = static_cast<int>(s.child("gpu").integer(0, c.world_size() - 1));
      if (const auto [it, fresh] = listed.try_emplace(st.gpu, c.stragglers.size()); !fresh)
        s.child("gpu").fail(fmt::format("GPU {} is already a straggler (cluster.stragglers.{}); "
                                        "give each GPU one slowdown",
                                        st.gpu, it->second));
      st.slowdown = s.child("slowdown").number(1e-3, 1e6);
      c.stragglers.push_back(st);
    }
  }
  if (e.has("jitter")) {
    const Entry j = e.child("jitter");
    j.expect_map({"distribution", "sigma"});
    c.jitter.distribution =
        j.child("distribution")
            .choice<JitterDistribution>({{"none", JitterDistribution::none},
                                         {"lognormal", JitterDistribution::lognormal},
                                         {"normal", JitterDistribution::normal}});
    c.jitter.sigma = j.has("sigma") ? j.child("sigma").number(0, 10) : 0.0;
  }
  if (e.has("network_model"))
    c.network_model =
        e.child("network_model")
            .choice<NetworkModel>({{"exact", NetworkModel::exact}, {"tcp", NetworkModel::tcp}});
  if (e.has("collectives"))
    c.collectives = e.child("collectives")
                        .choice<CollectiveFidelity>({{"nccl", CollectiveFidelity::nccl},
                                                     {"fused", CollectiveFidelity::fused},
                                                     {"steps", CollectiveFidelity::steps}});
  else if (e.has("calibration"))
    // A calibrated link is what the collectives measured reach: NCCL's costs are in it already.
    c.collectives = CollectiveFidelity::fused;
  if (e.has("collective_algorithm"))
    c.collective_algorithm =
        e.child("collective_algorithm")
            .choice<CollectiveAlgorithm>({{"ring", CollectiveAlgorithm::ring},
                                          {"tree", CollectiveAlgorithm::tree},
                                          {"hierarchical", CollectiveAlgorithm::hierarchical},
                                          {"auto", CollectiveAlgorithm::automatic}});
  if (e.has("nccl_protocol"))
    c.nccl_protocol = e.child("nccl_protocol")
                          .choice<NcclProtocolChoice>({{"auto", NcclProtocolChoice::automatic},
                                                       {"LL", NcclProtocolChoice::ll},
                                                       {"LL128", NcclProtocolChoice::ll128},
                                                       {"Simple", NcclProtocolChoice::simple},
                                                       {"ll", NcclProtocolChoice::ll},
                                                       {"ll128", NcclProtocolChoice::ll128},
                                                       {"simple", NcclProtocolChoice::simple}});
  if (e.has("sites")) {
    std::vector<int> site_of(static_cast<std::size_t>(c.nodes), -1);
    for (const auto& s : e.child("sites").items()) {
      s.expect_map({"name", "nodes"});
      Site site;
      site.name = s.has("name") ? s.child("name").text() : fmt::format("site{}", c.sites.size());
      for (const auto& n : s.child("nodes").items()) {
        const int node = static_cast<int>(n.integer(0, c.nodes - 1));
        if (site_of[static_cast<std::size_t>(node)] >= 0)
          n.fail(fmt::format("node {} is already in site {}", node,
                             site_of[static_cast<std::size_t>(node)]));
        site_of[static_cast<std::size_t>(node)] = static_cast<int>(c.sites.size());
        site.nodes.push_back(node);
      }
      c.sites.push_back(site);
    }
    for (int n = 0; n < c.nodes; ++n)
      if (site_of[static_cast<std::size_t>(n)] < 0)
        e.child("sites").fail(
            fmt::format("node {} is in no site; every node must be in exactly one", n));
    if (c.sites.size() > 1)
      c.wan = read_link(e.child("wan"));
  } else if (e.has("wan")) {
    e.child("wan").fail("a WAN link needs 'sites' saying which nodes sit on each side");
  }
  return c;
}

// The most layers a model may have: real models have hundreds; past this only a mistake (or a
// YAML alias bomb) gets, and the per-layer state would take gigabytes.
constexpr std::size_t kMaxLayers = 100000;

hw::ModelSpec read_layers(const Entry& e) {
  hw::ModelSpec m;
  m.name = "custom";
  for (const auto& l : e.items()) {
    l.expect_map({"name", "params", "fwd_flops_per_sample", "bwd_flops_per_sample",
                  "activation_bytes_per_sample", "output_bytes_per_sample", "repeat"});
    hw::LayerSpec layer;
    layer.name = l.has("name") ? l.child("name").text() : fmt::format("layer{}", m.layers.size());
    layer.params = l.child("params").whole_count(true, 1e13);
    layer.fwd_flops_per_sample = l.child("fwd_flops_per_sample").quantity(hw::parse_count, true);
    layer.bwd_flops_per_sample =
        l.has("bwd_flops_per_sample")
            ? l.child("bwd_flops_per_sample").quantity(hw::parse_count, true)
            : 2 * layer.fwd_flops_per_sample;
    layer.activation_bytes_per_sample =
        l.has("activation_bytes_per_sample")
            ? l.child("activation_bytes_per_sample").quantity(hw::parse_size_bytes, true)
            : 0.0;
    if (l.has("output_bytes_per_sample"))
      layer.output_bytes_per_sample =
          l.child("output_bytes_per_sample").quantity(hw::parse_size_bytes, true);
    if (layer.params == 0 && layer.fwd_flops_per_sample == 0 && layer.bwd_flops_per_sample == 0)
      l.fail("a layer with no parameters and no FLOPs does nothing; give it params or "
             "fwd_flops_per_sample");
    const int repeat = l.has("repeat") ? static_cast<int>(l.child("repeat").integer(1, 100000)) : 1;
    // YAML aliases can list one layer thousands of times: bound the model before it is expanded.
    if (m.layers.size() + static_cast<std::size_t>(repeat) > kMaxLayers)
      l.fail(fmt::format("the model would have more than {} layers (repeat included)", kMaxLayers));
    if (repeat == 1) {
      m.layers.push_back(layer);
    } else {
      for (int i = 0; i < repeat; ++i) {
        hw::LayerSpec copy = layer;
        copy.name = fmt::format("{}{}", layer.name, i);
        m.layers.push_back(copy);
      }
    }
  }
  if (m.layers.empty())
    e.fail("expected at least one layer");
  return m;
}

// Measured per-layer times replace the FLOP-based estimate; the layers must match by count and
// name, since a profile of another model would silently mean nothing.
void apply_profile(ModelConfig& m, const Entry& e, ClusterSpec& cluster) {
  const Calibration cal = e.calibration();
  m.profile = e.path_value();
  auto& layers = m.spec.layers;
  if (cal.layers.size() != layers.size())
    e.fail(fmt::format("the profile has {} layers, the model {}: it was measured on another model",
                       cal.layers.size(), layers.size()));
  for (std::size_t i = 0; i < layers.size(); ++i) {
    if (cal.layers[i].name != layers[i].name)
      e.fail(fmt::format("profile layer {} is '{}', the model's is '{}'", i, cal.layers[i].name,
                         layers[i].name));
    layers[i].fwd_time_per_sample_s = cal.layers[i].fwd_time_per_sample_s;
    layers[i].bwd_time_per_sample_s = cal.layers[i].bwd_time_per_sample_s;
    if (cal.layers[i].activation_bytes_per_sample > 0)
      layers[i].activation_bytes_per_sample = cal.layers[i].activation_bytes_per_sample;
  }
  m.spec.optimizer_time_per_param_s = cal.optimizer_time_per_param_s;
  m.spec.optimizer_points = cal.optimizer_points;
  m.spec.outer_step_time_per_param_s = cal.outer_step_time_per_param_s;
  if (cal.memory_bandwidth_Bps > 0)
    cluster.gpu.hbm_bandwidth_Bps = cal.memory_bandwidth_Bps;
  if (cal.comm_interference)
    cluster.gpu.comm_interference = *cal.comm_interference;
}

ModelConfig read_model_spec(const Entry& e, const TrainingSpec& training, const hw::GpuSpec& gpu);

constexpr double kMaxModelParams = 1e14;

// model.profile: a per-layer time table (*.tsv, scenario/layer_table.h; the DreamDDP authors'
// profile) is the model itself: one layer per row, the backward taking `bp_s` and the forward
// `fwd_s` (0 without that column) per micro-batch, and every collective over the parameters or
// gradients the sum of its layers' `comm_s` (sim/table_comm_time.h). Without a `params` column a
// layer counts as one parameter, so byte-sized choices (DDP's buckets) and the memory figures mean
// nothing.
bool is_layer_table(const Entry& profile) {
  return profile.text().ends_with(".tsv");
}

ModelConfig read_table_model(const Entry& e, const TrainingSpec& training) {
  for (const char* k : {"preset", "layers"})
    if (e.has(k))
      e.child(k).fail("model.profile is a layer table (.tsv), which defines the layers itself; "
                      "leave out 'preset' and 'layers'");
  e.expect_map({"profile", "dtype"});
  ModelConfig m;
  if (e.has("dtype"))
    m.dtype = e.child("dtype").choice<Dtype>(
        {{"fp32", Dtype::fp32}, {"bf16", Dtype::bf16}, {"fp16", Dtype::fp16}});
  const Entry p = e.child("profile");
  m.profile = p.path_value();
  std::vector<LayerTimes> rows;
  try {
    rows = read_layer_table(m.profile);
  } catch (const std::runtime_error& err) {
    p.fail(err.what());
  }
  m.spec.name = std::filesystem::path(m.profile).stem().string();
  m.spec.comm_times_from_table = true;
  const double samples = training.micro_batch;
  for (const auto& r : rows) {
    hw::LayerSpec l;
    l.name = r.name;
    l.params = r.params > 0 ? r.params : 1.0;
    l.fwd_time_per_sample_s = r.fwd_s / samples;
    l.bwd_time_per_sample_s = r.bp_s / samples;
    l.comm_time_s = r.comm_s;
    m.spec.layers.push_back(std::move(l));
  }
  return m;
}

// model.activation_checkpointing: none | full | {every: k}. A transformer checkpoints its blocks
// (Hugging Face's gradient_checkpointing and Megatron's recompute wrap the decoder layers, not the
// embedding or the LM head); any other model, every layer.
ActivationCheckpointing read_checkpointing(const Entry& e, const ModelConfig& m) {
  ActivationCheckpointing c;
  c.where = e.where();
  const int layers = static_cast<int>(m.spec.layers.size());
  c.first = 0;
  c.last = layers;
  if (layers >= 2 && m.spec.layers.front().name == "embedding" &&
      m.spec.layers.back().name == "head" && !m.dims.empty() && m.dims.contains("n_heads")) {
    c.first = 1;
    c.last = layers - 1;
  }
  if (e.is_map()) {
    e.expect_map({"every"});
    c.every = static_cast<int>(e.child("every").integer(1, std::max(1, c.last - c.first)));
    return c;
  }
  c.every = e.choice<int>({{"none", 0}, {"full", 1}});
  return c;
}

ModelConfig read_model(const Entry& e, const TrainingSpec& training, ClusterSpec& cluster) {
  if (e.has("profile") && is_layer_table(e.child("profile")))
    return read_table_model(e, training);
  ModelConfig m = read_model_spec(e, training, cluster.gpu);
  // Parameter counts become int64 element counts of every buffer (params, grads, optimizer state).
  if (!(m.spec.total_params() <= kMaxModelParams))
    e.fail(fmt::format("the model has {} parameters; at most {} are supported",
                       hw::format_count(m.spec.total_params()), hw::format_count(kMaxModelParams)));
  if (e.has("profile"))
    apply_profile(m, e.child("profile"), cluster);
  if (e.has("activation_checkpointing"))
    m.checkpointing = read_checkpointing(e.child("activation_checkpointing"), m);
  return m;
}

// The transformer family's keys: `preset: transformer` requires the shape; a named transformer
// preset (gpt-neo-125m, ...) is an instance whose values any of these keys override.
constexpr std::array<std::string_view, 14> kTransformerKeys = {
    "vocab",     "d_model",         "n_layers", "n_heads",   "n_kv_heads", "d_ff",     "mlp",
    "attention", "tied_embeddings", "norm",     "positions", "bias",       "qkv_bias", "dropout"};

hw::TransformerDims read_transformer_dims(const Entry& e, hw::TransformerDims d, bool required) {
  using Mlp = hw::TransformerDims::Mlp;
  using Attention = hw::TransformerDims::Attention;
  auto count = [&](const char* key, double max) {
    if (e.has(key) || required)
      return e.child(key).whole_count(false, max);
    return -1.0;
  };
  if (const double v = count("vocab", 1e8); v > 0)
    d.vocab = v;
  if (const double v = count("d_model", 1e6); v > 0)
    d.d_model = v;
  if (e.has("n_layers") || required)
    d.n_layers = static_cast<int>(e.child("n_layers").integer(1, 100000));
  if (e.has("n_heads") || required)
    d.n_heads = static_cast<int>(e.child("n_heads").integer(1, 100000));
  if (e.has("n_kv_heads"))
    d.n_kv_heads = static_cast<int>(e.child("n_kv_heads").integer(1, d.n_heads));
  if (e.has("d_ff"))
    d.ffn_dim = e.child("d_ff").whole_count(false, 1e7);
  if (e.has("mlp")) {
    d.mlp = e.child("mlp").choice<Mlp>(
        {{"gelu", Mlp::gelu}, {"gelu-new", Mlp::gelu_new}, {"swiglu", Mlp::swiglu}});
    d.gated_mlp = d.mlp == Mlp::swiglu;
  }
  if (e.has("attention"))
    d.attention = e.child("attention")
                      .choice<Attention>({{"eager", Attention::eager},
                                          {"sdpa", Attention::sdpa},
                                          {"flash", Attention::flash}});
  if (e.has("tied_embeddings"))
    d.tied_embeddings = e.child("tied_embeddings").boolean();
  if (e.has("norm"))
    d.rms_norm = e.child("norm").choice<bool>({{"layernorm", false}, {"rmsnorm", true}});
  if (e.has("positions"))
    d.max_positions = static_cast<double>(e.child("positions").integer(0, 1 << 24));
  if (e.has("bias"))
    d.linear_bias = e.child("bias").boolean();
  if (e.has("qkv_bias"))
    d.qkv_bias = e.child("qkv_bias").boolean();
  if (e.has("dropout"))
    d.dropout = e.child("dropout").number(0, 0.99);
  if (std::fmod(d.d_model, d.n_heads) != 0)
    e.child(e.has("n_heads") ? "n_heads" : "d_model").fail("d_model must be a multiple of n_heads");
  if (d.n_heads % d.kv_heads() != 0)
    e.child("n_kv_heads").fail("n_heads must be a multiple of n_kv_heads");
  return d;
}

std::map<std::string, double> dims_map(const hw::TransformerDims& d) {
  return {{"vocab", d.vocab},           {"d_model", d.d_model},
          {"n_layers", d.n_layers},     {"n_heads", d.n_heads},
          {"n_kv_heads", d.kv_heads()}, {"d_ff", d.ffn_dim > 0 ? d.ffn_dim : 4 * d.d_model}};
}

ModelConfig read_model_spec(const Entry& e, const TrainingSpec& training, const hw::GpuSpec& gpu) {
  std::vector<std::string_view> allowed = {
      "preset", "layers",  "dtype",   "width",
      "depth",  "profile", "compute", "activation_checkpointing"};
  allowed.insert(allowed.end(), kTransformerKeys.begin(), kTransformerKeys.end());
  e.expect_map(allowed);
  ModelConfig m;
  if (e.has("dtype"))
    m.dtype = e.child("dtype").choice<Dtype>(
        {{"fp32", Dtype::fp32}, {"bf16", Dtype::bf16}, {"fp16", Dtype::fp16}});
  if (e.has("preset") == e.has("layers"))
    e.fail("expected exactly one of 'preset' or 'layers'");
  auto reject = [&](const auto& keys, const std::string& why) {
    for (const std::string_view k : keys)
      if (e.has(std::string(k)))
        e.child(std::string(k)).fail(why);
  };
  // The roofline needs an op list (transformers, resnet-50, vit-b16); the others keep their FLOPs.
  bool roofline = false;
  if (e.has("compute"))
    roofline = e.child("compute").choice<bool>({{"roofline", true}, {"flops", false}});
  auto flops_only = [&](const std::string& what) {
    if (roofline)
      e.child("compute").fail(fmt::format(
          "the roofline models transformers, resnet-50 and vit-b16; {} takes 'flops'", what));
  };
  if (e.has("layers")) {
    reject(kTransformerKeys, "a transformer key; a 'layers' list gives its costs itself");
    flops_only("a 'layers' list");
    m.spec = read_layers(e.child("layers"));
    return m;
  }
  const Entry p = e.child("preset");
  m.preset = p.text();
  if (m.preset == "mlp") {
    reject(kTransformerKeys, "not a parameter of preset 'mlp'");
    flops_only("preset 'mlp'");
    const double width = e.child("width").whole_count(false, 1e6);
    const int depth = static_cast<int>(e.child("depth").integer(1, 100000));
    m.spec = hw::mlp_model(width, depth);
    m.dims = {{"width", width}, {"depth", depth}};
    return m;
  }
  reject(std::array<std::string_view, 2>{"width", "depth"},
         fmt::format("not a parameter of preset '{}'", m.preset));
  if (m.preset == "resnet-50" || m.preset == "vit-b16") {
    reject(kTransformerKeys, fmt::format("not a parameter of preset '{}'", m.preset));
    const auto vit = hw::vit_b16_dims();
    m.spec = m.preset == "vit-b16" ? hw::vit_model(m.preset, vit) : hw::resnet50_model();
    if (!e.has("compute") || roofline) {
      m.compute = "roofline";
      if (m.preset == "vit-b16")
        hw::apply_vit_roofline(m.spec, vit, gpu, training.micro_batch);
      else
        hw::apply_resnet_roofline(m.spec, gpu, training.micro_batch);
    }
    return m;
  }
  hw::TransformerDims dims;
  if (m.preset == "transformer") {
    dims = read_transformer_dims(e, dims, true);
  } else if (m.preset == "gpt-tiny") {
    // validate's own GPT-2-style model: learned positions up to seq_len, tied embeddings, biases,
    // eager attention, a fused GELU.
    dims.max_positions = training.seq_len;
    dims = read_transformer_dims(e, dims, true);
  } else if (const auto preset = hw::find_transformer_preset(m.preset)) {
    dims = read_transformer_dims(e, *preset, false);
  } else {
    std::string names = "transformer, mlp, gpt-tiny";
    for (const auto& n : hw::model_preset_names())
      names += ", " + n;
    p.fail(fmt::format("unknown model preset '{}'; expected one of: {} (or a 'layers' list)",
                       m.preset, names));
  }
  m.spec = hw::transformer_model(m.preset, dims, training.seq_len);
  m.dims = dims_map(dims);
  if (!e.has("compute") || roofline) {
    m.compute = "roofline";
    hw::apply_roofline(m.spec, dims, gpu, training.micro_batch, training.seq_len);
  }
  return m;
}

// training.seq_len_distribution: exactly one of `lengths` (an empirical list), `lognormal`
// ({median, sigma}) or `uniform` ({min, max}); `max_of: k` pads a micro-batch to its longest of k
// draws. Lengths are clipped to [1, seq_len]: seq_len is the longest a micro-batch can be.
SeqLenDistribution read_seq_len_distribution(const Entry& e, int seq_len) {
  e.expect_map({"lengths", "lognormal", "uniform", "max_of"});
  SeqLenDistribution d;
  const int kinds = e.has("lengths") + e.has("lognormal") + e.has("uniform");
  if (kinds != 1)
    e.fail("expected exactly one of lengths (a list), lognormal {median, sigma} or uniform "
           "{min, max}");
  if (e.has("lengths")) {
    d.kind = SeqLenDistribution::Kind::lengths;
    for (const auto& l : e.child("lengths").items())
      d.lengths.push_back(static_cast<int>(l.integer(1, seq_len)));
    if (d.lengths.empty())
      e.child("lengths").fail("expected at least one length");
  } else if (e.has("lognormal")) {
    const Entry l = e.child("lognormal");
    l.expect_map({"median", "sigma"});
    d.kind = SeqLenDistribution::Kind::lognormal;
    d.median = l.child("median").number(1, seq_len);
    d.sigma = l.child("sigma").number(0, 5);
  } else {
    const Entry u = e.child("uniform");
    u.expect_map({"min", "max"});
    d.kind = SeqLenDistribution::Kind::uniform;
    d.min = static_cast<int>(u.child("min").integer(1, seq_len));
    d.max = static_cast<int>(u.child("max").integer(d.min, seq_len));
  }
  if (e.has("max_of"))
    d.max_of = static_cast<int>(e.child("max_of").integer(1, 1 << 16));
  return d;
}

TrainingSpec read_training(const Entry& e) {
  e.expect_map({"micro_batch", "seq_len", "seq_len_distribution", "grad_accum", "steps",
                "warmup_steps", "optimizer", "learning_rate", "weight_decay", "target_loss",
                "loss_curve"});
  TrainingSpec t;
  t.micro_batch = static_cast<int>(e.child("micro_batch").integer(1, 1 << 24));
  if (e.has("seq_len"))
    t.seq_len = static_cast<int>(e.child("seq_len").integer(1, 1 << 24));
  if (e.has("seq_len_distribution"))
    t.seq_len_distribution = read_seq_len_distribution(e.child("seq_len_distribution"), t.seq_len);
  if (e.has("grad_accum"))
    t.grad_accum = static_cast<int>(e.child("grad_accum").integer(1, 1 << 20));
  if (e.has("steps")) {
    t.steps = static_cast<int>(e.child("steps").integer(1, 1 << 20));
    t.steps_where = e.child("steps").where();
  }
  if (e.has("warmup_steps"))
    t.warmup_steps = static_cast<int>(e.child("warmup_steps").integer(0, 1 << 20));
  if (e.has("optimizer"))
    t.optimizer = e.child("optimizer")
                      .choice<Optimizer>({{"adamw", Optimizer::adamw},
                                          {"sgd", Optimizer::sgd},
                                          {"sgd-momentum", Optimizer::sgd_momentum}});
  t.learning_rate = e.has("learning_rate")            ? e.child("learning_rate").number(0, 1e3)
                    : t.optimizer == Optimizer::adamw ? 1e-3
                                                      : 1e-2;
  if (e.has("weight_decay"))
    t.weight_decay = e.child("weight_decay").number(0, 1e3);
  if (e.has("target_loss"))
    t.target_loss = e.child("target_loss").number(0, 1e6);
  if (e.has("loss_curve")) {
    const Entry c = e.child("loss_curve");
    t.loss_curve = c.path_value();
    try {
      t.loss_curves = read_loss_curves(t.loss_curve);
    } catch (const std::runtime_error& err) {
      c.fail(err.what());
    }
  }
  return t;
}

// A supplied loss curve names algorithms by label: one that names none of the scenario's is a
// misspelling, not a curve to ignore.
void check_loss_curve_labels(const Entry& training, const Scenario& s) {
  if (s.training.loss_curves.empty())
    return;
  std::vector<std::string> labels;
  for (const auto& a : s.algorithms) {
    if (s.training.loss_curves.contains(a.label))
      return;
    labels.push_back(a.label);
  }
  std::vector<std::string> named;
  for (const auto& [label, curve] : s.training.loss_curves)
    named.push_back(label);
  training.child("loss_curve")
      .fail(fmt::format("the curves are of {}, none of the scenario's algorithms ({})",
                        fmt::join(named, ", "), fmt::join(labels, ", ")));
}

bool is_file_label(const std::string& label) {
  if (label.empty() || label.size() > 64 || label.front() == '.')
    return false;
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '+' || c == '=' || c == '-';
  });
}

std::vector<AlgorithmSpec> read_algorithms(const Entry& e) {
  std::vector<AlgorithmSpec> out;
  std::set<std::string> seen;
  for (const auto& item : e.items()) {
    AlgorithmSpec a;
    a.where = item.where();
    if (item.is_scalar()) {
      a.name = item.text();
    } else if (item.is_map()) {
      a.name = item.child("name").text();
      if (item.has("label"))
        a.label = item.child("label").text();
      for (const auto& kv : item.node()) {
        const auto key = kv.first.as<std::string>();
        if (key == "name" || key == "label")
          continue;
        const Entry opt(item.child(key));
        a.options[key] = AlgorithmOption{opt.text(), opt.where()};
      }
    } else {
      item.fail("expected an algorithm name or a map with 'name' and options");
    }
    if (a.label.empty())
      a.label = a.name;
    // The label names output files (trace-<label>.json): it stays one plain file name.
    if (!is_file_label(a.label))
      (item.is_map() && item.has("label") ? item.child("label") : item)
          .fail(
              fmt::format("label '{}' must be 1 to 64 letters, digits, '.', '_', '+', '=' or '-', "
                          "not starting with '.'",
                          a.label));
    if (!seen.insert(a.label).second)
      item.fail(
          fmt::format("algorithm '{}' is listed twice; give one a distinct 'label'", a.label));
    out.push_back(std::move(a));
  }
  if (out.empty())
    e.fail("expected at least one algorithm");
  return out;
}

OutputSpec read_output(const Entry& e, const std::string& name, int world_size) {
  OutputSpec o;
  o.dir = "out/" + name;
  if (!e.node().IsDefined() || e.node().IsNull())
    return o;
  e.expect_map({"dir", "traces", "plots", "trace_gzip", "trace_gpus"});
  if (e.has("dir")) {
    o.dir = e.child("dir").text();
    if (o.dir.empty())
      e.child("dir").fail("expected a directory; an empty one would write into '/'");
  }
  if (e.has("traces"))
    o.traces = e.child("traces").boolean();
  if (e.has("plots"))
    o.plots = e.child("plots").boolean();
  if (e.has("trace_gzip"))
    o.trace_gzip = e.child("trace_gzip").boolean();
  if (e.has("trace_gpus")) {
    std::vector<bool> seen(static_cast<std::size_t>(world_size), false);
    for (const auto& g : e.child("trace_gpus").items()) {
      const int gpu = static_cast<int>(g.integer(0, world_size - 1));
      if (seen[static_cast<std::size_t>(gpu)])
        g.fail(fmt::format("GPU {} is listed twice", gpu));
      seen[static_cast<std::size_t>(gpu)] = true;
      o.trace_gpus.push_back(gpu);
    }
    if (o.trace_gpus.empty())
      e.child("trace_gpus").fail("expected at least one GPU index (leave the key out for all)");
    std::sort(o.trace_gpus.begin(), o.trace_gpus.end());
  }
  return o;
}

// The offset of the first byte that is not well-formed UTF-8 (RFC 3629: no overlong forms, no
// surrogates, nothing past U+10FFFF), if any. yaml-cpp passes any bytes through, and the JSON
// outputs (nlohmann) refuse them only when written, long after the file and line are known.
std::optional<std::size_t> invalid_utf8_at(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  for (std::size_t i = 0; i < s.size();) {
    const unsigned c = byte(i);
    std::size_t more = 0;
    unsigned lo = 0x80, hi = 0xBF; // the allowed range of the byte after the lead
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xC2 && c <= 0xDF) {
      more = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      more = 2;
      lo = c == 0xE0 ? 0xA0 : 0x80;
      hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
      more = 3;
      lo = c == 0xF0 ? 0x90 : 0x80;
      hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
      return i;
    }
    for (std::size_t k = 1; k <= more; ++k) {
      if (i + k >= s.size())
        return i;
      const unsigned b = byte(i + k);
      if (b < (k == 1 ? lo : 0x80u) || b > (k == 1 ? hi : 0xBFu))
        return i;
    }
    i += more + 1;
  }
  return std::nullopt;
}

// Applies one "a.b.c=value" override to the document tree.
void apply_override(YAML::Node root, const std::string& assignment, Context& ctx) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw ScenarioError(fmt::format("--set '{}': expected key.path=value", assignment));
  if (invalid_utf8_at(assignment))
    throw ScenarioError(fmt::format("--set '{}': not UTF-8 text", assignment));
  const std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = YAML::Load(assignment.substr(eq + 1));
  } catch (const YAML::Exception& ex) {
    throw ScenarioError(
        fmt::format("--set '{}': the value is not valid YAML: {}", assignment, ex.msg));
  }
  long visited = 0;
  check_keys(value, path, "--set " + path, visited);
  std::vector<std::string> keys;
  std::stringstream ss(path);
  for (std::string k; std::getline(ss, k, '.');) {
    if (k.empty())
      throw ScenarioError(fmt::format("--set '{}': empty key in the path", assignment));
    keys.push_back(k);
  }
  YAML::Node node = root;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const std::string& k = keys[i];
    const bool last = i + 1 == keys.size();
    if (node.IsSequence()) {
      std::size_t index = 0;
      auto [end, ec] = std::from_chars(k.data(), k.data() + k.size(), index);
      if (ec != std::errc() || end != k.data() + k.size() || index >= node.size())
        throw ScenarioError(fmt::format("--set '{}': '{}' is a list of {} items; expected an index",
                                        assignment, k, node.size()));
      if (last) {
        node[index] = value;
      } else {
        // "algorithms.0.H=10" on "- ddp": the item becomes {name: ddp, H: 10}.
        if (node[index].IsScalar()) {
          YAML::Node item(YAML::NodeType::Map);
          item["name"] = node[index].Scalar();
          node[index] = item;
        }
        YAML::Node next = node[index];
        node.reset(next);
      }
    } else {
      if (node.IsScalar() && i > 0) {
        // "cluster.inter_node.bandwidth=10Gb/s" on "inter_node: omnipath-100": the preset becomes
        // {preset: omnipath-100, bandwidth: 10Gb/s}.
        YAML::Node expanded(YAML::NodeType::Map);
        expanded["preset"] = node.Scalar();
        YAML::Node parent = root;
        for (std::size_t j = 0; j + 1 < i; ++j)
          parent.reset(parent[keys[j]]);
        parent[keys[i - 1]] = expanded;
        node.reset(parent[keys[i - 1]]);
      }
      if (!node.IsMap() && !node.IsNull())
        throw ScenarioError(
            fmt::format("--set '{}': '{}' is inside a single value", assignment, k));
      if (last) {
        node[k] = value;
      } else {
        if (!node[k].IsDefined() || node[k].IsNull())
          node[k] = YAML::Node(YAML::NodeType::Map); // --set output.dir=... without an output map
        YAML::Node next = node[k];
        node.reset(next);
      }
    }
  }
  ctx.overridden.insert(path);
}

// Keys written that change nothing in this scenario (issue 27.6): a user who sets them believes
// they matter. Errors are for values that cannot be; these load, with a warning each.
std::vector<std::string> ineffective_keys(const Entry& top, const Scenario& s) {
  std::vector<std::string> out;
  const Entry cluster = top.child("cluster");
  const auto note = [&](const Entry& key, const std::string& name, const std::string& why) {
    out.push_back(fmt::format("{}: key 'cluster.{}' has no effect: {}", key.where(), name, why));
  };
  if (cluster.has("gpu") && cluster.child("gpu").node().IsMap() &&
      cluster.child("gpu").has("efficiency")) {
    const auto& layers = s.model.spec.layers;
    const auto timed = [](const hw::LayerSpec& l) {
      return (l.fwd_time_per_sample_s > 0 || l.fwd_model_time_per_sample_s > 0) &&
             (l.bwd_time_per_sample_s > 0 || l.bwd_model_time_per_sample_s > 0);
    };
    if (!layers.empty() && std::all_of(layers.begin(), layers.end(), timed))
      note(cluster.child("gpu").child("efficiency"), "gpu.efficiency",
           fmt::format("every layer's time comes from {}; the efficiency scales only layers "
                       "priced by their FLOPs (model.compute: flops, a 'layers' list)",
                       s.model.compute == "roofline"
                           ? "the per-op roofline (model.compute: roofline, the default for this "
                             "model)"
                           : "measured times (model.profile or cluster.calibration)"));
  }
  const auto& c = s.cluster;
  if (c.nodes == 1)
    for (const std::string key : {"inter_node", "nics_per_node"})
      if (cluster.has(key))
        note(cluster.child(key), key, "one node (cluster.nodes: 1) sends nothing between nodes");
  if (c.gpus_per_node == 1 && cluster.has("intra_node"))
    note(cluster.child("intra_node"), "intra_node",
         "one GPU per node (cluster.gpus_per_node: 1) sends nothing inside a node");
  // Not without effect, but costly and easy to miss (issue 25.5): in the alpha-beta views a flat
  // ring over 3 sites x 8 GPUs waits out the 30 ms WAN latency on all 46 steps of a 32 MiB
  // all-reduce (1.43 s against 0.156 s reduced inside each site first). NCCL's own ring, as its
  // tuner prices it, crosses the network on 2(nodes-1) steps only: it costs as much only when
  // the sites hold several nodes (24 one-GPU nodes: 46 crossings, 151 s against 16.5 s a DDP step).
  const bool nccl = c.collectives == CollectiveFidelity::nccl;
  if (c.sites.size() > 1 && cluster.has("collective_algorithm") &&
      (c.collective_algorithm == CollectiveAlgorithm::ring ||
       (c.collective_algorithm == CollectiveAlgorithm::tree && !nccl))) {
    const int n = c.world_size(), sites = static_cast<int>(c.sites.size());
    const int flat = nccl ? 2 * (c.nodes - 1) : 2 * (n - 1), across = 2 * (sites - 1);
    const double hop = c.wan.latency_s;
    if (flat > across)
      out.push_back(fmt::format(
          "{}: key 'cluster.collective_algorithm': a flat {} across {} WAN sites pays the WAN "
          "latency ({}) on each of its steps ({} for a {} of {} {}: {} per all-reduce); auto or "
          "hierarchical reduce inside each site first and cross the WAN 2(S-1) = {} times ({})",
          cluster.child("collective_algorithm").where(), to_string(c.collective_algorithm), sites,
          hw::format_time(hop), flat, nccl ? "NCCL ring" : "ring", nccl ? c.nodes : n,
          nccl ? "nodes" : "GPUs", hw::format_time(flat * hop), across,
          hw::format_time(across * hop)));
  }
  return out;
}

Scenario parse(YAML::Node root, Context& ctx, const std::vector<std::string>& overrides) {
  for (const auto& o : overrides)
    apply_override(root, o, ctx);
  const Entry top(ctx, root, "");
  if (!root.IsMap())
    top.fail("expected a scenario map with name, cluster, model, training and algorithms");
  top.expect_map({"name", "seed", "cluster", "model", "training", "algorithms", "output"});
  Scenario s;
  s.source = ctx.file;
  s.name = top.child("name").text();
  if (s.name.empty())
    top.child("name").fail("expected a non-empty name");
  if (top.has("seed"))
    s.seed = static_cast<std::uint64_t>(
        top.child("seed").integer(0, std::numeric_limits<long long>::max()));
  s.cluster = read_cluster(top.child("cluster"));
  s.training = read_training(top.child("training"));
  s.model = read_model(top.child("model"), s.training, s.cluster);
  s.algorithms = read_algorithms(top.child("algorithms"));
  check_loss_curve_labels(top.child("training"), s);
  s.output = read_output(Entry(ctx, root["output"], "output"), s.name, s.cluster.world_size());
  s.warnings = ineffective_keys(top, s);
  return s;
}

} // namespace

std::string shorten_quoted_values(const std::string& message, std::size_t limit) {
  std::string out;
  std::size_t i = 0;
  while (i < message.size()) {
    const std::size_t open = message.find('\'', i);
    if (open == std::string::npos) {
      out.append(message, i, std::string::npos);
      break;
    }
    const std::size_t close = message.find('\'', open + 1);
    const std::size_t end = close == std::string::npos ? message.size() : close;
    out.append(message, i, open + 1 - i);
    const std::size_t length = end - open - 1;
    if (length > limit) {
      std::size_t cut = open + 1 + limit;
      while (cut > open + 1 && (static_cast<unsigned char>(message[cut]) & 0xC0) == 0x80)
        --cut; // never inside a UTF-8 character
      out.append(message, open + 1, cut - open - 1);
      out += fmt::format("\u2026' ({} characters)", length);
    } else {
      out.append(message, open + 1, length);
      if (close != std::string::npos)
        out += '\'';
    }
    i = close == std::string::npos ? message.size() : close + 1;
  }
  const std::size_t total = 4 * limit + 1000;
  if (out.size() > total) {
    std::size_t cut = total;
    while (cut > 0 && (static_cast<unsigned char>(out[cut]) & 0xC0) == 0x80)
      --cut;
    out = out.substr(0, cut) + fmt::format("\u2026 ({} characters in all)", out.size());
  }
  return out;
}

ScenarioError::ScenarioError(const std::string& what)
    : std::runtime_error(shorten_quoted_values(what)) {}

// What YAML itself lets through but a scenario may not: a repeated key (yaml-cpp keeps the first
// and drops the second silently) and a key that is a map or a list.
// Aliases can make a small file expand exponentially ("billion laughs"): the walk stops at a
// bound far above any real scenario.
constexpr long kMaxYamlValues = 1000000;
// No scenario nests deeper than a few levels; an alias that contains itself (`a: &a [*a]`) nests
// without end and overflowed the stack (issue 26.2).
constexpr int kMaxYamlDepth = 64;

void check_keys(const YAML::Node& node, const std::string& path, const std::string& file,
                long& visited, int depth) {
  if (++visited > kMaxYamlValues)
    throw ScenarioError(fmt::format("{}:{}: key '{}': more than {} values once YAML aliases are "
                                    "expanded; expected a scenario, not a generator",
                                    file, node.Mark().line + 1, path.substr(0, path.find('.')),
                                    kMaxYamlValues));
  if (depth > kMaxYamlDepth)
    throw ScenarioError(fmt::format(
        "{}:{}: key '{}': nested more than {} levels deep; expected a scenario (is it a YAML alias "
        "that contains itself, like 'a: &a [*a]'?)",
        file, node.Mark().line + 1, path.substr(0, path.find('.')), kMaxYamlDepth));
  if (node.IsSequence()) {
    for (std::size_t i = 0; i < node.size(); ++i)
      check_keys(node[i], path.empty() ? std::to_string(i) : path + "." + std::to_string(i), file,
                 visited, depth + 1);
    return;
  }
  if (!node.IsMap())
    return;
  std::map<std::string, int> first_line;
  for (const auto& kv : node) {
    const int line = kv.first.Mark().line + 1;
    if (!kv.first.IsScalar())
      throw ScenarioError(fmt::format("{}:{}: key '{}': a key must be a plain name, not a map or a "
                                      "list",
                                      file, line, path));
    const std::string key = path.empty() ? kv.first.Scalar() : path + "." + kv.first.Scalar();
    if (auto [it, fresh] = first_line.try_emplace(kv.first.Scalar(), line); !fresh)
      throw ScenarioError(fmt::format("{}:{}: key '{}': given twice (first at line {}); keep one",
                                      file, line, key, it->second));
    check_keys(kv.second, key, file, visited, depth + 1);
  }
}

Scenario load_scenario_text(const std::string& yaml, const std::string& name_for_errors,
                            const std::vector<std::string>& overrides) {
  Context ctx{name_for_errors, {}};
  if (const auto at = invalid_utf8_at(yaml)) {
    const auto bad = yaml.begin() + static_cast<std::ptrdiff_t>(*at);
    const std::size_t newline = yaml.rfind('\n', *at);
    throw ScenarioError(fmt::format(
        "{}:{}: byte 0x{:02X} at column {} is not UTF-8; a scenario file is UTF-8 text",
        name_for_errors, 1 + std::count(yaml.begin(), bad, '\n'), static_cast<unsigned char>(*bad),
        newline == std::string::npos ? *at + 1 : *at - newline));
  }
  YAML::Node root;
  try {
    const auto documents = YAML::LoadAll(yaml);
    if (documents.size() > 1)
      throw ScenarioError(fmt::format("{}:{}: a second YAML document ('---'); a scenario file "
                                      "holds one",
                                      name_for_errors, documents[1].Mark().line + 1));
    if (!documents.empty())
      root = documents.front();
  } catch (const YAML::Exception& ex) {
    throw ScenarioError(
        fmt::format("{}:{}: not valid YAML: {}", name_for_errors, ex.mark.line + 1, ex.msg));
  }
  long visited = 0;
  check_keys(root, "", name_for_errors, visited);
  return parse(root, ctx, overrides);
}

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides) {
  std::string text;
  try {
    text = read_user_file(path, kScenarioFile);
  } catch (const std::runtime_error& e) {
    throw ScenarioError(e.what());
  }
  return load_scenario_text(text, path, overrides);
}

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
  auto link = [](const hw::LinkSpec& l) {
    return json{{"name", l.name},
                {"bandwidth_Bps", l.bandwidth_Bps},
                {"line_rate_Bps", l.line_rate_Bps()},
                {"efficiency", l.efficiency},
                {"latency_s", l.latency_s}};
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
        {"hbm_bandwidth_Bps", c.gpu.hbm_bandwidth_Bps},
        {"efficiency", c.gpu.efficiency},
        {"comm_interference", c.gpu.comm_interference}}},
      {"intra_node", link(c.intra_node)},
      {"inter_node", link(c.inter_node)},
      {"nics_per_node", c.nics_per_node},
      {"stragglers", stragglers},
      {"jitter", {{"distribution", to_string(c.jitter.distribution)}, {"sigma", c.jitter.sigma}}},
      {"network_model", to_string(c.network_model)},
      {"collectives", to_string(c.collectives)},
      {"collective_algorithm", to_string(c.collective_algorithm)},
      {"nccl_protocol", to_string(c.nccl_protocol)},
      {"calibration", c.calibration},
  };
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
  if (!s.warnings.empty())
    out["warnings"] = s.warnings;
  return out;
}

} // namespace overlapsim::scenario
