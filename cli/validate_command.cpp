#include "cli/validate_command.h"

#include "algorithms/registry.h"
#include "algorithms/sync_period.h"
#include "cli/plots.h"
#include "cli/profile_sizes.h"
#include "cli/progress_bar.h"
#include "cli/run_command.h"
#include "cli/time_to_target.h"
#include "cli/trace_file.h"
#include "files/atomic_file.h"
#include "files/output_stage.h"
#include "files/remove_tree.h"
#include "hw/units.h"
#include "scenario/calibration.h"
#include "scenario/loader.h"
#include "scenario/torch_profiler_import.h"
#include "scenario/user_file.h"
#include "trace/comparison.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fmt/ranges.h> // fmt::join (in <fmt/format.h> before fmt 11)
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

#ifdef OVERLAPSIM_HAVE_TORCH
#include "validate/launcher.h"
#include "validate/real_run.h"
#endif

namespace overlapsim::cli {

const std::vector<std::string>& real_algorithm_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> real;
    for (const auto* d : algorithm_registry())
      if (d->real_run)
        real.emplace_back(d->name);
    return real;
  }();
  return names;
}

namespace {

// Temporary directories of real runs: "overlapsim-validate-<pid>-XXXXXX" in the temporary
// directory.
constexpr const char* kTempPrefix = "overlapsim-validate-";

// Removes this user's temporary directories whose process is gone: a SIGKILLed validate or
// profile cannot remove its own (issue 26.12).
[[maybe_unused]] void remove_stale_temp_dirs() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path(), ec)) {
    const std::string name = entry.path().filename().string();
    if (!name.starts_with(kTempPrefix) || !entry.is_directory(ec) || entry.is_symlink(ec))
      continue;
    const std::string rest = name.substr(std::string_view(kTempPrefix).size());
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    struct stat st {};
    if (end == rest.c_str() || *end != '-' || pid <= 0 || ::lstat(entry.path().c_str(), &st) != 0 ||
        st.st_uid != ::getuid())
      continue;
    if (::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      overlapsim::remove_tree(entry.path().string());
  }
}

// A temporary directory removed on every path out.
class TempDir {
public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() /
                           fmt::format("{}{}-XXXXXX", kTempPrefix, ::getpid()))
                              .string();
    if (::mkdtemp(pattern.data()) == nullptr)
      throw std::runtime_error("cannot create a temporary directory");
    path_ = pattern;
  }
  ~TempDir() { overlapsim::remove_tree(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

private:
  std::string path_;
};

[[maybe_unused]] double parse_rate(const std::string& text) {
  try {
    return hw::parse_bandwidth_Bps(text);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("--emulate-link '{}': {}", text, e.what()));
  }
}

#ifdef OVERLAPSIM_HAVE_TORCH

bool externally_launched() {
  for (const char* v : {"RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"})
    if (std::getenv(v) != nullptr)
      return true;
  return false;
}

// The scenario as the real job runs it: its shape, fp32 (CPU Gloo reduces fp32), the selected
// algorithms; checked for what has a real implementation.
scenario::Scenario real_scenario(const std::string& path, std::vector<std::string> overrides,
                                 const std::vector<std::string>& algorithms, int world) {
  const auto base = scenario::load_scenario(path, overrides);
  const auto [nodes, gpus] = real::job_shape(base, world);
  overrides.push_back(fmt::format("cluster.nodes={}", nodes));
  overrides.push_back(fmt::format("cluster.gpus_per_node={}", gpus));
  overrides.push_back("model.dtype=fp32");
  auto s = scenario::load_scenario(path, overrides);
  // A key the job's shape made ineffective (inter_node for --workers 1, one node) is not the
  // user's doing: only the scenario as written warns.
  std::erase_if(s.warnings, [&](const std::string& w) {
    return std::find(base.warnings.begin(), base.warnings.end(), w) == base.warnings.end();
  });
  select_algorithms(s, algorithms);
  // Running without it would compare a prediction with recomputation against a run without.
  if (s.model.checkpointing.enabled())
    throw std::runtime_error(fmt::format(
        "{}: key 'model.activation_checkpointing': the real runtime does not implement activation "
        "checkpointing; set it to none (or remove it) to validate this scenario",
        s.model.checkpointing.where));
  // Pipeline (1F1B or GPipe) and tensor parallelism run for real with DDP on the data dimension
  // (issue 65.9); the other schedules and algorithms are simulated only.
  if (s.parallelism.tensor > 1 && s.model.preset != "gpt-tiny")
    throw std::runtime_error(fmt::format(
        "{}: key 'parallelism.tensor': the real runtime splits gpt-tiny's layers; tensor "
        "parallelism of '{}' is simulated only",
        s.parallelism.tensor_where, s.model.preset));
  if (s.parallelism.tensor > 1 || s.parallelism.pipeline > 1) {
    if (s.parallelism.schedule != scenario::PipelineSchedule::one_f_one_b &&
        s.parallelism.schedule != scenario::PipelineSchedule::gpipe)
      throw std::runtime_error(
          fmt::format("{}: key 'parallelism.schedule': {} is simulated only; the real runtime "
                      "runs 1f1b and gpipe",
                      s.parallelism.where, scenario::to_string(s.parallelism.schedule)));
    for (const auto& a : s.algorithms)
      if (a.name != "ddp")
        throw std::runtime_error(fmt::format(
            "{}: algorithm '{}': under parallelism.tensor or pipeline the real runtime runs ddp "
            "on the data-parallel dimension (the others are simulated only)",
            a.where, a.name));
  }
  if (s.parallelism.recompute != scenario::Recompute::none)
    throw std::runtime_error(fmt::format(
        "{}: key 'parallelism.recompute': the real runtime does not recompute; set it to none "
        "(or remove it) to validate this scenario",
        s.parallelism.where));
  if (s.model.preset != "mlp" && s.model.preset != "gpt-tiny")
    throw std::runtime_error(fmt::format(
        "{}: model '{}' has no real implementation; validate runs the presets mlp and gpt-tiny",
        path, s.model.preset.empty() ? s.model.spec.name : s.model.preset));
  const auto& real = real_algorithm_names();
  for (const auto& a : s.algorithms) {
    if (find_algorithm(a.name) == nullptr)
      (void)make_algorithm(a); // the registry's error: unknown, and the names it knows
    if (std::find(real.begin(), real.end(), a.name) == real.end())
      throw std::runtime_error(
          fmt::format("{}: algorithm '{}' is simulated only so far; validate runs: {}", a.where,
                      a.name, fmt::join(real, ", ")));
    // CDP runs for real in its default setting, one stage per worker.
    if (const auto it = a.options.find("setting");
        it != a.options.end() && it->second.value != "multi-gpu")
      throw std::runtime_error(fmt::format(
          "{}: {} with setting '{}' is simulated only so far; validate runs setting multi-gpu",
          it->second.where, a.name, it->second.value));
  }
  return s;
}

// The steps the algorithms run in all (warm-up and measured, each as validate runs it) and the
// repeats that gives by default (kShortRunSteps).
int run_steps(const scenario::Scenario& s) {
  int steps = 0;
  for (const auto& a : s.algorithms) {
    const auto windowed = with_measured_steps(s, a);
    steps += windowed.training.warmup_steps + windowed.training.steps;
  }
  return steps;
}

// How many times each algorithm runs, and why: the user's --repeats, else the default rule.
std::pair<int, std::string> resolve_repeats(const ValidateOptions& o, const scenario::Scenario& s) {
  if (o.repeats > 0)
    return {o.repeats, "--repeats"};
  const int steps = run_steps(s);
  const int n = steps <= kShortRunSteps ? kShortRunRepeats : 1;
  return {n, fmt::format("the default for a run of {} steps in all: {} up to {} steps, else 1",
                         steps, kShortRunRepeats, kShortRunSteps)};
}

double machine_memory_bytes() {
  return static_cast<double>(::sysconf(_SC_PHYS_PAGES)) *
         static_cast<double>(::sysconf(_SC_PAGESIZE));
}

// Rank 0, after the real runs: predict the same job with the calibration, compare, write.
int finish_validation(const ValidateOptions& o, const scenario::Scenario& real,
                      const real::WorkerResult& result, int world,
                      const std::pair<int, std::string>& repeats) {
  const std::string published = o.out.empty() ? real.output.dir : o.out;
  const std::string profile_path = published + "/profile.json"; // where it is once published
  // Written like run's outputs: staged, then published all at once (issue 26.5).
  OutputStage stage(published);
  const std::string& dir = stage.path();
  TempDir tmp;
  auto overrides = o.overrides;
  const auto [nodes, gpus] = real::job_shape(real, world);
  overrides.push_back(fmt::format("cluster.nodes={}", nodes));
  overrides.push_back(fmt::format("cluster.gpus_per_node={}", gpus));
  overrides.push_back("model.dtype=fp32");
  std::string calibration_text;
  if (result.calibration) {
    calibration_text = scenario::calibration_json(*result.calibration);
    const std::string cal = tmp.path() + "/profile.json";
    write_file_atomically(cal, calibration_text);
    overrides.push_back("model.profile=" + cal);
    overrides.push_back("cluster.calibration=" + cal);
    overrides.push_back(fmt::format("cluster.gpu={{name: '{} (calibrated)', peak_tflops: 1, "
                                    "memory: {}B, hbm_bandwidth: {}B/s}}",
                                    result.calibration->device,
                                    std::llround(machine_memory_bytes()),
                                    std::llround(result.calibration->memory_bandwidth_Bps)));
  }
  auto predicted = scenario::load_scenario(real.source, overrides);
  select_algorithms(predicted, o.algorithms);
  predicted.output.dir = published;
  if (result.calibration)
    predicted.model.profile = predicted.cluster.calibration = profile_path;
  std::vector<sim::SimulationResult> sims;
  auto predicted_rows = simulate_rows(predicted, false, &sims);

  // Measured rows, one per repeat, with speedups against the same repeat's measured ddp when it
  // ran (repeats run interleaved: the same repeat of ddp ran beside it).
  std::vector<std::vector<SummaryRow>> measured_repeats(result.runs.size());
  for (std::size_t i = 0; i < result.runs.size(); ++i)
    for (const auto& run : result.runs[i])
      measured_repeats[i].push_back(
          make_row(with_measured_steps(real, real.algorithms[i]), run.algorithm, run.trace));
  for (std::size_t r = 0; r < static_cast<std::size_t>(repeats.first); ++r) {
    double ddp = 0;
    for (std::size_t i = 0; i < measured_repeats.size(); ++i)
      if (real.algorithms[i].name == "ddp" && ddp == 0 && r < measured_repeats[i].size())
        ddp = measured_repeats[i][r].metrics.throughput_samples_s;
    for (auto& rows_of : measured_repeats)
      if (r < rows_of.size()) {
        auto& row = rows_of[r];
        row.speedup_vs_ddp = ddp > 0 ? row.metrics.throughput_samples_s / ddp : 0.0;
        row.gpu_memory_bytes = machine_memory_bytes();
        row.memory_available_bytes = row.gpu_memory_bytes; // measured here: what it ran in
      }
  }
  // What is written of the measurement (summary row, trace, losses): the repeat nearest the
  // median iteration time (trace/comparison.h's median_repeat).
  std::vector<SummaryRow> measured_rows;
  std::vector<const real::MeasuredRun*> written;
  for (std::size_t i = 0; i < result.runs.size(); ++i) {
    const std::size_t k = median_repeat(measured_repeats[i]);
    measured_rows.push_back(measured_repeats[i].at(k));
    written.push_back(&result.runs[i].at(k));
  }
  // Time to target on the run's own measured curve, for the measured and the predicted row.
  for (std::size_t i = 0; i < written.size(); ++i) {
    std::vector<scenario::LossPoint> curve;
    for (const auto& l : written[i]->loss)
      curve.push_back(scenario::LossPoint{l.samples, l.loss});
    add_time_to_target(measured_rows[i], real, &curve, "measured");
    add_time_to_target(predicted_rows[i], predicted, &curve, "measured");
  }

  // comparison.json / .csv and the printed tables (trace/comparison.h).
  std::vector<const Trace*> predicted_traces;
  std::vector<std::vector<const Trace*>> measured_traces(result.runs.size());
  for (const auto& sim : sims)
    predicted_traces.push_back(&sim.trace);
  for (std::size_t i = 0; i < result.runs.size(); ++i)
    for (const auto& run : result.runs[i])
      measured_traces[i].push_back(&run.trace);
  const Comparison compared = compare_predicted_measured(predicted_rows, measured_repeats,
                                                         predicted_traces, measured_traces);
  const auto& [rows, ops, drift, drift_line, warnings, csv, table, step_lines, op_table] = compared;
  nlohmann::ordered_json comparison;
  comparison["scenario"] = real.name;
  comparison["workers"] = world;
  comparison["emulated_link_Bps"] = o.emulate_link.empty()
                                        ? nlohmann::ordered_json(nullptr)
                                        : nlohmann::ordered_json(parse_rate(o.emulate_link));
  comparison["cpu_bind"] = o.cpu_bind;
  comparison["gloo_piece_bytes"] = result.gloo_piece_bytes;
  comparison["clock_uncertainty_s"] = result.clock_uncertainty_s;
  // Each measured figure is the median of this many runs of its algorithm (issue 62.11).
  comparison["repeats"] = repeats.first;
  comparison["repeats_rule"] = repeats.second;
  auto representative = nlohmann::ordered_json::object();
  for (std::size_t i = 0; i < written.size(); ++i)
    representative[written[i]->algorithm] = median_repeat(measured_repeats[i]) + 1;
  comparison["written_repeat"] = representative; // 1-based: whose trace, row and losses are written
  // The profile's own drift (its last third of forward + backward against its first) beside it.
  auto machine_drift = drift;
  std::string drift_printed = drift_line;
  if (result.calibration && result.calibration->compute_drift) {
    machine_drift["in_profile"] = *result.calibration->compute_drift;
    drift_printed = fmt::format(
        "{}{} the profile's last third of forward + backward {:+.1f}% against its first\n",
        drift_line.empty() ? "machine drift:" : drift_line.substr(0, drift_line.size() - 1),
        drift_line.empty() ? "" : ";", 100 * *result.calibration->compute_drift);
  }
  comparison["machine_drift"] = machine_drift;
  comparison["rows"] = rows;
  comparison["ops"] = ops;
  comparison["warnings"] = warnings;

  std::string loss = "algorithm,step,samples,loss,wall_time_s\n";
  for (const auto* run : written)
    for (const auto& l : run->loss)
      loss += fmt::format("{},{},{},{:.9g},{:.6f}\n", run->algorithm, l.step, l.samples, l.loss,
                          l.wall_time_s);

  // Everything is computed: now the files, each atomically.
  std::vector<SummaryRow> all = measured_rows;
  all.insert(all.end(), predicted_rows.begin(), predicted_rows.end());
  for (const auto* run : written)
    write_trace_file(dir, run->algorithm + "-measured", run->trace,
                     fmt::format("{}: {} (measured)", real.name, run->algorithm), predicted.output);
  if (predicted.output.traces)
    for (std::size_t i = 0; i < predicted_rows.size(); ++i)
      write_trace_file(dir, predicted_rows[i].algorithm, sims[i].trace,
                       fmt::format("{}: {} (predicted)", real.name, predicted_rows[i].algorithm),
                       predicted.output);
  if (!calibration_text.empty())
    write_file_atomically(dir + "/profile.json", calibration_text);
  write_file_atomically(dir + "/comparison.json", comparison.dump(2) + "\n");
  write_file_atomically(dir + "/comparison.csv", csv);
  write_file_atomically(dir + "/loss.csv", loss);
  write_summary(dir, scenario::to_json(predicted), all);
  std::printf(
      "%s: %d workers%s, measured vs predicted (%s)\n%s", real.name.c_str(), world,
      o.emulate_link.empty() ? "" : fmt::format(", links {}", o.emulate_link).c_str(),
      repeats.first == 1
          ? "one run of each algorithm"
          : fmt::format("the median of {} interleaved runs of each algorithm", repeats.first)
                .c_str(),
      table.c_str());
  std::printf("%s", step_lines.c_str());
  std::printf("%s", drift_printed.c_str());
  if (result.gloo_piece_bytes > 0)
    std::printf("Gloo's reduce-scatters and all-gathers ran in pieces of %s\n",
                hw::format_bytes(static_cast<double>(result.gloo_piece_bytes)).c_str());
  if (result.clock_uncertainty_s > 0)
    std::printf("the ranks on other hosts than rank 0's: their clocks aligned to rank 0's within "
                "%s (the traces' times, the steps' ends)\n",
                hw::format_time(result.clock_uncertainty_s).c_str());
  std::printf("\nper op, predicted vs measured (typical op: its instances' medians; time per step "
              "per worker)\n%s",
              op_table.c_str());
  for (const auto& w : warnings)
    std::printf("warning: %s\n", w.c_str());
  if (o.plots && real.output.plots)
    draw_plots(dir);
  stage.publish();
  std::printf("outputs in %s\n", published.c_str());
  return 0;
}

// The command line each worker process of a local launch gets (the options both commands share).
std::vector<std::string> worker_argv(const char* command, const std::string& scenario,
                                     double timeout_s, const std::string& backend,
                                     double profile_time_s, const std::string& cpu_bind,
                                     long long gloo_piece_bytes) {
  return {"overlapsim",
          command,
          scenario,
          "--timeout",
          fmt::format("{}", timeout_s),
          "--backend",
          backend,
          "--profile-time",
          fmt::format("{}", profile_time_s),
          "--cpu-bind",
          cpu_bind,
          "--gloo-piece",
          fmt::format("{}", gloo_piece_bytes)};
}

// This process is one worker of the job.
int validate_worker(const ValidateOptions& o, const real::JobEnv& env) {
  if (!o.emulate_link.empty() && env.launched_by != "overlapsim")
    throw std::runtime_error("--emulate-link works with the local launcher only (drop RANK/"
                             "WORLD_SIZE and pass --workers)");
  const auto s = real_scenario(o.scenario, o.overrides, o.algorithms, env.world);
  if (env.rank == 0) // before the run, not after it
    check_output_dir(o.out.empty() ? s.output.dir : o.out);
  real::WorkerOptions wo;
  wo.timeout_s = o.timeout_s;
  wo.backend = o.backend;
  wo.profile = s.model.profile.empty();
  wo.profile_time_s = o.profile_time_s;
  wo.gloo_piece_bytes = o.gloo_piece_bytes;
  const auto repeats = resolve_repeats(o, s); // the same on every rank: from the scenario
  wo.repeats = repeats.first;
  if (wo.profile) {
    auto issued = issued_ops(s);
    wo.profile_sizes = std::move(issued.collectives);
    wo.profile_replicator_phases = std::move(issued.replicator_phases);
  }
  // Rank 0 shares the launcher's terminal: the bar shows there, and nowhere when it is no terminal.
  auto bar = std::make_unique<ProgressBar>(
      "validate", s.algorithms.size() * static_cast<std::size_t>(wo.repeats) + (wo.profile ? 1 : 0),
      "parts (profile, then algorithms' runs)");
  if (o.progress)
    wo.progress = [&bar](int done, int) { bar->update(static_cast<std::size_t>(done)); };
  const auto result = real::run_worker(s, env, wo);
  bar.reset();
  if (!result.root)
    return 0;
  ValidateOptions recorded = o;
  if (env.launched_by != "overlapsim")
    recorded.cpu_bind = "external launcher";
  return finish_validation(recorded, s, result, env.world, repeats);
}

#endif // OVERLAPSIM_HAVE_TORCH

} // namespace

int validate_command(const ValidateOptions& o) {
#ifndef OVERLAPSIM_HAVE_TORCH
  (void)o;
  std::fprintf(stderr,
               "overlapsim validate: real runs need overlapsim-real, built when LibTorch is "
               "found (install libtorch-dev and libgloo-dev, then rebuild)\n");
  return 1;
#else
  try {
    if (externally_launched()) {
      const auto env = real::job_env_from_environment();
      try {
        return validate_worker(o, *env);
      } catch (const Interrupted&) {
        throw;
      } catch (const std::exception& e) {
        // One line naming the rank and the cause, never LibTorch's backtrace (issue 26.6).
        throw std::runtime_error(
            fmt::format("worker rank {}: {}", env->rank, real::error_summary(e)));
      }
    }
    // Launcher: check everything that can be checked before starting workers.
    if (o.workers < 1)
      throw std::runtime_error(fmt::format("--workers {}: expected at least 1", o.workers));
    const auto checked = real_scenario(o.scenario, o.overrides, o.algorithms, o.workers);
    print_scenario_warnings(checked);
    for (const auto& a : checked.algorithms)
      with_measured_steps(checked, a); // a window shorter than a period fails before any worker
    real::check_backend(o.backend);
    check_output_dir(o.out.empty() ? checked.output.dir : o.out);
    remove_stale_temp_dirs();
    real::LocalLaunch launch;
    launch.workers = o.workers;
    launch.argv = worker_argv("validate", o.scenario, o.timeout_s, o.backend, o.profile_time_s,
                              o.cpu_bind, o.gloo_piece_bytes);
    launch.bind_cores = o.cpu_bind == "cores";
    if (!o.out.empty())
      launch.argv.insert(launch.argv.end(), {"--out", o.out});
    for (const auto& a : o.algorithms)
      launch.argv.insert(launch.argv.end(), {"--algorithms", a});
    if (o.repeats > 0) // else each worker takes the default from the scenario, as here
      launch.argv.insert(launch.argv.end(), {"--repeats", std::to_string(o.repeats)});
    const auto [repeats, rule] = resolve_repeats(o, checked);
    std::printf("runs of each algorithm: %d (%s)%s\n", repeats, rule.c_str(),
                repeats > 1 ? ", interleaved" : "");
    std::fflush(stdout);
    for (const auto& s : o.overrides)
      launch.argv.insert(launch.argv.end(), {"--set", s});
    if (!o.emulate_link.empty())
      launch.argv.insert(launch.argv.end(), {"--emulate-link", o.emulate_link});
    if (!o.plots)
      launch.argv.push_back("--no-plots");
    if (!o.progress)
      launch.argv.push_back("--no-progress");
    TempDir work;
    launch.work_dir = work.path();
    if (!o.emulate_link.empty())
      launch.emulate_rate_Bps = parse_rate(o.emulate_link);
    real::launch_local(launch);
    return 0;
  } catch (const std::exception& e) {
    return report_failure("overlapsim validate", e);
  }
#endif
}

int profile_command(const ProfileOptions& o) {
  try {
    if (!o.torch_profiler_trace.empty()) {
      if (o.scenario.empty())
        throw std::runtime_error("--import-torch-profiler needs the SCENARIO whose model the "
                                 "trace recorded");
      const auto s = scenario::load_scenario(o.scenario, o.overrides);
      const auto cal = scenario::import_torch_profiler(o.torch_profiler_trace, s);
      const std::string out = o.out.empty() ? s.output.dir + "/profile.json" : o.out;
      write_file_atomically(out, scenario::calibration_json(cal));
      double fwd = 0, bwd = 0;
      for (const auto& l : cal.layers)
        fwd += l.fwd_time_per_sample_s, bwd += l.bwd_time_per_sample_s;
      const double b = s.training.micro_batch;
      std::printf(
          "%s: %zu layers on %s: forward %s, backward %s, optimizer %s per micro-batch of "
          "%d\nwrote %s\n",
          o.torch_profiler_trace.c_str(), cal.layers.size(),
          cal.device.empty() ? "an unnamed device" : cal.device.c_str(),
          hw::format_time(fwd * b).c_str(), hw::format_time(bwd * b).c_str(),
          hw::format_time(cal.optimizer_time_per_param_s * s.model.spec.total_params()).c_str(),
          s.training.micro_batch, out.c_str());
      return 0;
    }
    if (!o.nccl_tests_log.empty()) {
      if (o.out.empty())
        throw std::runtime_error("--import-nccl-tests needs --out FILE");
      const std::string text = scenario::read_user_file(o.nccl_tests_log, scenario::kNcclTestsLog);
      const auto fit = scenario::import_nccl_tests(text, o.nccl_tests_log, o.op, o.ranks);
      scenario::Calibration cal;
      cal.source = "nccl-tests: " + o.nccl_tests_log;
      if (o.link == "inter_node")
        cal.inter_node = fit;
      else if (o.link == "intra_node")
        cal.intra_node = fit;
      else
        throw std::runtime_error(
            fmt::format("--link '{}': expected inter_node or intra_node", o.link));
      write_file_atomically(o.out, scenario::calibration_json(cal));
      std::printf("%s: %s over %d ranks, %zu sizes: latency %s, bandwidth %s (worst residual "
                  "%.1f%%)\nwrote %s\n",
                  o.nccl_tests_log.c_str(), fit.op.c_str(), fit.ranks, fit.points.size(),
                  hw::format_time(fit.latency_s).c_str(),
                  hw::format_bandwidth(fit.bandwidth_Bps).c_str(), 100 * fit.max_relative_residual,
                  o.out.c_str());
      return 0;
    }
#ifndef OVERLAPSIM_HAVE_TORCH
    throw std::runtime_error("this build has no LibTorch: only --import-nccl-tests is available");
#else
    if (o.scenario.empty())
      throw std::runtime_error("expected a SCENARIO to profile (or --import-nccl-tests LOG)");
    if (externally_launched()) {
      const auto env = real::job_env_from_environment();
      auto s = real_scenario(o.scenario, o.overrides, {}, env->world);
      real::WorkerOptions wo;
      auto issued = issued_ops(s); // the scenario's algorithms'
      wo.profile_sizes = std::move(issued.collectives);
      wo.profile_replicator_phases = std::move(issued.replicator_phases);
      s.algorithms.clear();
      wo.timeout_s = o.timeout_s;
      wo.backend = o.backend;
      wo.profile_time_s = o.profile_time_s;
      wo.gloo_piece_bytes = o.gloo_piece_bytes;
      const auto result = real::run_worker(s, *env, wo);
      if (!result.root)
        return 0;
      const std::string out = o.out.empty() ? s.output.dir + "/profile.json" : o.out;
      write_file_atomically(out, scenario::calibration_json(*result.calibration));
      const auto& c = *result.calibration;
      std::printf("%s: %zu layers, optimizer %s/param, copies %s\n", s.name.c_str(),
                  c.layers.size(), hw::format_time(c.optimizer_time_per_param_s).c_str(),
                  hw::format_bandwidth(c.memory_bandwidth_Bps).c_str());
      if (result.gloo_piece_bytes > 0)
        std::printf("  Gloo's reduce-scatters and all-gathers in pieces of %s\n",
                    hw::format_bytes(static_cast<double>(result.gloo_piece_bytes)).c_str());
      for (const auto* link : {&c.intra_node, &c.inter_node})
        if (*link)
          std::printf("  %s link: latency %s, bandwidth %s (worst residual %.1f%%)\n",
                      link == &c.intra_node ? "intra-node" : "inter-node",
                      hw::format_time((*link)->latency_s).c_str(),
                      hw::format_bandwidth((*link)->bandwidth_Bps).c_str(),
                      100 * (*link)->max_relative_residual);
      std::printf("wrote %s\n", out.c_str());
      return 0;
    }
    (void)real_scenario(o.scenario, o.overrides, {}, o.workers);
    real::check_backend(o.backend);
    remove_stale_temp_dirs();
    real::LocalLaunch launch;
    launch.workers = o.workers;
    launch.argv = worker_argv("profile", o.scenario, o.timeout_s, o.backend, o.profile_time_s,
                              o.cpu_bind, o.gloo_piece_bytes);
    launch.bind_cores = o.cpu_bind == "cores";
    if (!o.out.empty())
      launch.argv.insert(launch.argv.end(), {"--out", std::filesystem::absolute(o.out).string()});
    for (const auto& s : o.overrides)
      launch.argv.insert(launch.argv.end(), {"--set", s});
    TempDir work;
    launch.work_dir = work.path();
    if (!o.emulate_link.empty())
      launch.emulate_rate_Bps = parse_rate(o.emulate_link);
    real::launch_local(launch);
    return 0;
#endif
  } catch (const std::exception& e) {
    return report_failure("overlapsim profile", e);
  }
}

} // namespace overlapsim::cli
