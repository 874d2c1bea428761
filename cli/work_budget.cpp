#include "cli/work_budget.h"

#include "cli/advice_work.h"
#include "cli/cdp_work.h"
#include "comm/ring_shape.h"
#include "hw/compute_cost.h"
#include "hw/units.h"
#include "scenario/loader.h"
#include "sim/collective_timing.h"
#include "sim/rank_classes.h"
#include "sim/slowest_of.h"

#include <algorithm>
#include <cmath>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <string>
#include <sys/resource.h>
#include <unistd.h>

namespace overlapsim::cli {

namespace {

double bucket_cap_of(const scenario::AlgorithmSpec& a) {
  // 25 MiB, torch's default, when none is given.
  double cap = 25.0 * 1024 * 1024;
  if (auto it = a.options.find("bucket_cap"); it != a.options.end()) {
    try {
      cap = hw::parse_size_bytes(it->second.value);
    } catch (const hw::UnitError&) {
      // the algorithm reports its own bad option
    }
  }
  return std::max(1.0, cap);
}

double count_option(const scenario::AlgorithmSpec& a, const char* key, double fallback) {
  if (auto it = a.options.find(key); it != a.options.end()) {
    try {
      return hw::parse_count(it->second.value);
    } catch (const hw::UnitError&) {
      // the algorithm reports its own bad option
    }
  }
  return fallback;
}

// One micro-batch's forward and backward on one GPU, at the layers' own costs (hw/compute_cost.h).
double micro_batch_seconds(const scenario::Scenario& s) {
  const bool fp32 = s.model.dtype == scenario::Dtype::fp32;
  double per_sample = 0;
  for (const auto& layer : s.model.spec.layers)
    per_sample += hw::layer_seconds_per_sample(layer, s.cluster.gpu, fp32, false) +
                  hw::layer_seconds_per_sample(layer, s.cluster.gpu, fp32, true);
  return per_sample * s.training.micro_batch;
}

// A lower bound of an all-reduce of `bytes` over every GPU: a ring's bytes over the slowest link
// the cluster has, plus its latency once. What ACCO's compute stream waits out per round.
double all_reduce_lower_bound_s(const scenario::Scenario& s, double bytes) {
  const auto& c = s.cluster;
  const double n = c.world_size();
  if (n < 2)
    return 0;
  double bandwidth = std::numeric_limits<double>::infinity(), latency = 0;
  const auto use = [&](const hw::LinkSpec& link) {
    if (link.bandwidth_Bps > 0)
      bandwidth = std::min(bandwidth, link.bandwidth_Bps);
    latency = std::max(latency, link.latency_s);
  };
  if (c.gpus_per_node > 1)
    use(c.intra_node);
  if (c.nodes > 1)
    use(c.inter_node);
  if (c.sites.size() > 1)
    use(c.wan);
  const double bus = comm::bus_factor(CollectiveOp::all_reduce, static_cast<int>(n));
  return (std::isfinite(bandwidth) ? bus * bytes / bandwidth : 0) + latency;
}

bool delayed_update(const std::string& name) {
  return name == "acco" || name == "acco-wp" || name == "dpu";
}

// What one ring-step message costs, on this cluster (the fit in work_budget.h).
double message_seconds(const scenario::ClusterSpec& c) {
  if (c.gpus_per_node > 1 && c.nodes > 1) // two-level rings
    return kSecondsPerMessageBase;
  return kSecondsPerMessageBase *
         std::pow(std::max(1.0, static_cast<double>(c.world_size())), kMessageNodesExponent);
}

// What one collective call costs: more flows on a node's GPUs (the fit in work_budget.h); a call
// of `bytes` past kLargeCollectiveBytes grows with the simulated nodes instead (0: the small fit).
double collective_seconds(const scenario::ClusterSpec& c, double simulated_gpus, double bytes = 0) {
  if (bytes >= kLargeCollectiveBytes && c.collectives != scenario::CollectiveFidelity::steps) {
    const double nodes = std::max(1.0, simulated_gpus / std::max(1, c.gpus_per_node));
    return std::max(kSecondsPerLargeCollectiveAtLeast,
                    kSecondsPerLargeCollective *
                        std::pow(nodes / kLargeCollectiveNodes, kLargeCollectiveExponent));
  }
  const double per_node = std::max(1.0, std::min<double>(simulated_gpus, c.gpus_per_node));
  return kSecondsPerCollective * (1 + std::log2(per_node) / 8);
}

// Ring-step messages one GPU sends per collective with cluster.collectives: steps: the two-level
// ring's (inside nodes, then across them) or the flat ring's 2(n-1) for an all-reduce.
double messages_per_collective(const scenario::ClusterSpec& c, bool all_reduce) {
  if (c.collectives != scenario::CollectiveFidelity::steps)
    return 0;
  const double g = c.gpus_per_node, m = c.nodes, factor = all_reduce ? 2 : 1;
  return g > 1 && m > 1 ? factor * ((g - 1) + (m - 1)) : factor * (g * m - 1);
}

// Whether something but the key itself tells the nodes apart (kLargeCollectiveToldApart): draws,
// slowdowns, WAN sites, a fat tree that does not fold.
bool told_apart(const scenario::Scenario& s) {
  if (!sim::statistical_differences(s).empty())
    return true;
  auto automatic = s;
  automatic.cluster.rank_classes = scenario::RankClassesChoice::automatic;
  return !sim::rank_classes_obstacle(automatic).empty();
}

SimulationWork algorithm_work(const scenario::Scenario& s, const scenario::AlgorithmSpec& spec) {
  SimulationWork w;
  w.label = spec.label;
  w.world = s.cluster.world_size();
  double stood_for = 0; // statistical: the GPUs the extreme draws for
  double slowed = 0;    // of them, those with a slowdown (their own clocks past the clocks)
  try {
    const auto classes = sim::choose_rank_classes(s, *make_algorithm(spec));
    w.gpus = classes.simulated_ranks();
    if (classes.statistical()) {
      const auto ranks = classes.slowest_of();
      stood_for = static_cast<double>(ranks.size());
      if (stood_for > sim::statistical_clocks()) {
        std::vector<int> stragglers;
        for (const auto& st : s.cluster.stragglers)
          stragglers.push_back(st.gpu);
        std::sort(stragglers.begin(), stragglers.end());
        for (const int r : ranks)
          if (std::binary_search(stragglers.begin(), stragglers.end(), r) &&
              s.cluster.slowdown_of(r) != 1.0)
            ++slowed;
      }
    }
  } catch (const std::exception&) {
    w.gpus = w.world; // the run reports its bad option itself
  }
  w.steps = s.training.warmup_steps + s.training.steps;
  // Under 3D parallelism (issue 65) a GPU runs its stage's layers and all-reduces its stage's TP
  // shard among its replicas; a micro-batch adds its TP ops and four pipeline messages.
  const auto& par = s.parallelism;
  const double layers = std::ceil(static_cast<double>(s.model.spec.layers.size()) / par.pipeline);
  const double param_bytes = s.model.spec.total_params() * scenario::dtype_bytes(s.model.dtype) /
                             (par.tensor * par.pipeline);
  // Gradient buckets set how many collectives a step holds; ASC-WFBP merges layers into groups
  // only where a layer's backward is shorter than a collective's start: one per layer at most
  // (issue 63.6: 100,000 layers, 100,000 collectives a step).
  w.collectives_per_step = std::max(1.0, param_bytes / bucket_cap_of(spec));
  if (spec.name == "asc-wfbp")
    w.collectives_per_step = std::max(w.collectives_per_step, layers);
  w.micro_batches = s.training.grad_accum;
  if (delayed_update(spec.name)) {
    // The compute stream accumulates micro-batches for as long as a round's communication runs
    // (no cap unless max_micro_batches): at a slow link, comm time / compute time of them
    // (issue 63.5e: 1 kB/s, or an hour of latency, meant millions a round).
    const double rounds = spec.name == "acco" ? 2 : 1;
    const double fallback =
        spec.name == "acco" ? std::max(1, s.training.grad_accum / 2) : s.training.grad_accum;
    const double least = count_option(spec, "min_micro_batches", 0);
    const double most = count_option(spec, "max_micro_batches", 0);
    double per_round = least > 0 ? least : fallback;
    if (const double mb = micro_batch_seconds(s); mb > 0)
      per_round = std::max(per_round, std::ceil(all_reduce_lower_bound_s(s, param_bytes) / mb));
    if (most > 0)
      per_round = std::min(per_round, std::max(most, least));
    // On a pipeline a round is one pass of the schedule (algorithms/acco.cpp).
    if (par.pipeline > 1)
      per_round = s.training.grad_accum;
    w.micro_batches = rounds * per_round;
  }
  const double per_micro_batch = 2 * layers * (par.tensor > 1 ? 2 : 1) + (par.pipeline > 1 ? 4 : 0);
  w.compute_ops = w.gpus * w.steps * (per_micro_batch * w.micro_batches + 4);
  w.collective_ops = w.gpus * w.steps * w.collectives_per_step;
  w.messages = w.collective_ops * messages_per_collective(s.cluster, true);
  count_cdp_work(s, spec, w); // CDP's stages and messages, not buckets (cli/cdp_work.h)
  // The extreme's own compute ops: whole passes where no gradient hook splits them (above).
  const bool whole_passes = delayed_update(spec.name) || spec.name == "diloco";
  const double extreme_ops = whole_passes && par.pipeline == 1 && par.tensor == 1
                                 ? w.steps * (2 * w.micro_batches + 4)
                                 : w.compute_ops / std::max(1.0, w.gpus);
  const bool lengths =
      s.training.seq_len_distribution.kind != scenario::SeqLenDistribution::Kind::fixed;
  if (stood_for > sim::statistical_clocks()) { // order statistics (sim/slowest_of.h)
    w.stood_for_ops = slowed * extreme_ops;
    w.drawn_clock_ops =
        std::min<double>(sim::statistical_clocks(), stood_for - slowed) * extreme_ops;
    w.length_draws = lengths ? (stood_for - slowed) * w.steps * w.micro_batches : 0;
    if (lengths && spec.name == "fsdp") // a solve per unit's wait, in length draws' seconds
      w.length_draws += (stood_for - slowed) * w.steps * w.micro_batches * 2 * layers *
                        kSecondsPerRestartGpu / kSecondsPerLengthDraw;
  } else {
    w.stood_for_ops = stood_for * extreme_ops;
  }
  w.stood_for_op_seconds =
      kSecondsPerStoodForOp + (s.cluster.jitter.active() ? kSecondsPerStoodForJitter : 0) +
      (s.training.seq_len_distribution.kind != scenario::SeqLenDistribution::Kind::fixed
           ? kSecondsPerStoodForLength
           : 0);
  w.message_seconds = message_seconds(s.cluster);
  // CDP's stage-sized messages stay on the small fit: one flow each.
  const double call_bytes = cdp_stage_per_gpu(spec) ? 0 : param_bytes / w.collectives_per_step;
  w.collective_seconds = collective_seconds(s.cluster, w.gpus, call_bytes);
  if (call_bytes >= kLargeCollectiveBytes && w.gpus >= w.world && s.cluster.nodes > 1 &&
      s.cluster.collectives != scenario::CollectiveFidelity::steps && told_apart(s))
    w.collective_seconds *= kLargeCollectiveToldApart;
  return w;
}

// Seconds as a person reads a long wait: "42 s", "12 min", "3.5 h", "2.1 days".
std::string duration(double s) {
  if (s >= 2 * 86400)
    return fmt::format("{:.3g} days", s / 86400);
  if (s >= 2 * 3600)
    return fmt::format("{:.3g} h", s / 3600);
  if (s >= 120)
    return fmt::format("{:.3g} min", s / 60);
  return hw::format_time(s);
}

std::string describe_time(const WorkEstimate& e) {
  std::string out;
  for (const auto& w : e.simulations)
    out +=
        fmt::format("{}{}: {}", out.empty() ? "" : "; ", w.label, duration(predicted_seconds(w)));
  return out;
}

WorkEstimate summarize(std::vector<SimulationWork> sims, std::string breakdown) {
  WorkEstimate e;
  e.seconds = kSecondsPerCommand;
  for (const auto& w : sims) {
    e.ops = std::max(e.ops, w.ops());
    e.gpus = std::max(e.gpus, w.gpus);
    e.world = std::max(e.world, w.world);
    e.collective_ops = std::max(e.collective_ops, w.collective_ops);
    e.seconds += predicted_seconds(w);
  }
  if (std::any_of(sims.begin(), sims.end(), [](const auto& w) { return w.messages > 0; }))
    e.gpu_pair_bytes = 110; // ring-step messages (the fit in work_budget.h)
  e.simulations = std::move(sims);
  e.breakdown = std::move(breakdown);
  e.time_breakdown = describe_time(e);
  return e;
}

} // namespace

double predicted_seconds(const SimulationWork& w) {
  return kSecondsPerSimulation + kSecondsPerComputeOp * w.compute_ops +
         w.collective_seconds * w.collective_ops + kSecondsPerClusterGpu * w.world +
         w.message_seconds * w.messages + w.stood_for_op_seconds * w.stood_for_ops +
         kSecondsPerDrawnClockOp * w.drawn_clock_ops + kSecondsPerLengthDraw * w.length_draws;
}

WorkEstimate estimate_work(const scenario::Scenario& s) {
  std::vector<SimulationWork> sims;
  for (const auto& a : s.algorithms)
    sims.push_back(algorithm_work(s, a));
  // Without a ddp entry, run simulates ddp too: the reference of speedup_vs_ddp.
  if (std::none_of(s.algorithms.begin(), s.algorithms.end(),
                   [](const auto& a) { return a.name == "ddp"; })) {
    scenario::AlgorithmSpec ddp;
    ddp.name = ddp.label = "ddp";
    sims.push_back(algorithm_work(s, ddp));
    sims.back().label = "ddp (reference)";
  }
  if (sims.empty()) { // no algorithm: the run reports it; count one DDP-like simulation
    scenario::AlgorithmSpec ddp;
    ddp.name = ddp.label = "ddp";
    sims.push_back(algorithm_work(s, ddp));
  }
  // Memory advice (cli/advice_work.h): the probe of zero1 runs folded where rank classes allow,
  // whatever cluster.rank_classes says but statistical (cli/run_command.cpp, probe).
  if (!s.algorithms.empty() && memory_advice_probe_runs(s)) {
    auto probed = s;
    if (probed.cluster.rank_classes == scenario::RankClassesChoice::off)
      probed.cluster.rank_classes = scenario::RankClassesChoice::automatic;
    scenario::AlgorithmSpec zero1;
    zero1.name = zero1.label = "zero1";
    sims.push_back(algorithm_work(probed, zero1));
    sims.back().label = "zero1 (memory advice)";
  }
  const auto largest = *std::max_element(
      sims.begin(), sims.end(), [](const auto& a, const auto& b) { return a.ops() < b.ops(); });
  const bool stage_per_gpu = std::any_of(s.algorithms.begin(), s.algorithms.end(), [&](auto& a) {
    return a.label == largest.label && cdp_stage_per_gpu(a);
  });
  if (stage_per_gpu)
    return summarize(std::move(sims),
                     fmt::format("{}: {} GPUs x {} steps x ({} stages x 2 + {} messages)",
                                 largest.label, hw::format_count(largest.gpus),
                                 hw::format_count(largest.steps), hw::format_count(largest.world),
                                 hw::format_count(largest.collectives_per_step)));
  std::string breakdown = fmt::format(
      "{}: {} GPUs x {} steps x ({} layers x 2 x {} micro-batches + {} collectives)", largest.label,
      hw::format_count(largest.gpus), hw::format_count(largest.steps),
      hw::format_count(static_cast<double>(s.model.spec.layers.size())),
      hw::format_count(largest.micro_batches), hw::format_count(largest.collectives_per_step));
  if (largest.messages > 0)
    breakdown += fmt::format(", {} ring-step messages", hw::format_count(largest.messages));
  return summarize(std::move(sims), std::move(breakdown));
}

WorkEstimate estimate_collective_work(const scenario::Scenario& s, CollectiveOp op, int sizes) {
  SimulationWork w;
  w.label = to_string(op);
  w.world = s.cluster.world_size();
  try {
    w.gpus = sim::collective_rank_classes(s, op).simulated_ranks();
  } catch (const std::exception&) {
    w.gpus = w.world;
  }
  w.steps = 1;
  w.collectives_per_step = 1;
  w.collective_ops = w.gpus;
  w.messages = w.gpus * messages_per_collective(s.cluster, op == CollectiveOp::all_reduce);
  w.message_seconds = message_seconds(s.cluster);
  w.collective_seconds = collective_seconds(s.cluster, w.gpus);
  std::vector<SimulationWork> sims(static_cast<std::size_t>(std::max(1, sizes)), w);
  std::string breakdown = fmt::format("{} size(s) x {} GPUs x 1 collective", std::max(1, sizes),
                                      hw::format_count(w.gpus));
  if (w.messages > 0)
    breakdown += fmt::format(" x {} ring-step messages",
                             hw::format_count(w.messages / std::max(1.0, w.gpus)));
  return summarize(std::move(sims), std::move(breakdown));
}

namespace {

// Why a CDP simulation with a stage per GPU past the budget cannot fold, and what would fit
// (issue 64.2); "" when none is past it.
std::string cdp_fit_hint(const scenario::Scenario& s) {
  for (const auto& a : s.algorithms) {
    if (!cdp_stage_per_gpu(a) || algorithm_work(s, a).ops() <= kWorkBudgetOps)
      continue;
    const auto single = algorithm_work(s, cdp_single_gpu(a));
    return fmt::format(
        ". {} cuts the model into a stage per GPU ({} stages; the model has {} layers), and each "
        "GPU has a stage boundary and a place on the sums' route of its own, so rank classes "
        "cannot fold it (docs/ARCHITECTURE.md, \"Rank classes\"): it fits on at most {} GPUs "
        "here. `setting: single-gpu` (each GPU a CDP cycle of training.grad_accum micro-batches, "
        "the GPUs all-reducing as data-parallel replicas) folds: {} GPUs simulated, about {} ops, "
        "{}",
        a.label, hw::format_count(s.cluster.world_size()),
        hw::format_count(static_cast<double>(s.model.spec.layers.size())),
        hw::format_count(cdp_most_gpus(s, kWorkBudgetOps)), hw::format_count(single.gpus),
        hw::format_count(single.ops()), duration(predicted_seconds(single)));
  }
  return "";
}

} // namespace

void check_work_budget(const scenario::Scenario& s, bool force) {
  if (force)
    return;
  const auto w = estimate_work(s);
  if (w.ops > kWorkBudgetOps)
    throw std::invalid_argument(fmt::format(
        "{}: the run would simulate about {} ops per algorithm ({}), past the budget of {} "
        "(tens of minutes and gigabytes of memory); use fewer GPUs, steps or micro-batches, a "
        "larger bucket_cap, or pass --force{}",
        s.source, hw::format_count(w.ops), w.breakdown, hw::format_count(kWorkBudgetOps),
        cdp_fit_hint(s)));
}

void check_time_budget(const std::string& source, double seconds, const std::string& what,
                       double max_time_s) {
  if (seconds > max_time_s)
    throw std::invalid_argument(fmt::format(
        "{}: the command would take about {} on this machine ({}), past --max-time {}; use "
        "fewer GPUs, steps, points or sizes, or raise --max-time if the estimate is too high "
        "(the model: docs/SCENARIO.md, \"Work, time and memory budgets\")",
        source, duration(seconds), what, duration(max_time_s)));
}

void check_time_budget(const scenario::Scenario& s, double max_time_s) {
  const auto w = estimate_work(s);
  check_time_budget(s.source, w.seconds,
                    fmt::format("{}; the largest simulation: {}", w.time_breakdown, w.breakdown),
                    max_time_s);
}

double parse_max_time(const std::string& text) {
  if (text.empty())
    return kDefaultMaxTimeS;
  try {
    const double seconds = hw::parse_time_s(text);
    if (!(seconds > 0))
      throw hw::UnitError("expected a positive duration");
    return seconds;
  } catch (const std::exception& e) {
    throw std::invalid_argument(
        fmt::format("--max-time '{}': {} (e.g. 10min, 2h or 90s)", text, e.what()));
  }
}

namespace {

// MemAvailable of /proc/meminfo: what can be allocated without swapping; 0 when unknown.
double available_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:")
      return kib * 1024;
  return 0;
}

// This process's mapped size (the forked simulation starts from it).
double mapped_bytes() {
  std::ifstream in("/proc/self/statm");
  double pages = 0;
  in >> pages;
  return pages * static_cast<double>(::sysconf(_SC_PAGESIZE));
}

} // namespace

MemoryEstimate estimate_memory(const WorkEstimate& work, double kept_traces) {
  const double gpus = work.gpus;
  const double ops = work.ops;
  MemoryEstimate m;
  const double simulation = 40e6 + 100 * ops + 800 * work.collective_ops + 9 * 1024 * gpus +
                            work.gpu_pair_bytes * gpus * gpus +
                            310 * std::max(0.0, work.world - gpus);
  // The traces the parent keeps, and the largest one's serialized copy while it is read back.
  const double traces = 72 * ops * (kept_traces + 1);
  m.resident_bytes = simulation + traces;
  m.actor_stacks = 2 * gpus;
  const double stacks = m.actor_stacks * (128 + 4) * 1024.0;
  m.address_space_bytes = kAddressSpacePerResident * m.resident_bytes + stacks;
  m.breakdown =
      fmt::format("{} for a simulation of {} ops on {} GPUs, {} for the traces of {} "
                  "simulation(s)",
                  hw::format_bytes(simulation), hw::format_count(ops), hw::format_count(gpus),
                  hw::format_bytes(traces), hw::format_count(kept_traces));
  return m;
}

MemoryEstimate estimate_memory(const scenario::Scenario& s) {
  const auto work = estimate_work(s);
  return estimate_memory(work, std::max<double>(1, static_cast<double>(s.algorithms.size())));
}

std::string with_memory_estimate(const std::string& error, const MemoryEstimate& m) {
  return fmt::format("{} (estimated before the run: about {} of memory, {} of address space: {})",
                     error, hw::format_bytes(m.resident_bytes),
                     hw::format_bytes(m.address_space_bytes), m.breakdown);
}

void check_memory_budget(const std::string& source, const MemoryEstimate& m,
                         double max_memory_bytes, int parallel) {
  const double runs = std::max(1, parallel);
  const bool given = max_memory_bytes > 0;
  const double limit = given ? max_memory_bytes : available_memory_bytes();
  const std::string at_once = runs > 1 ? fmt::format(" x {} at once", runs) : "";
  if (limit > 0 && m.resident_bytes * runs > limit)
    throw std::invalid_argument(fmt::format(
        "{}: the simulation would need about {} of memory{} ({}), more than {} ({}); use fewer "
        "GPUs or steps{}, or raise --max-memory if the estimate is too high",
        source, hw::format_bytes(m.resident_bytes * runs), at_once, m.breakdown,
        hw::format_bytes(limit), given ? "--max-memory" : "the memory available now",
        runs > 1 ? ", fewer --jobs" : ""));
  rlimit as{};
  if (::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
    const double need = mapped_bytes() + m.address_space_bytes;
    if (need > static_cast<double>(as.rlim_cur))
      throw std::invalid_argument(fmt::format(
          "{}: the simulation would need about {} of address space (this process's {} mapped, "
          "{} actor stacks of 132 KiB, {}), more than the limit of {} (ulimit -v); use fewer "
          "GPUs or steps, or raise the limit",
          source, hw::format_bytes(need), hw::format_bytes(mapped_bytes()),
          hw::format_count(m.actor_stacks), m.breakdown,
          hw::format_bytes(static_cast<double>(as.rlim_cur))));
  }
}

void check_memory_budget(const scenario::Scenario& s, double max_memory_bytes, int parallel) {
  check_memory_budget(s.source, estimate_memory(s), max_memory_bytes, parallel);
}

double parse_max_memory(const std::string& text) {
  try {
    const double bytes = hw::parse_size_bytes(text);
    if (!(bytes > 0))
      throw hw::UnitError("expected a positive size");
    return bytes;
  } catch (const std::exception& e) {
    throw std::invalid_argument(
        fmt::format("--max-memory '{}': {} (e.g. 8GB or 512MiB)", text, e.what()));
  }
}

} // namespace overlapsim::cli
