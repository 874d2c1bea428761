#include "cli/sweep_command.h"

#include "algorithms/algorithm.h"
#include "algorithms/sync_period.h"
#include "cli/plots.h"
#include "cli/progress_bar.h"
#include "cli/report.h"
#include "cli/run_command.h"
#include "cli/work_budget.h"
#include "files/atomic_file.h"
#include "files/output_stage.h"
#include "hw/units.h"
#include "scenario/loader.h"
#include "scenario/user_json.h"
#include "sim/child_process.h"
#include "trace/summary.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <list>
#include <map>
#include <optional>
#include <poll.h>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <tuple>
#include <unistd.h>
#include <utility>

namespace overlapsim::cli {

namespace {

using nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    out.push_back(part);
  return out;
}

std::vector<std::string> point_overrides(const SweepOptions& o, const SweepPoint& p) {
  auto overrides = o.overrides;
  for (const auto& [key, value] : p.values)
    overrides.push_back(key + "=" + value);
  return overrides;
}

// "point 3 (cluster.nodes=8 cluster.inter_node.bandwidth=10Gb/s)": how errors name a point.
std::string describe(const SweepPoint& p) {
  std::string values;
  for (const auto& [key, value] : p.values)
    values += fmt::format("{}{}={}", values.empty() ? "" : " ", key, value);
  return fmt::format("point {} ({})", p.index, values);
}

// "i/n" with 0 <= i < n, nothing else; with `one_based` (--shard-one-based) 1 <= i <= n, as a
// Slurm array --array=1-n numbers its tasks, returned 0-based.
std::pair<int, int> parse_shard(const std::string& text, bool one_based) {
  const auto bad = [&] {
    return std::invalid_argument(
        one_based
            ? fmt::format("--shard '{}' with --shard-one-based: expected i/n with 1 <= i <= n (a "
                          "Slurm array --array=1-n passes i=$SLURM_ARRAY_TASK_ID)",
                          text)
            : fmt::format("--shard '{}': expected i/n with 0 <= i < n (i is 0-based: a Slurm array "
                          "--array=0-(n-1) passes i=$SLURM_ARRAY_TASK_ID; for --array=1-n add "
                          "--shard-one-based)",
                          text));
  };
  const auto slash = text.find('/');
  if (slash == std::string::npos)
    throw bad();
  const auto number = [&](std::size_t from, std::size_t to) {
    int v = -1;
    const auto [end, ec] = std::from_chars(text.data() + from, text.data() + to, v);
    if (ec != std::errc() || end != text.data() + to)
      throw bad();
    return v;
  };
  const int i = number(0, slash) - (one_based ? 1 : 0);
  const int n = number(slash + 1, text.size());
  if (n < 1 || i < 0 || i >= n)
    throw bad();
  return {i, n};
}

// A summary row of point `p`: the varied keys first, then the row's fields, then `point`.
ordered_json sweep_row(const SweepPoint& p, const SummaryRow& row) {
  ordered_json j;
  for (const auto& [key, value] : p.values)
    j[key] = value;
  const ordered_json full = to_json(row);
  for (auto it = full.begin(); it != full.end(); ++it)
    j[it.key()] = it.value();
  j["point"] = p.index;
  return j;
}

// An owned file descriptor.
class Fd {
public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  Fd(Fd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  Fd& operator=(Fd&& other) noexcept {
    std::swap(fd_, other.fd_);
    return *this;
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  int get() const { return fd_; }

private:
  int fd_;
};

// A point running in a child process; its rows come back as JSON. ChildProcess only offers a
// blocking collect(), so each child also holds the write end of a `ready` pipe: it writes a byte
// there when its rows are ready (or it failed), and the pipe hangs up when it crashes (once its
// running simulation, which inherits the pipe, is over too). The parent polls those pipes and
// collects whichever point is done first, so a slow point does not hold up the others' slots (a
// cluster.nodes sweep mixes points of very different cost).
struct Child {
  sim::ChildProcess process;
  Fd ready;
  const SweepPoint* point;
  const scenario::Scenario* scenario;
};

Child spawn(const scenario::Scenario& scenario, const SweepPoint& p, const PointBody& body) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  Fd read_end(fds[0]);
  Fd write_end(fds[1]);
  sim::ChildProcess process([&scenario, &p, &body, r = fds[0], w = fds[1]] {
    ::close(r);
    // Written on return and on a throw alike; the reply follows through ChildProcess's pipe.
    struct Notify {
      int fd;
      ~Notify() { [[maybe_unused]] const auto n = ::write(fd, "1", 1); }
    } notify{w};
    return body ? body(scenario, p) : simulate_point(scenario, p);
  });
  return Child{std::move(process), std::move(read_end), &p, &scenario};
}

// Why a child's reply is not its point's rows, or "": a JSON list with a row per algorithm of the
// scenario, in its order, each naming the point. Only a damaged process sends anything else, but
// the rows are written as they come, so a reply of another shape must not reach the summary.
std::string reply_problem(const ordered_json& reply, const scenario::Scenario& s, int point) {
  if (!reply.is_array() || reply.size() != s.algorithms.size())
    return fmt::format("expected a list of {} rows", s.algorithms.size());
  for (std::size_t i = 0; i < reply.size(); ++i) {
    const auto& r = reply[i];
    if (!r.is_object() || r.value("algorithm", ordered_json()) != s.algorithms[i].label ||
        r.value("point", ordered_json()) != point)
      return fmt::format("row {}: expected the row of point {}, {}", i, point,
                         s.algorithms[i].label);
  }
  return "";
}

// A point's rows; a point whose process failed (died of a signal, aborted, ended with a non-zero
// status, threw, or sent an unreadable reply) gets an error row per algorithm, as `run` gives an
// algorithm that cannot run (issue 26.9).
std::vector<ordered_json> collect(Child& c) {
  std::string failure;
  try {
    const std::string reply = c.process.collect();
    auto parsed = ordered_json::parse(reply, nullptr, /*allow_exceptions=*/false);
    failure =
        parsed.is_discarded() ? "not JSON" : reply_problem(parsed, *c.scenario, c.point->index);
    if (failure.empty())
      return parsed.get<std::vector<ordered_json>>();
    failure =
        fmt::format("the process sent an unreadable reply ({}): {}", failure, reply.substr(0, 80));
  } catch (const Interrupted&) {
    throw; // the sweep stops, publishing nothing
  } catch (const std::exception& e) {
    failure = out_of_memory_error(*c.scenario, e);
  }
  std::vector<ordered_json> rows;
  for (const auto& a : c.scenario->algorithms) {
    SummaryRow failed;
    failed.algorithm = a.label;
    failed.workers = c.scenario->cluster.world_size();
    failed.error = fmt::format("{}: {}", describe(*c.point), failure);
    rows.push_back(sweep_row(*c.point, failed));
  }
  return rows;
}

// The printed table of a sweep (issue 27.4): a line per point and algorithm with the varied values,
// iteration time, speedup and samples per step, so a speedup bought with a larger batch shows;
// a warning when an algorithm's steps hold more than twice DDP's samples at the same point.
std::string format_sweep_table(const std::vector<ordered_json>& rows,
                               const std::vector<std::string>& keys) {
  const auto number = [](const ordered_json& row, const char* key) {
    return row.contains(key) && row[key].is_number() ? row[key].get<double>() : 0.0;
  };
  std::string out = fmt::format("{:>5} ", "point");
  for (const auto& k : keys)
    out += fmt::format("{:>14} ", k.substr(k.rfind('.') + 1));
  out += fmt::format("{:<16} {:>10} {:>9} {:>12}\n", "algorithm", "iteration", "speedup",
                     "samples/step");
  std::map<int, double> ddp_samples;
  for (const auto& r : rows)
    if (r.value("algorithm", "") == "ddp" && !r.contains("error"))
      ddp_samples[r["point"].get<int>()] = number(r, "samples_per_step");
  std::string warnings;
  for (const auto& r : rows) {
    const int point = r["point"].get<int>();
    out += fmt::format("{:>5} ", point);
    for (const auto& k : keys)
      out += fmt::format("{:>14} ", r.contains(k) ? r[k].get<std::string>() : "");
    const std::string algorithm = r.value("algorithm", "");
    if (r.contains("error")) {
      out += fmt::format("{:<16} error: {}\n", algorithm, r["error"].get<std::string>());
      continue;
    }
    const double samples = number(r, "samples_per_step");
    // As run's table marks it (issue 62.1): a speedup that needs more memory than the GPU has.
    const std::string unfit =
        row_fits(r) ? std::string()
                    : fmt::format("  DOES NOT FIT ({} > {} per GPU)",
                                  hw::format_bytes(number(r, "peak_memory_bytes")),
                                  hw::format_bytes(r.contains("memory_available_bytes")
                                                       ? number(r, "memory_available_bytes")
                                                       : number(r, "gpu_memory_bytes")));
    out += fmt::format("{:<16} {:>10} {:>8.3f}x {:>12.0f}{}\n", algorithm,
                       hw::format_time(number(r, "iteration_time_s")), number(r, "speedup_vs_ddp"),
                       samples, unfit);
    if (const auto d = ddp_samples.find(point);
        d != ddp_samples.end() && d->second > 0 && samples > 2 * d->second)
      warnings += fmt::format("warning: point {}, {}: {:.0f} samples a step, {:.1f}x DDP's {:.0f}: "
                              "its speedup is bought with a larger batch\n",
                              point, algorithm, samples, samples / d->second, d->second);
  }
  return out + warnings;
}

} // namespace

std::map<int, std::vector<ordered_json>>
run_sweep_points(const std::vector<scenario::Scenario>& scenarios,
                 const std::vector<const SweepPoint*>& points, std::size_t jobs, bool progress,
                 const PointBody& body) {
  std::map<int, std::vector<ordered_json>> by_point;
  std::list<Child> running; // on an exception its destructor kills the points still running
  std::size_t next = 0;
  std::optional<ProgressBar> bar;
  if (progress)
    bar.emplace("sweep", points.size(), "points");
  while (next < points.size() || !running.empty()) {
    while (next < points.size() && running.size() < jobs) {
      running.push_back(spawn(scenarios[next], *points[next], body));
      ++next;
    }
    std::vector<pollfd> fds;
    for (const auto& c : running)
      fds.push_back({c.ready.get(), POLLIN, 0});
    // A timeout keeps the progress bar's elapsed time moving while every point is busy.
    if (::poll(fds.data(), fds.size(), 1000) < 0 && errno != EINTR)
      throw std::runtime_error(fmt::format("poll: {}", std::strerror(errno)));
    throw_if_interrupted(); // the running points are killed as `running` unwinds
    auto it = running.begin();
    for (const auto& f : fds) {
      if (f.revents == 0) {
        ++it;
        continue;
      }
      by_point[it->point->index] = collect(*it);
      it = running.erase(it);
    }
    if (bar)
      bar->update(by_point.size());
  }
  return by_point;
}

std::string simulate_point(const scenario::Scenario& scenario, const SweepPoint& p) {
  ordered_json rows = ordered_json::array();
  for (const auto& row : simulate_rows(scenario, /*progress=*/false))
    rows.push_back(sweep_row(p, row));
  return rows.dump();
}

std::vector<SweepPoint> sweep_grid(const std::vector<std::string>& vary) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  std::set<std::string> keys;
  for (const auto& v : vary) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
      throw std::invalid_argument(fmt::format("--vary '{}': expected key.path=v1,v2,...", v));
    axes.emplace_back(v.substr(0, eq), split(v.substr(eq + 1), ','));
    if (!keys.insert(axes.back().first).second)
      throw std::invalid_argument(
          fmt::format("--vary {}: the key is varied twice; give all its values in one list",
                      axes.back().first));
    if (v.back() == ',')
      axes.back().second.emplace_back(); // getline drops a trailing empty field
    for (const auto& value : axes.back().second)
      if (value.empty())
        throw std::invalid_argument(fmt::format("--vary '{}': empty value in the list", v));
  }
  std::vector<SweepPoint> grid(1);
  for (const auto& [key, values] : axes) {
    std::vector<SweepPoint> next;
    for (const auto& p : grid)
      for (const auto& value : values) {
        SweepPoint q = p;
        q.values.emplace_back(key, value);
        next.push_back(std::move(q));
      }
    grid = std::move(next);
  }
  for (std::size_t i = 0; i < grid.size(); ++i)
    grid[i].index = static_cast<int>(i);
  return grid;
}

int sweep_command(const SweepOptions& o) {
  return sweep_command(o, {});
}

int sweep_command(const SweepOptions& o, const PointBody& body) {
  try {
    if (o.vary.empty())
      throw std::invalid_argument("expected at least one --vary key.path=v1,v2,...");
    if (o.jobs < 0)
      throw std::invalid_argument(
          fmt::format("--jobs {}: expected a positive number of points in parallel", o.jobs));
    const double max_time = parse_max_time(o.max_time);
    const auto jobs = static_cast<std::size_t>(
        o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency()));
    // Before the grid is built or any point loaded (issue 63.5f: a million points loaded for
    // minutes first): every point is loaded, then runs at least one simulation.
    {
      double points = 1;
      for (const auto& v : o.vary)
        points *= static_cast<double>(std::count(v.begin(), v.end(), ',') + 1);
      const double least = kSecondsPerCommand + points * kSecondsPerSweepLoad +
                           points * kSecondsPerSimulation / static_cast<double>(jobs);
      check_time_budget(o.scenario, least,
                        fmt::format("{} points x ({} to load + at least {} to simulate over {} "
                                    "job(s))",
                                    hw::format_count(points), hw::format_time(kSecondsPerSweepLoad),
                                    hw::format_time(kSecondsPerSimulation), jobs),
                        max_time);
    }
    const auto grid = sweep_grid(o.vary);
    for (const auto& set : o.overrides)
      for (const auto& [key, value] : grid.front().values)
        if (set.starts_with(key + "="))
          throw std::invalid_argument(fmt::format(
              "--set {} and --vary {}: the key is both fixed and varied; keep one", set, key));
    const auto [shard, shards] =
        o.shard.empty() ? std::pair{0, 1} : parse_shard(o.shard, o.shard_one_based);
    // Every point of the grid (not only this shard's: shards should agree on what is valid) is
    // loaded and its algorithms built before anything runs, so a bad key, value or algorithm
    // option fails the whole sweep at once and writes nothing.
    const auto base = scenario::load_scenario(o.scenario, o.overrides);
    print_scenario_warnings(base);
    std::vector<const SweepPoint*> mine;
    std::vector<scenario::Scenario> scenarios;
    for (const auto& p : grid) {
      scenario::Scenario s;
      try {
        s = scenario::load_scenario(o.scenario, point_overrides(o, p));
        for (const auto& a : s.algorithms)
          with_measured_steps(s, a); // a bad option, or a window shorter than a period
        check_work_budget(s, o.force);
      } catch (const std::exception& e) {
        throw std::runtime_error(fmt::format("{}: {}", describe(p), e.what()));
      }
      if (p.index % shards != shard)
        continue;
      s.output.traces = false; // a trace per point and algorithm would be too many files
      mine.push_back(&p);
      scenarios.push_back(std::move(s));
    }
    // Every point's simulations over the jobs that run them, and every point's loading.
    if (!scenarios.empty()) {
      double seconds = kSecondsPerCommand + static_cast<double>(grid.size()) * kSecondsPerSweepLoad;
      double simulated = 0; // each point's simulations, without a command's start
      for (const auto& s : scenarios)
        simulated += estimate_work(s).seconds - kSecondsPerCommand;
      seconds += simulated / static_cast<double>(std::min(jobs, scenarios.size()));
      check_time_budget(o.scenario, seconds,
                        fmt::format("{} points, {} of simulation over {} job(s)",
                                    hw::format_count(static_cast<double>(scenarios.size())),
                                    hw::format_time(simulated), std::min(jobs, scenarios.size())),
                        max_time);
    }
    // The largest point's memory, as many at once as run in parallel (issue 26.3).
    if (!scenarios.empty()) {
      const auto largest =
          std::max_element(scenarios.begin(), scenarios.end(), [](const auto& a, const auto& b) {
            return estimate_memory(a).resident_bytes < estimate_memory(b).resident_bytes;
          });
      check_memory_budget(*largest, o.max_memory.empty() ? 0 : parse_max_memory(o.max_memory),
                          static_cast<int>(std::min(jobs, scenarios.size())));
    }
    OutputStage stage(o.out.empty() ? base.output.dir : o.out);
    const std::string& dir = stage.path();
    auto by_point = run_sweep_points(scenarios, mine, jobs, o.progress, body);

    // Point order, then the scenario's algorithm order: the same file whatever finished first.
    std::vector<ordered_json> rows;
    for (auto& [index, point_rows_] : by_point)
      for (auto& r : point_rows_)
        rows.push_back(std::move(r));
    std::vector<std::string> keys;
    for (const auto& [key, value] : grid.front().values)
      keys.push_back(key);
    ordered_json top;
    // The grid's values too: shards of sweeps that vary the same keys over other values must not
    // merge (issue 26.10).
    ordered_json values = ordered_json::object();
    for (const auto& v : o.vary)
      values[v.substr(0, v.find('='))] = split(v.substr(v.find('=') + 1), ',');
    top["sweep"] = {{"vary", keys},
                    {"values", values},
                    {"points", grid.size()},
                    {"shard", fmt::format("{}/{}", shard, shards)},
                    {"overrides", o.overrides}};
    write_summary(dir, scenario::to_json(base), rows, top);
    write_file_atomically(dir + "/report.md",
                          sweep_report_markdown(ordered_json::parse(scenario::to_json(base).dump()),
                                                top["sweep"], rows));
    // A shard's plots would show part of the grid; merge draws the whole one.
    if (o.plots && base.output.plots && shards == 1)
      draw_plots(dir);
    stage.publish();
    std::printf("%s", format_sweep_table(rows, keys).c_str());
    std::printf("%zu points x %zu algorithms: outputs in %s\n", mine.size(), base.algorithms.size(),
                (o.out.empty() ? base.output.dir : o.out).c_str());
    // Exit status 2: the outputs are complete, but some rows are errors.
    int failed = 0;
    for (const auto& r : rows)
      if (r.contains("error")) {
        std::fprintf(stderr, "overlapsim sweep: point %d, %s failed: %s\n", r["point"].get<int>(),
                     r["algorithm"].get<std::string>().c_str(),
                     r["error"].get<std::string>().c_str());
        ++failed;
      }
    return failed > 0 ? 2 : 0;
  } catch (const std::exception& e) {
    return report_failure("overlapsim sweep", e);
  }
}

// Far above any sweep that could run; a larger count is a damaged or forged shard.
constexpr std::uint64_t kMaxMergedPoints = 10000000;

// A summary row's fields that hold numbers (or null: NaN is written so) when the row has no error,
// and its objects and lists whose every entry does.
constexpr const char* kNumericFields[] = {"workers",
                                          "iteration_time_s",
                                          "throughput_samples_s",
                                          "throughput_tokens_s",
                                          "speedup_vs_ddp",
                                          "idle_fraction_mean",
                                          "idle_fraction_max",
                                          "exposed_comm_s",
                                          "waiting_s",
                                          "comm_bytes_per_step",
                                          "peak_memory_bytes",
                                          "simulated_time_s",
                                          "samples_per_step",
                                          "tokens_per_step",
                                          "compute_s_per_step",
                                          "comm_s_per_step",
                                          "gpu_memory_bytes",
                                          "lower_bound_s",
                                          "comm_bytes_per_step_intra_node",
                                          "comm_bytes_per_step_inter_node",
                                          "comm_bytes_per_step_wan"};
constexpr const char* kNumericGroups[] = {"memory_breakdown", "steady_state",
                                          "micro_batches_per_step", "idle_breakdown",
                                          "idle_fraction_per_gpu"};

// A shard's row `i` (`r`): its varied keys, error and metrics have the types a sweep writes, so
// that a damaged or hand-edited shard is named here, not half-merged (issue 26.10).
void check_row(const ordered_json& r, const ordered_json& vary, const std::string& file,
               std::size_t i) {
  const auto bad = [&](const std::string& key, const char* expected, const ordered_json& got) {
    return std::runtime_error(fmt::format("{}: key 'results.{}.{}': expected {}, got {}", file, i,
                                          key, expected, got.dump().substr(0, 200)));
  };
  for (const auto& key : vary)
    if (!r.contains(key.get<std::string>()) || !r[key.get<std::string>()].is_string())
      throw bad(key.get<std::string>(), "the point's value of this varied key (a string)",
                r.value(key.get<std::string>(), ordered_json()));
  if (r.contains("error")) {
    if (!r["error"].is_string())
      throw bad("error", "a message", r["error"]);
    return;
  }
  // Every metric a sweep writes is a count, a time, a size or a fraction: a negative one is a
  // damaged shard (issue 63.9). What a value should have been, or nullptr when it is one.
  const auto expected = [](const ordered_json& v) -> const char* {
    if (v.is_null())
      return nullptr;
    if (!v.is_number())
      return "a number";
    return std::isfinite(v.get<double>()) && v.get<double>() >= 0 ? nullptr
                                                                  : "a number of at least 0";
  };
  for (const char* field : kNumericFields)
    if (r.contains(field))
      if (const char* what = expected(r[field]))
        throw bad(field, what, r[field]);
  for (const char* group : kNumericGroups) {
    if (!r.contains(group))
      continue;
    const auto& g = r[group];
    if (!g.is_object() && !g.is_array())
      throw bad(group, "an object or list of numbers", g);
    for (auto it = g.begin(); it != g.end(); ++it)
      if (const char* what = expected(*it))
        throw bad(
            fmt::format("{}.{}", group,
                        g.is_object() ? it.key() : std::to_string(std::distance(g.begin(), it))),
            what, *it);
  }
}

// The parts of a shard's summary that merge copies (the scenario, the sweep's keys, values and
// overrides) have the types a sweep writes.
void check_shard(const ordered_json& doc, const std::string& file) {
  const auto bad = [&](const char* key, const char* expected, const ordered_json& got) {
    return std::runtime_error(fmt::format("{}: key '{}': expected {}, got {}", file, key, expected,
                                          got.dump().substr(0, 200)));
  };
  const auto strings = [](const ordered_json& v) {
    return v.is_array() &&
           std::all_of(v.begin(), v.end(), [](const auto& x) { return x.is_string(); });
  };
  const auto& sweep = doc["sweep"];
  if (!doc.contains("scenario") || !doc["scenario"].is_object())
    throw bad("scenario", "the scenario (an object)", doc.value("scenario", ordered_json()));
  if (!sweep.contains("vary") || !strings(sweep["vary"]) || sweep["vary"].empty())
    throw bad("sweep.vary", "the list of varied keys", sweep.value("vary", ordered_json()));
  if (sweep.contains("values") && !sweep["values"].is_object())
    throw bad("sweep.values", "an object of value lists", sweep["values"]);
  if (sweep.contains("overrides") && !strings(sweep["overrides"]))
    throw bad("sweep.overrides", "a list of key=value strings", sweep["overrides"]);
}

// Where a directory is, links resolved: the same shard given twice, or an output directory that
// is a shard (or holds one, or lies inside one), is found whatever the spelling.
std::filesystem::path canonical_dir(const std::string& dir) {
  std::error_code ec;
  auto p = std::filesystem::weakly_canonical(std::filesystem::absolute(dir), ec);
  return ec ? std::filesystem::path(dir).lexically_normal() : p;
}

bool inside(const std::filesystem::path& a, const std::filesystem::path& b) {
  auto [ai, bi] = std::mismatch(a.begin(), a.end(), b.begin(), b.end());
  return bi == b.end() || (bi != b.end() && bi->empty() && std::next(bi) == b.end());
}

int merge_command(const std::string& out, const std::vector<std::string>& shards) {
  // Outside the try: released in the handler, before the message is written (release_json).
  ordered_json first;
  std::vector<ordered_json> rows;
  try {
    // Issue 26.10: a shard given twice, and an output directory that is a shard (which the merge
    // would replace), are refused before anything is read.
    const auto out_dir = canonical_dir(out);
    std::map<std::filesystem::path, std::string> seen;
    for (const auto& dir : shards) {
      const auto here = canonical_dir(dir);
      if (const auto [it, fresh] = seen.emplace(here, dir); !fresh)
        throw std::runtime_error(
            fmt::format("{}: given twice (also as {}); give each shard once", dir, it->second));
      if (inside(out_dir, here) || inside(here, out_dir))
        throw std::runtime_error(fmt::format(
            "{}: the output directory {} {} this shard; merge into a directory of its own (it "
            "is replaced as a whole)",
            dir, out,
            out_dir == here         ? "is"
            : inside(out_dir, here) ? "lies inside"
                                    : "holds"));
    }
    // Every shard's rows are held at once: the shards share one budget of parsed memory.
    std::uintmax_t budget = scenario::kSummaryFile.max_parsed_bytes;
    std::set<int> points;
    std::set<std::pair<int, std::string>> seen_rows;
    for (const auto& dir : shards) {
      const std::string file = dir + "/summary.json";
      ordered_json doc = scenario::parse_user_json<ordered_json>(
          scenario::read_user_file(file, scenario::kSummaryFile), file, scenario::kSummaryFile,
          budget);
      if (!doc.is_object() || !doc.contains("sweep") || !doc["sweep"].is_object() ||
          !doc.contains("results") || !doc["results"].is_array())
        throw std::runtime_error(
            fmt::format("{}: not a sweep summary (expected 'sweep' and 'results')", file));
      const auto points_of = doc["sweep"].value("points", ordered_json());
      if (!points_of.is_number_unsigned() || points_of.get<std::uint64_t>() < 1 ||
          points_of.get<std::uint64_t>() > kMaxMergedPoints)
        throw std::runtime_error(fmt::format("{}: key 'sweep.points': expected a whole number in "
                                             "[1, {}], got {}",
                                             file, kMaxMergedPoints, points_of.dump()));
      check_shard(doc, file);
      if (!first.is_null()) {
        // Which part differs, so that a user sees why (the scenario, or the grid it was swept on).
        for (const auto& [what, mine, theirs] :
             std::initializer_list<std::tuple<const char*, ordered_json, ordered_json>>{
                 {"scenario", doc["scenario"], first["scenario"]},
                 {"sweep.vary", doc["sweep"].value("vary", ordered_json()),
                  first["sweep"].value("vary", ordered_json())},
                 {"sweep.values", doc["sweep"].value("values", ordered_json()),
                  first["sweep"].value("values", ordered_json())},
                 {"sweep.points", doc["sweep"]["points"], first["sweep"]["points"]},
                 {"sweep.overrides", doc["sweep"].value("overrides", ordered_json()),
                  first["sweep"].value("overrides", ordered_json())}})
          if (mine != theirs)
            throw std::runtime_error(
                fmt::format("{}: a shard of a different sweep than {}: its '{}' differs", dir,
                            shards[0], what));
      }
      std::set<int> here;
      for (std::size_t i = 0; i < doc["results"].size(); ++i) {
        const auto& r = doc["results"][i];
        const auto point = r.is_object() ? r.value("point", ordered_json()) : ordered_json();
        if (!point.is_number_unsigned() ||
            point.get<std::uint64_t>() >= points_of.get<std::uint64_t>())
          throw std::runtime_error(
              fmt::format("{}: key 'results.{}.point': expected a whole number "
                          "in [0, {}), got {}",
                          file, i, points_of.get<std::uint64_t>(), point.dump()));
        const int p = point.get<int>();
        if (points.contains(p))
          throw std::runtime_error(fmt::format("{}: point {} is in two shards", dir, p));
        const auto algorithm = r.value("algorithm", ordered_json());
        if (!algorithm.is_string())
          throw std::runtime_error(
              fmt::format("{}: key 'results.{}.algorithm': expected a name, got {}", file, i,
                          algorithm.dump().substr(0, 200)));
        if (!seen_rows.emplace(p, algorithm.get<std::string>()).second)
          throw std::runtime_error(fmt::format("{}: key 'results.{}': point {}, {} is listed twice",
                                               file, i, p, algorithm.get<std::string>()));
        check_row(r, doc["sweep"]["vary"], file, i);
        here.insert(p);
      }
      points.insert(here.begin(), here.end());
      // Moved, not copied: a merge holds each row once.
      for (auto& r : doc["results"])
        rows.push_back(std::move(r));
      if (first.is_null())
        first = std::move(doc);
    }
    if (first.is_null())
      throw std::runtime_error("expected shard directories to merge");
    const int total = first["sweep"]["points"].get<int>();
    for (int p = 0; p < total; ++p)
      if (!points.contains(p))
        throw std::runtime_error(fmt::format("point {} of {} is in no shard", p, total));
    std::stable_sort(rows.begin(), rows.end(), [](const ordered_json& a, const ordered_json& b) {
      return a["point"].get<int>() < b["point"].get<int>();
    });
    ordered_json top;
    top["sweep"] = first["sweep"];
    top["sweep"]["shard"] = "merged";
    OutputStage stage(out);
    // The report first: the summary takes the rows (no copy of a large merge).
    write_file_atomically(stage.path() + "/report.md",
                          sweep_report_markdown(first["scenario"], top["sweep"], rows));
    write_summary(stage.path(), nlohmann::json::parse(first["scenario"].dump()), std::move(rows),
                  top);
    draw_plots(stage.path());
    stage.publish();
    std::printf("%d points from %zu shards: outputs in %s\n", total, shards.size(), out.c_str());
    return 0;
  } catch (const std::exception& e) {
    for (auto& r : rows)
      scenario::release_json(r);
    scenario::release_json(first);
    return report_failure("overlapsim merge", e);
  }
}

} // namespace overlapsim::cli
