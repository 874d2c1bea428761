// Issue 15 through the command line: silently ignored inputs are errors (15.7), error exits name
// file and key (15.8), and a failed run leaves no outputs (15.9).
#include "test_util.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "algorithms/algorithm.h"
#include "scenario/loader.h"
#include "sim/child_process.h"
#include "sim/sim_runtime.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using overlapsim::testing::run;
using overlapsim::testing::slurp;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kScenario = overlapsim::testing::two_node_scenario("robust", "[ddp, acco]");

class RobustCli : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("overlapsim-robust-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    scenario_ = (dir_ / "s.yaml").string();
    std::ofstream(scenario_) << kScenario;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
  std::string scenario_;
};

TEST_F(RobustCli, RepeatedOrConflictingInputsAreErrors) {
  const auto twice = run("run " + scenario_ + " --no-plots --algorithms ddp,ddp --out " + out("o"));
  EXPECT_EQ(twice.first, 1);
  EXPECT_THAT(twice.second, HasSubstr("--algorithms lists 'ddp' twice"));
  const std::string sweep = "sweep " + scenario_ + " --no-plots --no-progress ";
  const auto jobs = run(sweep + "--vary training.steps=2,3 --jobs -5 --out " + out("o"));
  EXPECT_EQ(jobs.first, 1);
  EXPECT_THAT(jobs.second, HasSubstr("--jobs -5"));
  const auto both =
      run(sweep + "--vary training.steps=2,3 --set training.steps=4 --out " + out("o"));
  EXPECT_EQ(both.first, 1);
  EXPECT_THAT(both.second, HasSubstr("both fixed and varied"));
  EXPECT_FALSE(fs::exists(out("o")));
}

TEST_F(RobustCli, MergeRejectsDamagedShardsNamingFileAndKey) {
  ASSERT_EQ(run("sweep " + scenario_ +
                " --no-plots --no-progress --vary training.steps=2,3 --out " + out("s"))
                .first,
            0);
  auto doc = nlohmann::json::parse(slurp(dir_ / "s" / "summary.json"));
  doc["sweep"]["points"] = 1e30;
  fs::create_directories(dir_ / "forged");
  std::ofstream(dir_ / "forged" / "summary.json") << doc.dump();
  const auto forged = run("merge " + out("m") + " " + out("forged"));
  EXPECT_EQ(forged.first, 1);
  EXPECT_THAT(forged.second, HasSubstr("forged/summary.json: key 'sweep.points'"));
  EXPECT_THAT(forged.second, Not(HasSubstr("-2147483648")));
  fs::create_directories(dir_ / "broken");
  std::ofstream(dir_ / "broken" / "summary.json") << "{\"sweep\": [1, \xff";
  const auto broken = run("merge " + out("m") + " " + out("broken"));
  EXPECT_EQ(broken.first, 1);
  EXPECT_THAT(broken.second, HasSubstr("broken/summary.json: not valid JSON"));
  EXPECT_FALSE(fs::exists(out("m")));
}

TEST_F(RobustCli, AnUnknownCommandIsNamed) {
  // Issue 15.19: an unknown subcommand said "A subcommand is required".
  const auto r = run("frobnicate " + scenario_);
  EXPECT_NE(r.first, 0);
  EXPECT_THAT(r.second,
              HasSubstr("unknown command 'frobnicate'; expected one of: run, collective"));
}

TEST_F(RobustCli, ShardIndicesAreZeroBasedAndSaySo) {
  // Issue 15.19: Slurm's 1-based ids were silently a different shard, or an error without a hint.
  const auto r = run("sweep " + scenario_ + " --no-plots --vary training.steps=2,3 --shard 2/2");
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("i is 0-based"));
  EXPECT_THAT(run("sweep --help").second, HasSubstr("0-based"));
}

TEST_F(RobustCli, ErrorsNameTheFileOrTheSet) {
  const auto dir = run("run " + dir_.string());
  EXPECT_EQ(dir.first, 1);
  EXPECT_THAT(dir.second, HasSubstr("is a directory; expected a scenario file"));
  const auto set = run("run " + scenario_ + " --set foo.bar=1");
  EXPECT_EQ(set.first, 1);
  EXPECT_THAT(set.second, HasSubstr("--set foo.bar: key 'foo': unknown key"));
  std::ofstream(dir_ / "complex.yaml") << "name: x\n? [a, b]\n: 1\n";
  const auto complex = run("run " + out("complex.yaml"));
  EXPECT_EQ(complex.first, 1);
  EXPECT_THAT(complex.second, HasSubstr("complex.yaml:2: key '': a key must be a plain name"));
  std::ofstream(dir_ / "dup.yaml") << std::string(kScenario) + "seed: 1\nseed: 2\n";
  const auto dup = run("run " + out("dup.yaml"));
  EXPECT_THAT(dup.second, HasSubstr("dup.yaml:13: key 'seed': given twice (first at line 12)"));
  std::ofstream(dir_ / "two.yaml") << std::string(kScenario) + "---\n" + kScenario;
  EXPECT_THAT(run("run " + out("two.yaml")).second, HasSubstr("a second YAML document"));
}

TEST_F(RobustCli, ARunOwnsItsOutputDirectory) {
  // Issue 15.12: a reused --out kept an earlier run's trace-acco.json next to the new outputs.
  ASSERT_EQ(run("run " + scenario_ + " --no-plots --out " + out("o")).first, 0);
  EXPECT_TRUE(fs::exists(dir_ / "o" / "trace-acco.json"));
  ASSERT_EQ(run("run " + scenario_ + " --no-plots --algorithms ddp --out " + out("o")).first, 0);
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir_ / "o"))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{".overlapsim-outputs.json", "report.md", "summary.csv",
                                             "summary.json", "trace-ddp.json"}));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr("staging")));
}

TEST_F(RobustCli, AFailedRunPublishesNothing) {
  // Issue 15.9: with o/report.md a directory the run failed with "cannot rename into place:
  // Success" and left traces and summaries behind.
  fs::create_directories(dir_ / "o" / "report.md");
  const auto r = run("run " + scenario_ + " --no-plots --out " + out("o"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("holds 'report.md' and no .overlapsim-outputs.json"));
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_ / "o"), fs::directory_iterator()), 1);
  // A file the user put there is never deleted: the run refuses the directory.
  fs::remove_all(dir_ / "o");
  fs::create_directories(dir_ / "o");
  std::ofstream(dir_ / "o" / "notes.txt") << "mine";
  EXPECT_EQ(run("run " + scenario_ + " --no-plots --out " + out("o")).first, 1);
  EXPECT_TRUE(fs::exists(dir_ / "o" / "notes.txt"));
  EXPECT_FALSE(fs::exists(dir_ / "o" / "summary.json"));
  // A run that fails leaves no staging directory and no output directory.
  EXPECT_EQ(run("run " + scenario_ + " --no-plots --algorithms nope --out " + out("n")).first, 1);
  EXPECT_FALSE(fs::exists(dir_ / "n"));
  for (const auto& e : fs::directory_iterator(dir_))
    EXPECT_THAT(e.path().filename().string(), Not(HasSubstr("staging")));
}

TEST_F(RobustCli, SamplesPerStepGoWithEverySpeedup) {
  // Issue 15.13: ACCO's speedup hid that its steps hold more samples; DDP's
  // micro_batches_per_step_mean was 0.0. 2 GPUs x micro-batch 2 x grad_accum 3 = 12 samples.
  const auto r =
      run("run " + scenario_ + " --no-plots --set training.grad_accum=3 --out " + out("o"));
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_THAT(r.second, HasSubstr("samples/step"));
  EXPECT_THAT(r.second, ::testing::ContainsRegex("ddp .* 1.000x +12 "));
  const auto doc = nlohmann::json::parse(slurp(dir_ / "o" / "summary.json"));
  const auto& ddp = doc["results"][0];
  EXPECT_EQ(ddp["algorithm"], "ddp");
  EXPECT_DOUBLE_EQ(ddp["samples_per_step"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(ddp["tokens_per_step"].get<double>(), 12 * 128);
  EXPECT_DOUBLE_EQ(ddp["micro_batches_per_step"]["mean"].get<double>(), 3);
  for (const auto& row : doc["results"])
    EXPECT_GT(row["micro_batches_per_step"]["mean"].get<double>(), 0) << row["algorithm"];
  const std::string csv = slurp(dir_ / "o" / "summary.csv");
  EXPECT_THAT(csv.substr(0, csv.find('\n')), HasSubstr(",samples_per_step,tokens_per_step"));
  EXPECT_THAT(csv, HasSubstr(",3.0,0.0,12.0,1536.0,false,true,75000000000.0,synchronous,,,"));
  EXPECT_THAT(slurp(dir_ / "o" / "report.md"), HasSubstr("| speedup vs DDP | samples/step |"));
}

TEST_F(RobustCli, OneInfeasibleAlgorithmDoesNotStopTheOthers) {
  // Issue 15.15: cdp-v2 on more GPUs than layers aborted the whole run and the whole sweep. The
  // model has 4 layers; CDP gives each GPU one stage.
  const auto r =
      run("run " + scenario_ +
          " --no-plots --algorithms ddp,cdp-v2,acco --set cluster.nodes=8 --out " + out("o"));
  EXPECT_EQ(r.first, 2) << r.second; // outputs complete, one row failed
  EXPECT_THAT(r.second, HasSubstr("cannot cut a model of 4 layers into 8 stages"));
  EXPECT_THAT(r.second, HasSubstr("use a model with at least 8 layers, or at most 4 GPUs"));
  const auto doc = nlohmann::json::parse(slurp(dir_ / "o" / "summary.json"));
  ASSERT_EQ(doc["results"].size(), 3u);
  EXPECT_FALSE(doc["results"][0].contains("error"));
  EXPECT_THAT(doc["results"][1]["error"].get<std::string>(), HasSubstr("cannot cut"));
  EXPECT_GT(doc["results"][2]["speedup_vs_ddp"].get<double>(), 0);
  EXPECT_TRUE(fs::exists(dir_ / "o" / "trace-acco.json"));
  EXPECT_FALSE(fs::exists(dir_ / "o" / "trace-cdp-v2.json"));
  EXPECT_THAT(slurp(dir_ / "o" / "summary.csv"), HasSubstr("cannot cut"));
  EXPECT_THAT(slurp(dir_ / "o" / "report.md"), HasSubstr("**cdp-v2 could not run**"));
  // In a sweep, the infeasible point's row carries the error and the other points complete.
  const auto s = run("sweep " + scenario_ +
                     " --no-plots --no-progress --vary cluster.nodes=2,8 --set "
                     "algorithms=[ddp,cdp-v2] --out " +
                     out("s"));
  EXPECT_EQ(s.first, 2) << s.second;
  const auto sweep = nlohmann::json::parse(slurp(dir_ / "s" / "summary.json"));
  ASSERT_EQ(sweep["results"].size(), 4u);
  EXPECT_FALSE(sweep["results"][1].contains("error")); // 2 GPUs, 4 layers: feasible
  EXPECT_TRUE(sweep["results"][3].contains("error"));
  EXPECT_GT(sweep["results"][2]["iteration_time_s"].get<double>(), 0);
}

TEST_F(RobustCli, MemoryOverflowIsFlaggedEverywhere) {
  // Issue 15.14: a peak above the GPU's memory was only on stderr. A 16 GB GPU and a model of
  // 4 x 500M parameters: bf16 parameters and gradients and AdamW's fp32 state (2 + 2 + 12 B) hold
  // 16 B x 2G = 32 GB per GPU under DDP, and DDP's gradient buckets (gradient_as_bucket_view
  // false) 2 B x 2G = 4 GB more: 36 GB (the layers store no activations).
  const auto r =
      run("run " + scenario_ +
          " --algorithms ddp --set 'cluster.gpu={preset: a100-80gb, memory: 16GB}' --set "
          "model.layers.0.params=500M --out " +
          out("o"));
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_THAT(r.second, HasSubstr("DOES NOT FIT (14.2 GB available per GPU)"));
  const auto doc = nlohmann::json::parse(slurp(dir_ / "o" / "summary.json"));
  EXPECT_TRUE(doc["results"][0]["exceeds_gpu_memory"].get<bool>());
  EXPECT_DOUBLE_EQ(doc["results"][0]["peak_memory_bytes"].get<double>(), 36e9);
  EXPECT_THAT(slurp(dir_ / "o" / "summary.csv"),
              HasSubstr(",true,false,14200000000.0,synchronous,,,"));
  EXPECT_THAT(slurp(dir_ / "o" / "report.md"), HasSubstr("**ddp does not fit**: it needs"));
  EXPECT_TRUE(fs::exists(dir_ / "o" / "memory.png"));
}

TEST_F(RobustCli, WorkPastTheBudgetIsRefusedBeforeSimulating) {
  // Issue 15.6: bucket_cap 1B made a bucket per parameter (bad_alloc after 38 s); a million steps
  // ran on with no end in sight. The estimate: 2 GPUs x 3 steps x (4 x 2 + 16M buckets of 2 bytes +
  // 4). Every GPU simulated (rank classes would run one of the two).
  const std::string full = " --set cluster.rank_classes=off";
  const auto start = std::chrono::steady_clock::now();
  const auto buckets =
      run("run " + scenario_ + full +
          " --no-plots --set 'algorithms=[{name: ddp, bucket_cap: 1B}]' --out " + out("o"));
  EXPECT_EQ(buckets.first, 1);
  EXPECT_THAT(buckets.second, HasSubstr("about 96M ops"));
  EXPECT_THAT(buckets.second, HasSubstr("16M collectives"));
  EXPECT_THAT(buckets.second, HasSubstr("or pass --force"));
  const auto steps =
      run("run " + scenario_ + full + " --no-plots --set training.steps=1048576 --out " + out("o"));
  EXPECT_EQ(steps.first, 1);
  EXPECT_THAT(steps.second, HasSubstr("1.049M steps"));
  const auto sweep = run("sweep " + scenario_ + full +
                         " --no-plots --vary training.steps=2,1000000 --out " + out("o"));
  EXPECT_EQ(sweep.first, 1);
  EXPECT_THAT(sweep.second, HasSubstr("point 1 (training.steps=1000000)"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 10);
  EXPECT_FALSE(fs::exists(out("o")));
  // Collective sizes run from 1 B to 1 PB; nccl-tests' spelling of the op works too (15.16).
  const auto dash = run("collective " + scenario_ + " --op all-reduce --size 1MB --json");
  const auto underscore = run("collective " + scenario_ + " --op all_reduce --size 1MB --json");
  EXPECT_EQ(dash.first, 0);
  EXPECT_EQ(underscore.first, 0) << underscore.second;
  EXPECT_EQ(dash.second, underscore.second);
  for (const std::string size : {"0", "1e308TB", "1KB:1e308TB", "1KB:2PB"}) {
    const auto r = run("collective " + scenario_ + " --size " + size);
    EXPECT_EQ(r.first, 1) << size;
    EXPECT_THAT(r.second, HasSubstr("--size '" + size + "'")) << size;
  }
}

// Throws from GPU 1's compute stream: an error inside a simulation's actor.
class Throwing final : public overlapsim::Algorithm {
public:
  std::string name() const override { return "throwing"; }
  std::unique_ptr<overlapsim::WorkerProgram> program(overlapsim::Worker& w) const override {
    class P final : public overlapsim::WorkerProgram {
    public:
      explicit P(overlapsim::Worker& worker) : w_(worker) {}
      void run_compute() override {
        if (w_.rank() == 1)
          throw std::runtime_error("out of buffers");
        w_.step_done(0, 0);
      }
      void run_comm() override {}

    private:
      overlapsim::Worker& w_;
    };
    return std::make_unique<P>(w);
  }
};

TEST(RobustChild, AnErrorInsideTheSimulationIsAMessageNotAnAbort) {
  // Issue 15.8: exceptions inside SimGrid actors aborted the child with a backtrace, reported as
  // "killed by signal 6 (a deadlocked algorithm ...)".
  const auto s = overlapsim::scenario::load_scenario_text(kScenario, "s.yaml");
  try {
    overlapsim::sim::simulate(s, Throwing{});
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_THAT(e.what(), HasSubstr("simulation of 'throwing' failed: GPU 1 (compute stream) at "
                                    "t = 0 s: out of buffers"));
    EXPECT_THAT(e.what(), Not(HasSubstr("signal")));
  }
}

bool process_gone(pid_t pid) {
  if (::kill(pid, 0) != 0)
    return true;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(stat, line);
  const auto close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] == 'Z';
}

TEST(RobustChild, TheSimulationChildDiesWithItsParent) {
  // Issue 15.9: killing `overlapsim run` left its simulation child running. A parent process
  // starts a child that sleeps, reports the child's pid, and is killed.
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::close(fds[0]);
    overlapsim::sim::ChildProcess child([] {
      std::this_thread::sleep_for(std::chrono::seconds(60));
      return std::string();
    });
    // The child's pid is the parent's newest child: read it from /proc.
    std::ifstream children("/proc/" + std::to_string(::getpid()) + "/task/" +
                           std::to_string(::getpid()) + "/children");
    pid_t pid = 0;
    children >> pid;
    [[maybe_unused]] const auto n = ::write(fds[1], &pid, sizeof pid);
    ::pause();
    _exit(0);
  }
  ::close(fds[1]);
  pid_t child = 0;
  ASSERT_EQ(::read(fds[0], &child, sizeof child), static_cast<ssize_t>(sizeof child));
  ::close(fds[0]);
  ASSERT_GT(child, 0);
  EXPECT_FALSE(process_gone(child));
  ::kill(parent, SIGKILL);
  ::waitpid(parent, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = process_gone(child);
    if (!gone)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "child " << child << " outlived its parent";
  if (!gone)
    ::kill(child, SIGKILL);
}

} // namespace
