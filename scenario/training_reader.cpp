#include "scenario/readers.h"

#include "hw/units.h"
#include "scenario/loss_curve.h"

#include <fmt/format.h>
#include <fmt/ranges.h> // fmt::join (in <fmt/format.h> before fmt 11)

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>

namespace overlapsim::scenario::yaml {

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

} // namespace overlapsim::scenario::yaml
