#include "scenario/calibration.h"
#include "scenario/user_json.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace overlapsim::scenario {

namespace {

using nlohmann::json;

json link_json(const LinkFit& f) {
  json points = json::array();
  for (const auto& p : f.points) {
    points.push_back({{"bytes", p.bytes}, {"seconds", p.seconds}});
    if (p.last_caller_lag_s > 0)
      points.back()["last_caller_lag_s"] = p.last_caller_lag_s;
    if (p.end_spread_s > 0)
      points.back()["end_spread_s"] = p.end_spread_s;
  }
  json out{{"op", f.op},
           {"ranks", f.ranks},
           {"latency_s", f.latency_s},
           {"bandwidth_Bps", f.bandwidth_Bps},
           {"max_relative_residual", f.max_relative_residual},
           {"points", points}};
  if (f.in_place)
    out["in_place"] = true;
  if (f.reverse_busy_s > 0)
    out["reverse_busy_s"] = f.reverse_busy_s;
  return out;
}

// json::at with the file and key in the message.
const json& field(const json& j, const char* key, const std::string& where) {
  if (!j.is_object() || !j.contains(key))
    throw std::runtime_error(fmt::format("{}: missing key '{}'", where, key));
  return j.at(key);
}

// Issue 63.9: a bandwidth of 1e308 B/s was read (and printed as "inf TB/s per node"): a value past
// what any hardware measures is a damaged profile. Bounds as a scenario's (docs/SCENARIO.md).
constexpr double kMaxBandwidthBps = 1e15; // 1 PB/s
constexpr double kMaxSeconds = 3600;      // 1 h: a layer's time, a latency, a measured point
constexpr double kMaxBytes = 1e18;        // 1 EB: a measured point's size; any other value

double positive(const json& j, const char* key, const std::string& where, bool allow_zero,
                double max = kMaxBytes) {
  const json& v = field(j, key, where);
  if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0 ||
      (!allow_zero && v.get<double>() == 0) || v.get<double>() > max)
    throw std::runtime_error(fmt::format("{}: '{}' must be a {} number at most {:g}, found {}",
                                         where, key, allow_zero ? "non-negative" : "positive", max,
                                         v.dump().substr(0, 200)));
  return v.get<double>();
}

// An optional whole number in [lo, hi] (`fallback` when absent): json::value converted 1e30 to
// -2147483648 (issue 63.7).
int whole(const json& j, const char* key, const std::string& where, int lo, int hi, int fallback) {
  if (!j.is_object() || !j.contains(key))
    return fallback;
  const json& v = j.at(key);
  if (!v.is_number_integer() || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi)
    throw std::runtime_error(fmt::format("{}: '{}' must be a whole number from {} to {}, found {}",
                                         where, key, lo, hi, v.dump().substr(0, 200)));
  return v.get<int>();
}

LinkFit read_link(const json& j, const std::string& where) {
  LinkFit f;
  f.op = j.value("op", "");
  f.ranks = whole(j, "ranks", where, 0, 1 << 20, 0); // at most a scenario's GPUs
  f.latency_s = positive(j, "latency_s", where, true, kMaxSeconds);
  f.bandwidth_Bps = positive(j, "bandwidth_Bps", where, false, kMaxBandwidthBps);
  f.max_relative_residual = j.value("max_relative_residual", 0.0);
  f.in_place = j.value("in_place", false);
  if (j.contains("reverse_busy_s")) {
    f.reverse_busy_s = positive(j, "reverse_busy_s", where, true);
    if (f.reverse_busy_s > 10)
      throw std::runtime_error(
          fmt::format("{}: 'reverse_busy_s' must be at most 10 (seconds)", where));
  }
  if (j.contains("points"))
    for (const auto& p : j.at("points")) {
      const std::string at = fmt::format("{}: point {}", where, f.points.size() + 1);
      f.points.push_back(SizeTime{positive(p, "bytes", at, true, kMaxBytes),
                                  positive(p, "seconds", at, true, kMaxSeconds)});
      // Seconds a member ends after another: at most 10, as reverse_busy_s.
      const auto apart = [&](const char* key) {
        if (!p.contains(key))
          return 0.0;
        const double s = positive(p, key, at, true);
        if (s > 10)
          throw std::runtime_error(fmt::format("{}: '{}' must be at most 10 (seconds)", at, key));
        return s;
      };
      f.points.back().last_caller_lag_s = apart("last_caller_lag_s");
      f.points.back().end_spread_s = apart("end_spread_s");
    }
  return f;
}

} // namespace

Calibration read_calibration(const std::string& path) {
  const json j = read_user_json(path, kCalibrationFile);
  const std::string schema = j.is_object() ? j.value("schema", "") : "";
  if (schema != kCalibrationSchema)
    throw std::runtime_error(fmt::format("{}: expected \"schema\": \"{}\", found '{}'", path,
                                         kCalibrationSchema, schema));
  Calibration c;
  c.source = j.value("source", "");
  c.device = j.value("device", "");
  if (j.contains("model")) {
    const json& m = j.at("model");
    const std::string where = path + ": model";
    c.model = m.value("name", "");
    c.micro_batch = whole(m, "micro_batch", where, 0, 16777216, 0); // a scenario's bound
    for (const auto& l : field(m, "layers", where)) {
      const std::string lw = fmt::format("{}.layers[{}]", where, c.layers.size());
      c.layers.push_back(LayerTiming{field(l, "name", lw).get<std::string>(),
                                     positive(l, "fwd_time_per_sample_s", lw, true, kMaxSeconds),
                                     positive(l, "bwd_time_per_sample_s", lw, true, kMaxSeconds)});
      if (l.contains("activation_bytes_per_sample"))
        c.layers.back().activation_bytes_per_sample =
            positive(l, "activation_bytes_per_sample", lw, true);
      if (l.contains("tp_forward_s"))
        c.layers.back().tp_forward_s = positive(l, "tp_forward_s", lw, true, kMaxSeconds);
      if (l.contains("tp_backward_s"))
        c.layers.back().tp_backward_s = positive(l, "tp_backward_s", lw, true, kMaxSeconds);
    }
    c.tensor_parallel = whole(m, "tensor_parallel", where, 0, 1 << 20, 0);
    if (m.contains("optimizer_time_per_param_s"))
      c.optimizer_time_per_param_s = positive(m, "optimizer_time_per_param_s", where, true);
    if (m.contains("outer_step_time_per_param_s"))
      c.outer_step_time_per_param_s = positive(m, "outer_step_time_per_param_s", where, true);
    if (m.contains("outer_step_alone_time_per_param_s"))
      c.outer_step_alone_time_per_param_s =
          positive(m, "outer_step_alone_time_per_param_s", where, true);
    if (m.contains("optimizer_estimate_ratio"))
      c.optimizer_estimate_ratio = positive(m, "optimizer_estimate_ratio", where, false);
    if (m.contains("back_to_back_compute_ratio")) {
      c.back_to_back_compute_ratio = positive(m, "back_to_back_compute_ratio", where, false);
      if (c.back_to_back_compute_ratio < 0.25 || c.back_to_back_compute_ratio > 4)
        throw std::runtime_error(
            fmt::format("{}: 'back_to_back_compute_ratio' must be within [0.25, 4], found {}",
                        where, c.back_to_back_compute_ratio));
    }
    const auto read_points = [&](const char* key, std::vector<std::pair<double, double>>& out) {
      if (!m.contains(key))
        return;
      for (const auto& p : field(m, key, where)) {
        const std::string pw = fmt::format("{}.{}[{}]", where, key, out.size());
        if (!p.is_array() || p.size() != 2 || !p[0].is_number() || !p[1].is_number() ||
            !(p[0].get<double>() > 0) || !(p[1].get<double>() > 0) ||
            !std::isfinite(p[0].get<double>()) || !std::isfinite(p[1].get<double>()))
          throw std::runtime_error(
              fmt::format("{}: expected [parameters, seconds], both positive numbers", pw));
        if (!out.empty() && p[0].get<double>() <= out.back().first)
          throw std::runtime_error(
              fmt::format("{}: expected parameters ascending, point after point", pw));
        out.emplace_back(p[0].get<double>(), p[1].get<double>());
      }
    };
    read_points("optimizer_points", c.optimizer_points);
    read_points("optimizer_alone_points", c.optimizer_alone_points);
    if (m.contains("memory_shared_by")) {
      const json& k = m.at("memory_shared_by");
      if (!k.is_number_integer() || k.get<std::int64_t>() < 1 || k.get<std::int64_t>() > 1024)
        throw std::runtime_error(fmt::format(
            "{}: 'memory_shared_by' must be a whole number of workers from 1 to 1024, found {}",
            where, k.dump()));
      c.memory_shared_by = k.get<int>();
    }
    if (m.contains("compute_jitter_sigma_1s")) {
      c.compute_jitter_sigma_1s = positive(m, "compute_jitter_sigma_1s", where, true);
      if (c.compute_jitter_sigma_1s > 10)
        throw std::runtime_error(
            fmt::format("{}: 'compute_jitter_sigma_1s' must be within [0, 10], found {}", where,
                        c.compute_jitter_sigma_1s));
    }
    if (m.contains("compute_drift")) {
      const json& d = m.at("compute_drift");
      if (!d.is_number() || !std::isfinite(d.get<double>()) || d.get<double>() <= -1 ||
          d.get<double>() > 100)
        throw std::runtime_error(
            fmt::format("{}: 'compute_drift' must be a number above -1 and at most 100, found {}",
                        where, d.dump().substr(0, 200)));
      c.compute_drift = d.get<double>();
    }
    if (m.contains("memory_bandwidth_Bps"))
      c.memory_bandwidth_Bps = positive(m, "memory_bandwidth_Bps", where, false, kMaxBandwidthBps);
    if (m.contains("memory_ops")) {
      const json& ops = m.at("memory_ops");
      const std::string ow = where + ".memory_ops";
      if (!ops.is_object())
        throw std::runtime_error(fmt::format("{}: expected a map of op name to its price", ow));
      for (const auto& [name, price] : ops.items()) {
        if (name != "copy" && name != "accumulate" && name != "fill" && name != "reload master")
          throw std::runtime_error(fmt::format(
              "{}.{}: unknown op; expected copy, accumulate, fill or reload master", ow, name));
        if (!price.is_object())
          throw std::runtime_error(
              fmt::format("{}.{}: expected {{\"fixed_s\": ..., \"per_byte_s\": ...}}", ow, name));
        c.memory_ops[name] = {positive(price, "fixed_s", ow + "." + name, true),
                              positive(price, "per_byte_s", ow + "." + name, true)};
        if (price.contains("alone_per_byte_s"))
          c.memory_ops[name].alone_per_byte_s =
              positive(price, "alone_per_byte_s", ow + "." + name, true);
      }
    }
    if (m.contains("replicator_phases")) {
      const json& phases = m.at("replicator_phases");
      const std::string pw = where + ".replicator_phases";
      if (!phases.is_object())
        throw std::runtime_error(fmt::format("{}: expected a map of phase name to its price", pw));
      for (const auto& [name, price] : phases.items()) {
        if (!price.is_object())
          throw std::runtime_error(fmt::format(
              "{}.{}: expected {{\"fixed_s\": ..., \"per_element_s\": ...}}", pw, name));
        c.replicator_phases[name] = {positive(price, "fixed_s", pw + "." + name, true),
                                     positive(price, "per_element_s", pw + "." + name, true)};
      }
    }
    const auto read_shares = [](const json& from, const std::string& at,
                                std::optional<double>& comm, std::optional<double>& compute) {
      for (const auto& [key, share] :
           {std::pair{"comm_interference", &comm}, std::pair{"compute_interference", &compute}}) {
        if (!from.contains(key))
          continue;
        const double f = positive(from, key, at, true);
        if (f > 0.9)
          throw std::runtime_error(fmt::format("{}: {} is {}, expected 0 to 0.9", at, key, f));
        *share = f;
      }
    };
    read_shares(m, where, c.comm_interference, c.compute_interference);
    if (m.contains("interference_by_op")) {
      const json& ops = m.at("interference_by_op");
      const std::string iw = where + ".interference_by_op";
      if (!ops.is_object())
        throw std::runtime_error(
            fmt::format("{}: expected a map of collective name to its comm_interference and "
                        "compute_interference",
                        iw));
      for (const auto& [name, shares] : ops.items()) {
        if (name != "all_reduce" && name != "reduce_scatter" && name != "all_gather" &&
            name != "broadcast" && name != "reduce" && name != "all_to_all" && name != "send_recv")
          throw std::runtime_error(
              fmt::format("{}.{}: unknown collective; expected all_reduce, reduce_scatter, "
                          "all_gather, broadcast, reduce, all_to_all or send_recv",
                          iw, name));
        if (!shares.is_object())
          throw std::runtime_error(fmt::format(
              "{}.{}: expected {{\"comm_interference\": ..., \"compute_interference\": ...}}", iw,
              name));
        auto& s = c.interference_by_op[name];
        read_shares(shares, iw + "." + name, s.comm_interference, s.compute_interference);
      }
    }
    if (m.contains("collective_start_costs")) {
      const json& ops = m.at("collective_start_costs");
      const std::string sw = where + ".collective_start_costs";
      if (!ops.is_object())
        throw std::runtime_error(
            fmt::format("{}: expected a map of collective name to its fixed_s and per_byte_s", sw));
      for (const auto& [name, cost] : ops.items()) {
        if (name != "all_reduce" && name != "reduce_scatter" && name != "all_gather" &&
            name != "broadcast" && name != "reduce" && name != "all_to_all" && name != "send_recv")
          throw std::runtime_error(
              fmt::format("{}.{}: unknown collective; expected all_reduce, reduce_scatter, "
                          "all_gather, broadcast, reduce, all_to_all or send_recv",
                          sw, name));
        if (!cost.is_object())
          throw std::runtime_error(fmt::format(
              "{}.{}: expected {{\"fixed_s\": ..., \"per_byte_s\": ..., \"share\": ...}}", sw,
              name));
        auto& start = c.collective_start_costs[name];
        start.fixed_s = positive(cost, "fixed_s", sw + "." + name, true);
        start.per_byte_s = positive(cost, "per_byte_s", sw + "." + name, true);
        if (cost.contains("share")) {
          start.share = positive(cost, "share", sw + "." + name, false);
          if (start.share < hw::GpuSpec::StartCost::kLeastShare ||
              start.share > hw::GpuSpec::StartCost::kMostShare)
            throw std::runtime_error(fmt::format("{}.{}: share is {}, expected {} to {}", sw, name,
                                                 start.share, hw::GpuSpec::StartCost::kLeastShare,
                                                 hw::GpuSpec::StartCost::kMostShare));
        }
      }
    }
    if (m.contains("comm_stream_share")) {
      const double f = positive(m, "comm_stream_share", where, false);
      if (f < 0.05 || f > 0.95)
        throw std::runtime_error(
            fmt::format("{}: comm_stream_share is {}, expected 0.05 to 0.95", where, f));
      c.comm_stream_share = f;
    }
    for (const auto& [key, wait] :
         {std::pair{"collective_handoff_wait_s", &c.collective_handoff_wait_s},
          std::pair{"compute_handoff_wait_s", &c.compute_handoff_wait_s}}) {
      if (!m.contains(key))
        continue;
      const double s = positive(m, key, where, true);
      if (s > 1)
        throw std::runtime_error(fmt::format("{}: {} is {}, expected 0 to 1", where, key, s));
      *wait = s;
    }
  }
  if (j.contains("links")) {
    const json& l = j.at("links");
    if (l.contains("intra_node"))
      c.intra_node = read_link(l.at("intra_node"), path + ": links.intra_node");
    if (l.contains("inter_node"))
      c.inter_node = read_link(l.at("inter_node"), path + ": links.inter_node");
    for (const auto& [key, ops] :
         {std::pair{"intra_node_ops", &c.intra_node_ops},
          std::pair{"inter_node_ops", &c.inter_node_ops}, std::pair{"local_ops", &c.local_ops}})
      if (l.contains(key))
        for (const auto& f : l.at(key)) {
          const std::string where = fmt::format("{}: links.{}[{}]", path, key, ops->size());
          ops->push_back(read_link(f, where));
          try {
            ring_shape(ops->back().op, std::max(2, ops->back().ranks)); // a known op
          } catch (const std::exception& e) {
            throw std::runtime_error(fmt::format("{}: {}", where, e.what()));
          }
          if (ops == &c.local_ops && ops->back().ranks != 1)
            throw std::runtime_error(
                fmt::format("{}: 'ranks' is {}, expected 1 (a collective over one rank)", where,
                            ops->back().ranks));
        }
  }
  return c;
}

std::string calibration_json(const Calibration& c) {
  json layers = json::array();
  for (const auto& l : c.layers) {
    layers.push_back({{"name", l.name},
                      {"fwd_time_per_sample_s", l.fwd_time_per_sample_s},
                      {"bwd_time_per_sample_s", l.bwd_time_per_sample_s}});
    if (l.activation_bytes_per_sample > 0)
      layers.back()["activation_bytes_per_sample"] = l.activation_bytes_per_sample;
    if (c.tensor_parallel > 1) {
      layers.back()["tp_forward_s"] = l.tp_forward_s;
      layers.back()["tp_backward_s"] = l.tp_backward_s;
    }
  }
  json links = json::object();
  if (c.intra_node)
    links["intra_node"] = link_json(*c.intra_node);
  if (c.inter_node)
    links["inter_node"] = link_json(*c.inter_node);
  for (const auto& [key, ops] :
       {std::pair{"intra_node_ops", &c.intra_node_ops},
        std::pair{"inter_node_ops", &c.inter_node_ops}, std::pair{"local_ops", &c.local_ops}})
    if (!ops->empty()) {
      links[key] = json::array();
      for (const auto& f : *ops)
        links[key].push_back(link_json(f));
    }
  json out = {{"schema", kCalibrationSchema}, {"source", c.source}, {"device", c.device}};
  if (!c.layers.empty()) {
    json model = {{"name", c.model}, {"micro_batch", c.micro_batch}, {"layers", layers}};
    if (c.tensor_parallel > 1)
      model["tensor_parallel"] = c.tensor_parallel;
    if (c.optimizer_time_per_param_s > 0)
      model["optimizer_time_per_param_s"] = c.optimizer_time_per_param_s;
    if (c.outer_step_time_per_param_s > 0)
      model["outer_step_time_per_param_s"] = c.outer_step_time_per_param_s;
    if (c.outer_step_alone_time_per_param_s > 0)
      model["outer_step_alone_time_per_param_s"] = c.outer_step_alone_time_per_param_s;
    if (c.optimizer_estimate_ratio > 0)
      model["optimizer_estimate_ratio"] = c.optimizer_estimate_ratio;
    if (c.back_to_back_compute_ratio > 0)
      model["back_to_back_compute_ratio"] = c.back_to_back_compute_ratio;
    for (const auto& [key, points] : {std::pair{"optimizer_points", &c.optimizer_points},
                                      {"optimizer_alone_points", &c.optimizer_alone_points}}) {
      if (points->empty())
        continue;
      model[key] = json::array();
      for (const auto& [p, t] : *points)
        model[key].push_back({p, t});
    }
    if (c.memory_shared_by > 1)
      model["memory_shared_by"] = c.memory_shared_by;
    if (c.compute_jitter_sigma_1s > 0)
      model["compute_jitter_sigma_1s"] = c.compute_jitter_sigma_1s;
    if (c.compute_drift)
      model["compute_drift"] = *c.compute_drift;
    if (c.memory_bandwidth_Bps > 0)
      model["memory_bandwidth_Bps"] = c.memory_bandwidth_Bps;
    for (const auto& [name, price] : c.memory_ops) {
      model["memory_ops"][name] = {{"fixed_s", price.fixed_s}, {"per_byte_s", price.per_byte_s}};
      if (price.alone_per_byte_s > 0)
        model["memory_ops"][name]["alone_per_byte_s"] = price.alone_per_byte_s;
    }
    for (const auto& [name, price] : c.replicator_phases)
      model["replicator_phases"][name] = {{"fixed_s", price.fixed_s},
                                          {"per_element_s", price.per_element_s}};
    if (c.comm_interference)
      model["comm_interference"] = *c.comm_interference;
    if (c.compute_interference)
      model["compute_interference"] = *c.compute_interference;
    for (const auto& [name, s] : c.interference_by_op) {
      json shares = json::object();
      if (s.comm_interference)
        shares["comm_interference"] = *s.comm_interference;
      if (s.compute_interference)
        shares["compute_interference"] = *s.compute_interference;
      model["interference_by_op"][name] = shares;
    }
    for (const auto& [name, cost] : c.collective_start_costs)
      model["collective_start_costs"][name] = {
          {"fixed_s", cost.fixed_s}, {"per_byte_s", cost.per_byte_s}, {"share", cost.share}};
    if (c.comm_stream_share)
      model["comm_stream_share"] = *c.comm_stream_share;
    if (c.collective_handoff_wait_s)
      model["collective_handoff_wait_s"] = *c.collective_handoff_wait_s;
    if (c.compute_handoff_wait_s)
      model["compute_handoff_wait_s"] = *c.compute_handoff_wait_s;
    out["model"] = model;
  }
  out["links"] = links;
  return out.dump(2) + "\n";
}

comm::RingShape ring_shape(std::string_view op, int ranks) {
  if (ranks < 1)
    throw std::runtime_error(fmt::format("a collective fit needs at least 1 rank, got {}", ranks));
  const std::optional<CollectiveOp> known = parse_calibration_op(op);
  if (!known)
    throw std::runtime_error(fmt::format(
        "unknown collective '{}'; expected all_reduce, reduce_scatter, all_gather, broadcast, "
        "reduce, all_to_all or send_recv",
        op));
  if (ranks == 1)
    return {1.0, 1.0};
  return comm::ring_shape(*known, ranks);
}

LinkFit fit_alpha_beta(std::string op, int ranks, std::vector<SizeTime> points) {
  const comm::RingShape shape = ring_shape(op, ranks);
  double smallest = 0, largest = 0;
  for (const auto& p : points) {
    if (!(p.seconds > 0) || p.bytes < 0)
      throw std::runtime_error(
          fmt::format("a measured point has a non-positive time ({} B, {} s)", p.bytes, p.seconds));
    smallest = smallest == 0 ? p.bytes : std::min(smallest, p.bytes);
    largest = std::max(largest, p.bytes);
  }
  if (points.size() < 2 || largest <= smallest)
    throw std::runtime_error("fitting alpha and beta needs measurements at two sizes at least");
  // Weighted least squares of t = a + b S with weights 1/t: between plain least squares (only
  // the largest sizes count) and relative errors (1/t^2, which lets the noisy small sizes, a few
  // jittery milliseconds on a busy host, bend the bandwidth).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : points) {
    const double w = 1.0 / p.seconds;
    sw += w, sx += w * p.bytes, sy += w * p.seconds;
    sxx += w * p.bytes * p.bytes, sxy += w * p.bytes * p.seconds;
  }
  const double det = sw * sxx - sx * sx;
  double b = (sw * sxy - sx * sy) / det;
  double a = (sy - b * sx) / sw;
  if (!(b > 0))
    throw std::runtime_error(fmt::format(
        "the {} times do not grow with size (slope {:.3g} s/B): no bandwidth to fit", op, b));
  if (a < 0) { // refit the slope through the origin: zero latency
    a = 0;
    b = sxy / sxx;
  }
  LinkFit f;
  f.op = std::move(op);
  f.ranks = ranks;
  f.latency_s = a / shape.steps;
  f.bandwidth_Bps = shape.bus_factor / b;
  for (const auto& p : points)
    f.max_relative_residual =
        std::max(f.max_relative_residual, std::abs(a + b * p.bytes - p.seconds) / p.seconds);
  f.points = std::move(points);
  return f;
}

LinkFit import_nccl_tests(std::string_view text, const std::string& name, std::string op,
                          int ranks) {
  std::vector<SizeTime> points;
  int counted_ranks = 0;
  std::istringstream in{std::string(text)};
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;)
      w.push_back(s);
    if (w.empty())
      continue;
    if (w[0] == "#") {
      if (w.size() > 2 && w[1] == "Rank")
        ++counted_ranks;
      continue;
    }
    if (w[0][0] == '#')
      continue;
    // size count type redop [root] time algbw busbw #wrong time algbw busbw #wrong
    const std::size_t time_column = w.size() >= 13 ? 5 : 4;
    if (w.size() < 8)
      throw std::runtime_error(fmt::format(
          "{}:{}: expected an nccl-tests row (size count type redop [root] time algbw busbw ...)",
          name, number));
    // A negative, infinite or absurd size or time (microseconds) was fitted as measured (63.9).
    bool usable = false;
    try {
      points.push_back(SizeTime{std::stod(w[0]), std::stod(w[time_column]) * 1e-6});
      usable = std::isfinite(points.back().bytes) && points.back().bytes >= 0 &&
               points.back().bytes <= kMaxBytes && std::isfinite(points.back().seconds) &&
               points.back().seconds >= 0 && points.back().seconds <= kMaxSeconds;
    } catch (const std::exception&) {
    }
    if (!usable)
      throw std::runtime_error(
          fmt::format("{}:{}: expected a size of 0 to {:g} bytes and a time of 0 to {:g} us, got "
                      "'{}' and '{}'",
                      name, number, kMaxBytes, kMaxSeconds * 1e6, w[0], w[time_column]));
  }
  if (ranks == 0)
    ranks = counted_ranks;
  if (ranks < 2)
    throw std::runtime_error(
        fmt::format("{}: cannot tell how many ranks ran (no '#  Rank' lines): pass --ranks", name));
  // nccl-tests' smallest sizes sit on a latency floor that is not the ring's per-step latency
  // times steps; all points still enter the fit, weighted by relative error.
  return fit_alpha_beta(std::move(op), ranks, std::move(points));
}

BytesMap collective_bytes_map(const LinkFit& link, const LinkFit& op) {
  const auto shape = ring_shape(op.op, op.ranks);
  BytesMap m;
  m.scale = link.bandwidth_Bps / op.bandwidth_Bps;
  m.offset = shape.bus_factor > 0 ? shape.steps * (op.latency_s - link.latency_s) *
                                        link.bandwidth_Bps / shape.bus_factor
                                  : 0.0;
  // Each measured time T at size S, as the link's model runs it: steps x a_link + k S' / B_link.
  m.ranks = op.ranks;
  auto points = op.points;
  std::sort(points.begin(), points.end(),
            [](const SizeTime& a, const SizeTime& b) { return a.bytes < b.bytes; });
  for (const auto& p : points) {
    if (!(p.bytes > 0) || !(p.seconds > 0) || !(shape.bus_factor > 0))
      continue;
    double mapped = std::max(0.0, (p.seconds - shape.steps * link.latency_s) * link.bandwidth_Bps /
                                      shape.bus_factor);
    if (!m.table.empty()) {
      if (p.bytes <= m.table.back().first)
        continue; // the same size twice: the first
      mapped = std::max(mapped, m.table.back().second);
    }
    m.table.emplace_back(p.bytes, mapped);
  }
  // A profile that measured either at some size measured it at every size (0 is not written):
  // the all-reduce's chance 12 us lag at 70 KB, alone in the list, lent 16 MB a lag it measured
  // as none and hid its 5 ms spread of the ends.
  const auto measured_at = [&](double SizeTime::*field,
                               std::vector<std::pair<double, double>>& to) {
    if (std::none_of(points.begin(), points.end(), [&](const SizeTime& p) { return p.*field > 0; }))
      return;
    for (const auto& p : points)
      if (p.bytes > 0 && (to.empty() || p.bytes > to.back().first))
        to.emplace_back(p.bytes, std::max(0.0, p.*field));
  };
  measured_at(&SizeTime::last_caller_lag_s, m.last_caller_lags);
  measured_at(&SizeTime::end_spread_s, m.end_spreads);
  return m;
}

double latency_floor(const LinkFit& link, const std::vector<LinkFit>& ops) {
  double floor = link.latency_s;
  for (const auto& op : ops) {
    const auto shape = ring_shape(op.op, op.ranks);
    for (const auto& p : op.points)
      if (p.seconds > 0 && shape.steps > 0)
        floor = std::min(floor, p.seconds / shape.steps);
  }
  return floor;
}

double LinkFit::local_seconds_for(double bytes) const {
  const double per_byte = bandwidth_Bps > 0 ? 1.0 / bandwidth_Bps : 0.0;
  if (points.empty())
    return latency_s + bytes * per_byte;
  // Ascending by size, as the profile sweeps them (a file written by hand may not be).
  const auto by_size = [](const SizeTime& a, const SizeTime& b) { return a.bytes < b.bytes; };
  std::vector<SizeTime> sorted;
  if (!std::is_sorted(points.begin(), points.end(), by_size)) {
    sorted = points;
    std::sort(sorted.begin(), sorted.end(), by_size);
  }
  const std::vector<SizeTime>& p = sorted.empty() ? points : sorted;
  if (bytes <= p.front().bytes)
    return std::max(latency_s, p.front().seconds - per_byte * (p.front().bytes - bytes));
  if (bytes >= p.back().bytes)
    return p.back().seconds + per_byte * (bytes - p.back().bytes);
  const auto hi = std::lower_bound(p.begin(), p.end(), bytes,
                                   [](const SizeTime& q, double s) { return q.bytes < s; });
  const auto lo = std::prev(hi);
  return lo->seconds + (bytes - lo->bytes) / (hi->bytes - lo->bytes) * (hi->seconds - lo->seconds);
}

double BytesMap::bytes_for(double array_bytes, int group_size) const {
  if (table.size() < 2 || group_size != ranks)
    return std::max(0.0, scale * array_bytes + offset);
  // Below the smallest and above the largest measured size the fit's slope carries on from the
  // nearest point; in between, straight lines between the points.
  if (array_bytes <= table.front().first)
    return std::max(0.0, table.front().second - scale * (table.front().first - array_bytes));
  if (array_bytes >= table.back().first)
    return table.back().second + scale * (array_bytes - table.back().first);
  const auto hi = std::lower_bound(table.begin(), table.end(), array_bytes,
                                   [](const auto& p, double s) { return p.first < s; });
  const auto lo = std::prev(hi);
  const double f = (array_bytes - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}

namespace {
// (S, seconds) points ascending in S, interpolated at `array_bytes`; the nearest beyond them.
double interpolated(const std::vector<std::pair<double, double>>& points, double array_bytes) {
  if (points.empty())
    return 0;
  if (array_bytes <= points.front().first)
    return points.front().second;
  if (array_bytes >= points.back().first)
    return points.back().second;
  const auto hi = std::lower_bound(points.begin(), points.end(), array_bytes,
                                   [](const auto& p, double s) { return p.first < s; });
  const auto lo = std::prev(hi);
  const double f = (array_bytes - lo->first) / (hi->first - lo->first);
  return lo->second + f * (hi->second - lo->second);
}
} // namespace

double BytesMap::last_caller_lag_for(double array_bytes, int group_size) const {
  return group_size == ranks ? interpolated(last_caller_lags, array_bytes) : 0.0;
}

double BytesMap::end_spread_for(double array_bytes, int group_size) const {
  return group_size == ranks ? interpolated(end_spreads, array_bytes) : 0.0;
}

} // namespace overlapsim::scenario
