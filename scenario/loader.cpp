#include "scenario/loader.h"
#include "scenario/readers.h"
#include "scenario/user_file.h"

#include "comm/ring_shape.h"
#include "hw/conv_ops.h"
#include "hw/system_presets.h"
#include "hw/transformer_ops.h"
#include "hw/units.h"
#include "hw/vit_ops.h"
#include "scenario/calibration.h"
#include "scenario/delimited_fields.h"
#include "scenario/layer_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h> // fmt::join (in <fmt/format.h> before fmt 11)
#include <nlohmann/json.hpp>
#include <yaml-cpp/depthguard.h> // YAML::DeepRecursion
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

using yaml::check_loss_curve_labels;
using yaml::Context;
using yaml::Entry;
using yaml::read_algorithms;
using yaml::read_cluster;
using yaml::read_model;
using yaml::read_output;
using yaml::read_training;

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

// Aliases can make a small file expand exponentially ("billion laughs"): the walk stops at a
// bound far above any real scenario.
constexpr long kMaxYamlValues = 1000000;
// No scenario nests deeper than a few levels; an alias that contains itself (`a: &a [*a]`) nests
// without end and overflowed the stack (issue 26.2).
constexpr int kMaxYamlDepth = 64;

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
  } catch (const YAML::DeepRecursion&) {
    throw ScenarioError(fmt::format("--set '{}': the value is nested more than {} levels deep",
                                    assignment.substr(0, eq), kMaxYamlDepth));
  } catch (const YAML::Exception& ex) {
    throw ScenarioError(
        fmt::format("--set '{}': the value is not valid YAML: {}", assignment, ex.msg));
  }
  long visited = 0;
  check_keys(value, path, "--set " + path, visited);
  // split_fields keeps a trailing empty key: getline dropped it, and `cluster.nodes.=1` set
  // cluster.nodes (issue 63.9).
  const std::vector<std::string> keys = split_fields(path, '.');
  for (std::size_t i = 0; i < keys.size(); ++i)
    if (keys[i].empty())
      throw ScenarioError(fmt::format(
          "--set '{}': key {} of the path '{}' is empty; expected key.path=value (keys joined "
          "by single dots)",
          assignment, i + 1, path));
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
    for (const std::string key : {"inter_node", "nics_per_node", "fabric"})
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
    const auto steps = [](int ranks) {
      return static_cast<int>(comm::ring_shape(CollectiveOp::all_reduce, ranks).steps);
    };
    const int flat = steps(nccl ? c.nodes : n), across = steps(sites);
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
  top.expect_map(
      {"name", "seed", "cluster", "model", "training", "algorithms", "output", "parallelism"});
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
  if (top.has("parallelism"))
    s.parallelism = yaml::read_parallelism(top.child("parallelism"), s, s.warnings);
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
  } catch (const YAML::DeepRecursion& ex) {
    // yaml-cpp's own bound (its message is "bad file"), far past check_keys' (issue 63.7).
    throw ScenarioError(fmt::format("{}:{}: nested more than {} levels deep; expected a scenario",
                                    name_for_errors, ex.mark.line + 1, kMaxYamlDepth));
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

} // namespace overlapsim::scenario
