#include "cli/commands.h"

#include "cli/algorithms_command.h"
#include "cli/collective_command.h"
#include "cli/plots.h"
#include "cli/presets_command.h"
#include "cli/run_command.h"
#include "cli/sweep_command.h"
#include "cli/validate_command.h"
#include "files/interruption.h"

#include <fmt/format.h>
#include <memory>

#ifndef OVERLAPSIM_VERSION
#define OVERLAPSIM_VERSION "dev"
#endif

namespace overlapsim::cli {

namespace {
int g_exit_code = 0;
} // namespace

int exit_code() {
  return g_exit_code;
}

std::string version_string() {
  return fmt::format("overlapsim {} (SimGrid backend{})", OVERLAPSIM_VERSION,
#if defined(OVERLAPSIM_HAVE_TORCH)
                     ", LibTorch validate backend"
#elif defined(OVERLAPSIM_REAL_SIBLING)
                     ", LibTorch validate backend in " OVERLAPSIM_REAL_SIBLING
#else
                     ""
#endif
  );
}

namespace {
// `--out ''` fell back to the scenario's output.dir without a word (issue 26.12).
const CLI::Validator kNonEmpty(
    [](std::string& value) {
      return value.empty() ? std::string("expected a path, got an empty one") : std::string();
    },
    "PATH");
// Issue 63.7: `--timeout -1` started the workers, and Gloo refused it with "enforce fail". Checked
// here, where the option is parsed, so that builds without LibTorch check it alike.
const CLI::Range kTimeout(0.001, 86400.0, "SECONDS");
} // namespace

void add_commands(CLI::App& app) {
  auto run_opts = std::make_shared<RunOptions>();
  auto* run = app.add_subcommand("run", "Simulate a scenario's algorithms; write summary.json, "
                                        "summary.csv, trace-<algorithm>.json and plots");
  run->add_option("scenario", run_opts->scenario, "Scenario YAML file")->required();
  run->add_option("--out", run_opts->out, "Output directory (default: the scenario's output.dir)")
      ->check(kNonEmpty);
  run->add_option("--algorithms", run_opts->algorithms,
                  "Comma-separated algorithms to run, in this order: the scenario's entries by "
                  "label, or any "
                  "registered algorithm (default options) even if the scenario does not list it")
      ->delimiter(',');
  run->add_option("--set", run_opts->overrides,
                  "Override a scenario key: key.path=value (repeatable), e.g. cluster.nodes=8");
  run->add_flag("!--no-plots", run_opts->plots, "Do not draw PNG plots");
  run->add_flag("!--no-progress", run_opts->progress, "Do not print a progress line");
  run->add_flag("--force", run_opts->force,
                "Run even past the work budget (about 2e7 simulated ops per algorithm)");
  run->add_option("--max-memory", run_opts->max_memory,
                  "Refuse a run whose estimated memory exceeds this (default: the memory "
                  "available now), e.g. 8GB");
  run->add_option(
      "--max-time", run_opts->max_time,
      "Refuse a command whose estimated wall time exceeds this (default: 10min), e.g. 2h; the "
      "estimate is printed with the refusal");
  run->callback([run_opts] {
    InterruptGuard guard;
    g_exit_code = run_command(*run_opts);
  });

  auto coll = std::make_shared<CollectiveOptions>();
  auto* collective = app.add_subcommand(
      "collective",
      "Simulate one collective on the scenario's cluster; print time, algbw and busbw "
      "the nccl-tests way");
  collective->add_option("scenario", coll->scenario, "Scenario YAML file")->required();
  collective
      ->add_option("--op", coll->op,
                   "all-reduce | reduce-scatter | all-gather | broadcast | reduce | all-to-all | "
                   "sendrecv")
      ->capture_default_str();
  collective
      ->add_option("--size", coll->size,
                   "Size (1GB) or doubling range (1KB:1GB); K, M, G are powers of 1024 as in "
                   "nccl-tests' -b/-e")
      ->capture_default_str();
  collective
      ->add_option("--algorithm", coll->algorithm, "ring | tree | hierarchical | collnet | auto")
      ->check(CLI::IsMember({"ring", "tree", "hierarchical", "collnet", "auto"}));
  collective->add_flag("--json", coll->json, "Print a JSON list (one object per size)");
  collective->add_option("--set", coll->overrides, "Override a scenario key: key.path=value");
  collective->add_option("--max-time", coll->max_time,
                         "Refuse when the estimated wall time of every size exceeds this "
                         "(default: 10min), e.g. 2h");
  collective->add_option("--max-memory", coll->max_memory,
                         "Refuse a simulation whose estimated memory exceeds this (default: the "
                         "memory available now), e.g. 8GB");
  collective->callback([coll] {
    InterruptGuard guard;
    g_exit_code = collective_command(*coll);
  });

  auto val = std::make_shared<ValidateOptions>();
  auto* validate = app.add_subcommand(
      "validate",
      "Run the scenario's algorithms for real (LibTorch + c10d), profile first, predict "
      "the same run with that calibration and write comparison.json/csv, loss.csv, "
      "measured and predicted summaries and traces");
  validate->add_option("scenario", val->scenario, "Scenario YAML file (model mlp or gpt-tiny)")
      ->required();
  validate->add_option("--out", val->out, "Output directory (default: the scenario's output.dir)")
      ->check(kNonEmpty);
  validate->add_option("--workers", val->workers, "Worker processes started on this machine")
      ->capture_default_str();
  validate->add_option("--backend", val->backend, "gloo (CPU) | nccl (CUDA LibTorch builds)")
      ->capture_default_str();
  validate->add_option("--emulate-link", val->emulate_link,
                       "Shape every worker's link to this rate (e.g. 100Mbit/s) in its own "
                       "network namespace; root only");
  validate
      ->add_option("--timeout", val->timeout_s,
                   "Seconds one collective (or the rendezvous) may wait before the run fails")
      ->check(kTimeout)
      ->capture_default_str();
  validate
      ->add_option("--profile-time", val->profile_time_s,
                   "Seconds of timed repeats per profiled quantity (a layer, the optimizer step, "
                   "a collective size); at least 5 repeats, at most 200")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  validate
      ->add_option("--cpu-bind", val->cpu_bind,
                   "cores: each local worker runs on its own share of the cores (as each GPU is "
                   "its own device); none: the kernel places every thread")
      ->check(CLI::IsMember({"cores", "none"}))
      ->capture_default_str();
  validate
      ->add_option("--gloo-piece", val->gloo_piece_bytes,
                   "Bytes per piece of Gloo's reduce-scatter and all-gather (0: what the link "
                   "moves in 20 ms, measured at the start, within 256 KiB-4 MiB)")
      ->check(CLI::Range(0LL, 1LL << 30))
      ->capture_default_str();
  validate
      ->add_option("--repeats", val->repeats,
                   "Runs of each algorithm, interleaved (every algorithm's first, then every "
                   "one's second, ...): each measured figure is their median, with their range, "
                   "and an error inside the range is marked within noise (default: 3 when the "
                   "algorithms run at most 60 steps in all, else 1)")
      ->check(CLI::Range(1, 1000));
  validate
      ->add_option("--algorithms", val->algorithms,
                   "Comma-separated algorithms to run, in this order: the scenario's entries by "
                   "label, or any "
                   "registered algorithm (default options) even if the scenario does not list it")
      ->delimiter(',');
  validate->add_option("--set", val->overrides, "Override a scenario key: key.path=value");
  validate->add_flag("!--no-plots", val->plots, "Do not draw PNG plots");
  validate->add_flag("!--no-progress", val->progress, "Do not print a progress bar");
  validate->callback([val] { g_exit_code = validate_command(*val); });

  auto prof = std::make_shared<ProfileOptions>();
  auto* profile = app.add_subcommand(
      "profile", "Measure per-layer forward/backward times, the optimizer step, copies and "
                 "all-reduce times over a size sweep; fit alpha-beta; write a calibration "
                 "profile (or import an nccl-tests log with --import-nccl-tests)");
  profile->add_option("scenario", prof->scenario, "Scenario YAML file (model mlp or gpt-tiny)");
  profile->add_option("--out", prof->out, "Profile file (default: <output.dir>/profile.json)")
      ->check(kNonEmpty);
  profile->add_option("--workers", prof->workers, "Worker processes started on this machine")
      ->capture_default_str();
  profile->add_option("--backend", prof->backend, "gloo | nccl")->capture_default_str();
  profile->add_option("--emulate-link", prof->emulate_link, "As for validate; root only");
  profile->add_option("--timeout", prof->timeout_s, "Seconds one collective may wait")
      ->check(kTimeout)
      ->capture_default_str();
  profile->add_option("--profile-time", prof->profile_time_s, "As for validate")
      ->check(CLI::Range(0.001, 3600.0))
      ->capture_default_str();
  profile->add_option("--cpu-bind", prof->cpu_bind, "As for validate")
      ->check(CLI::IsMember({"cores", "none"}))
      ->capture_default_str();
  profile->add_option("--gloo-piece", prof->gloo_piece_bytes, "As for validate")
      ->check(CLI::Range(0LL, 1LL << 30))
      ->capture_default_str();
  profile->add_option("--set", prof->overrides, "Override a scenario key: key.path=value");
  profile->add_option("--import-nccl-tests", prof->nccl_tests_log,
                      "Fit alpha/beta from an nccl-tests output log instead of measuring");
  profile
      ->add_option("--op", prof->op,
                   "The log's collective: all_reduce | reduce_scatter | "
                   "all_gather | broadcast | reduce")
      ->capture_default_str();
  profile->add_option("--ranks", prof->ranks, "Ranks of the log (default: its '#  Rank' lines)");
  profile->add_option("--link", prof->link, "Which link the log measured: inter_node | intra_node")
      ->capture_default_str();
  profile->add_option("--import-torch-profiler", prof->torch_profiler_trace,
                      "Per-layer GPU times from a PyTorch profiler trace (Kineto JSON or .json.gz, "
                      "with_modules=True, ProfilerStep#N) of the SCENARIO's model");
  profile->callback([prof] { g_exit_code = profile_command(*prof); });

  auto sw = std::make_shared<SweepOptions>();
  auto* sweep = app.add_subcommand(
      "sweep",
      "Run a scenario over the cartesian grid of --vary values: one summary with a row per "
      "point and algorithm (values may not contain commas)");
  sweep->add_option("scenario", sw->scenario, "Scenario YAML file")->required();
  sweep->add_option("--vary", sw->vary, "key.path=v1,v2,... (repeatable; the first varies slowest)")
      ->required();
  sweep->add_option("--set", sw->overrides, "Override a scenario key for every point");
  sweep->add_option("--out", sw->out, "Output directory (default: the scenario's output.dir)")
      ->check(kNonEmpty);
  sweep->add_option("--shard", sw->shard,
                    "i/n with 0-based i: run the points with index % n == i (a Slurm array "
                    "--array=0-(n-1) passes i=$SLURM_ARRAY_TASK_ID)");
  sweep->add_flag("--shard-one-based", sw->shard_one_based,
                  "--shard's i counts from 1 (a Slurm array --array=1-n): i/n runs the points "
                  "with index % n == i-1");
  sweep->add_option("--jobs", sw->jobs, "Points run in parallel (default: the number of cores)");
  sweep->add_flag("!--no-plots", sw->plots, "Do not draw PNG plots");
  sweep->add_flag("!--no-progress", sw->progress, "Do not print a progress bar");
  sweep->add_flag("--force", sw->force, "Run points even past the work budget");
  sweep->add_option("--max-memory", sw->max_memory,
                    "Refuse a sweep whose estimated memory (its largest point x the points run at "
                    "once) exceeds this (default: the memory available now)");
  sweep->add_option("--max-time", sw->max_time,
                    "Refuse a sweep whose estimated wall time (every point, over --jobs) exceeds "
                    "this (default: 10min), e.g. 2h");
  sweep->callback([sw] {
    InterruptGuard guard;
    g_exit_code = sweep_command(*sw);
  });

  auto merge_out = std::make_shared<std::string>();
  auto merge_in = std::make_shared<std::vector<std::string>>();
  auto* merge = app.add_subcommand("merge", "Join the shard outputs of one sweep into one summary");
  merge->add_option("out", *merge_out, "Output directory")->required()->check(kNonEmpty);
  merge->add_option("shards", *merge_in, "Shard output directories")->required()->check(kNonEmpty);
  merge->callback([merge_out, merge_in] {
    InterruptGuard guard;
    g_exit_code = merge_command(*merge_out, *merge_in);
  });

  auto presets_json = std::make_shared<bool>(false);
  auto* presets = app.add_subcommand(
      "presets", "List the GPU, link and model presets a scenario can name, with their numbers");
  presets->add_flag("--json", *presets_json, "Print JSON");
  presets->callback([presets_json] { g_exit_code = presets_command(*presets_json); });

  auto algorithms_json = std::make_shared<bool>(false);
  auto* algorithms = app.add_subcommand(
      "algorithms", "List the algorithms a scenario can name, with their options and papers");
  algorithms->add_flag("--json", *algorithms_json, "Print JSON");
  algorithms->callback([algorithms_json] { g_exit_code = algorithms_command(*algorithms_json); });

  auto plot_dir = std::make_shared<std::string>();
  auto* plot = app.add_subcommand("plot", "(Re)draw the plots of an output directory");
  plot->add_option("dir", *plot_dir, "Output directory holding summary.json")->required();
  plot->callback([plot_dir] {
    InterruptGuard guard;
    g_exit_code = plot_command(*plot_dir);
  });
}

} // namespace overlapsim::cli
