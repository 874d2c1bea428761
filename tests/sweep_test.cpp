// `overlapsim sweep` and `overlapsim merge`: the grid, its columns, shards, errors, determinism.
#include "test_util.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "cli/report.h"
#include "cli/sweep_command.h"
#include "scenario/loader.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>
#include <unistd.h>
#include <vector>

namespace {

namespace fs = std::filesystem;
using overlapsim::testing::run;
using overlapsim::testing::slurp;
using ::testing::HasSubstr;

const char* kScenario = R"(name: sweep
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: a100-80gb
  inter_node: {bandwidth: 10Gb/s, latency: 5us}
model:
  layers:
    - {name: block, params: 20M, fwd_flops_per_sample: 200G, repeat: 4}
training: {micro_batch: 2, seq_len: 128, steps: 3}
algorithms: [ddp, acco]
)";

class Sweep : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("overlapsim-sweep-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << kScenario;
    scenario_ = (dir_ / "s.yaml").string();
    base_ = "sweep " + (dir_ / "s.yaml").string() + " --no-plots --no-progress " +
            "--vary cluster.inter_node.bandwidth=1Gb/s,100Gb/s --vary cluster.nodes=2,4 ";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  fs::path dir_;
  std::string base_;
  std::string scenario_ = "";
};

TEST(SweepGrid, CartesianFirstKeySlowest) {
  const auto g = overlapsim::cli::sweep_grid({"a=1,2", "b=x,y,z"});
  ASSERT_EQ(g.size(), 6u);
  EXPECT_EQ(g[0].values[0].second, "1");
  EXPECT_EQ(g[0].values[1].second, "x");
  EXPECT_EQ(g[2].values[1].second, "z");
  EXPECT_EQ(g[3].values[0].second, "2");
  EXPECT_EQ(g[5].index, 5);
  EXPECT_THROW(overlapsim::cli::sweep_grid({"a"}), std::invalid_argument);
  EXPECT_THROW(overlapsim::cli::sweep_grid({"a=1,,2"}), std::invalid_argument);
  EXPECT_THROW(overlapsim::cli::sweep_grid({"a=1,2,"}), std::invalid_argument);
  EXPECT_THROW(overlapsim::cli::sweep_grid({"a=1", "a=2"}), std::invalid_argument);
}

TEST_F(Sweep, GridRowsColumnsAndDirection) {
  const auto r = run(base_ + "--out " + (dir_ / "a").string());
  ASSERT_EQ(r.first, 0) << r.second;
  const auto doc = nlohmann::json::parse(slurp(dir_ / "a" / "summary.json"));
  ASSERT_EQ(doc["results"].size(), 8u); // 2 x 2 points x 2 algorithms
  EXPECT_EQ(doc["sweep"]["points"], 4);
  const auto csv = slurp(dir_ / "a" / "summary.csv");
  EXPECT_EQ(csv.substr(0, csv.find('\n'))
                .rfind("cluster.inter_node.bandwidth,cluster.nodes,algorithm,", 0),
            0u);
  // Point 0 is 1 Gb/s with 2 nodes, point 2 is 100 Gb/s with 2 nodes: DDP gets faster.
  double slow = 0, fast = 0;
  for (const auto& row : doc["results"]) {
    if (row["algorithm"] != "ddp")
      continue;
    if (row["point"] == 0)
      slow = row["throughput_samples_s"].get<double>();
    if (row["point"] == 2)
      fast = row["throughput_samples_s"].get<double>();
    EXPECT_EQ(row["workers"].get<int>(), std::stoi(row["cluster.nodes"].get<std::string>()));
  }
  EXPECT_GT(fast, 1.5 * slow);
}

TEST_F(Sweep, ShardsMergeIntoTheWholeAndRunsAreDeterministic) {
  ASSERT_EQ(run(base_ + "--out " + (dir_ / "all").string()).first, 0);
  const std::string all = slurp(dir_ / "all" / "summary.json");
  ASSERT_EQ(run(base_ + "--out " + (dir_ / "all").string()).first, 0);
  EXPECT_EQ(all, slurp(dir_ / "all" / "summary.json"));
  ASSERT_EQ(run(base_ + "--shard 0/2 --out " + (dir_ / "s0").string()).first, 0);
  ASSERT_EQ(run(base_ + "--shard 1/2 --out " + (dir_ / "s1").string()).first, 0);
  const auto m = run("merge " + (dir_ / "m").string() + " " + (dir_ / "s1").string() + " " +
                     (dir_ / "s0").string());
  ASSERT_EQ(m.first, 0) << m.second;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir_ / "m" / "summary.json"))["results"],
            nlohmann::json::parse(all)["results"]);
  EXPECT_EQ(slurp(dir_ / "m" / "summary.csv"), slurp(dir_ / "all" / "summary.csv"));
  // report.md too (issue 62.3): the same bytes run after run, and merged as run whole; a shard's
  // says it holds part of the sweep.
  const std::string report = slurp(dir_ / "all" / "report.md");
  EXPECT_THAT(report, HasSubstr("4 points x 2 algorithms"));
  ASSERT_EQ(run(base_ + "--out " + (dir_ / "again").string()).first, 0);
  EXPECT_EQ(slurp(dir_ / "again" / "report.md"), report);
  EXPECT_EQ(slurp(dir_ / "m" / "report.md"), report);
  EXPECT_THAT(slurp(dir_ / "s0" / "report.md"), HasSubstr("Shard 0/2: 2 of the sweep's 4 points"));
  // A shard missing is an error.
  const auto partial = run("merge " + (dir_ / "p").string() + " " + (dir_ / "s0").string());
  EXPECT_NE(partial.first, 0);
  EXPECT_THAT(partial.second, HasSubstr("is in no shard"));
}

TEST_F(Sweep, BadKeyFailsBeforeWritingAnything) {
  const auto r = run("sweep " + (dir_ / "s.yaml").string() +
                     " --no-plots --vary cluster.gpus=1,2 --out " + (dir_ / "bad").string());
  EXPECT_NE(r.first, 0);
  EXPECT_THAT(r.second, HasSubstr("cluster.gpus"));
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
  const auto v = run("sweep " + (dir_ / "s.yaml").string() +
                     " --no-plots --vary cluster.nodes=2,zero --out " + (dir_ / "bad").string());
  EXPECT_NE(v.first, 0);
  EXPECT_THAT(v.second, HasSubstr("--set cluster.nodes"));
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

TEST_F(Sweep, BadAlgorithmAtOnePointFailsBeforeAnyPointRuns) {
  // The loader accepts any algorithm name; building the algorithms of every point up front
  // catches it before a simulation runs.
  const auto r =
      run("sweep " + (dir_ / "s.yaml").string() +
          " --no-plots --vary algorithms.1.name=acco,nosuch --out " + (dir_ / "bad").string());
  EXPECT_NE(r.first, 0);
  EXPECT_THAT(r.second, HasSubstr("point 1 (algorithms.1.name=nosuch)"));
  EXPECT_THAT(r.second, HasSubstr("unknown algorithm 'nosuch'"));
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
  const auto s = run(base_ + "--shard 2/2 --out " + (dir_ / "bad").string());
  EXPECT_NE(s.first, 0);
  EXPECT_THAT(s.second, HasSubstr("--shard '2/2'"));
  EXPECT_FALSE(fs::exists(dir_ / "bad"));
}

TEST_F(Sweep, RowsFollowPointOrderWhateverFinishesFirst) {
  // Point 0 is the slow one: with two jobs point 1 finishes first.
  const std::string args = "sweep " + (dir_ / "s.yaml").string() +
                           " --no-plots --no-progress --vary training.steps=600,3 --out ";
  ASSERT_EQ(run(args + (dir_ / "j2").string() + " --jobs 2").first, 0);
  ASSERT_EQ(run(args + (dir_ / "j1").string() + " --jobs 1").first, 0);
  const std::string j2 = slurp(dir_ / "j2" / "summary.json");
  EXPECT_EQ(j2, slurp(dir_ / "j1" / "summary.json"));
  std::vector<int> points;
  const auto doc = nlohmann::json::parse(j2);
  for (const auto& row : doc["results"])
    points.push_back(row["point"].get<int>());
  EXPECT_EQ(points, (std::vector<int>{0, 0, 1, 1}));
}

} // namespace

namespace overlapsim::cli {
namespace {

// Issue 26.9: a point whose process dies of a signal becomes one error row per algorithm, with the
// varied keys and its index, and the other points keep their rows (the sweep failed as a whole).
TEST(SweepPoints, APointKilledByASignalBecomesItsErrorRows) {
  const auto grid = sweep_grid({"training.steps=2,3,4"});
  std::vector<scenario::Scenario> scenarios;
  std::vector<const SweepPoint*> points;
  for (const auto& p : grid) {
    scenarios.push_back(scenario::load_scenario_text(kScenario, "s.yaml",
                                                     {"training.steps=" + p.values[0].second}));
    points.push_back(&p);
  }
  const PointBody body = [](const scenario::Scenario&, const SweepPoint& p) -> std::string {
    if (p.index == 1)
      ::raise(SIGKILL);
    return nlohmann::ordered_json::array(
               {{{"algorithm", "ddp"}, {"point", p.index}, {"ok", true}},
                {{"algorithm", "acco"}, {"point", p.index}, {"ok", true}}})
        .dump();
  };
  const auto rows = run_sweep_points(scenarios, points, 2, false, body);
  ASSERT_EQ(rows.size(), 3u);
  for (const int p : {0, 2}) {
    ASSERT_EQ(rows.at(p).size(), 2u);
    EXPECT_TRUE(rows.at(p)[0].value("ok", false)) << p;
    EXPECT_FALSE(rows.at(p)[0].contains("error")) << p;
  }
  ASSERT_EQ(rows.at(1).size(), 2u);
  EXPECT_EQ(rows.at(1)[0]["algorithm"], "ddp");
  EXPECT_EQ(rows.at(1)[1]["algorithm"], "acco");
  for (const auto& r : rows.at(1)) {
    EXPECT_EQ(r["training.steps"], "3");
    EXPECT_EQ(r["point"], 1);
    EXPECT_EQ(r["workers"], 2);
    EXPECT_THAT(r["error"].get<std::string>(),
                HasSubstr("point 1 (training.steps=3): the process died of signal 9 (Killed)"));
  }
}

// Every way a point's process can fail is that point's error rows, saying how; the others keep
// their rows (issue 26.9).
TEST(SweepPoints, EveryWayAPointsProcessFailsBecomesItsErrorRows) {
  const auto grid = sweep_grid({"training.steps=2,3,4,5,6,7"});
  std::vector<scenario::Scenario> scenarios;
  std::vector<const SweepPoint*> points;
  for (const auto& p : grid) {
    scenarios.push_back(scenario::load_scenario_text(kScenario, "s.yaml",
                                                     {"training.steps=" + p.values[0].second}));
    points.push_back(&p);
  }
  const auto rows_of = [](int point) {
    return nlohmann::ordered_json::array(
        {{{"algorithm", "ddp"}, {"point", point}}, {{"algorithm", "acco"}, {"point", point}}});
  };
  const PointBody body = [&](const scenario::Scenario&, const SweepPoint& p) -> std::string {
    switch (p.index) {
    case 1:
      std::abort();
    case 2:
      ::_exit(3);
    case 3:
      return "not json";
    case 4:
      return rows_of(0).dump(); // another point's rows
    case 5:
      throw std::runtime_error("no route to host");
    default:
      return rows_of(p.index).dump();
    }
  };
  const auto rows = run_sweep_points(scenarios, points, 3, false, body);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_EQ(nlohmann::ordered_json(rows.at(0)), rows_of(0));
  const std::map<int, std::string> how = {
      {1, "point 1 (training.steps=3): the process died of signal 6 (Aborted)"},
      {2, "point 2 (training.steps=4): the process ended with exit status 3"},
      {3, "point 3 (training.steps=5): the process sent an unreadable reply (not JSON): not json"},
      {4, "point 4 (training.steps=6): the process sent an unreadable reply (row 0: expected the "
          "row of point 4, ddp)"},
      {5, "point 5 (training.steps=7): no route to host"}};
  for (const auto& [point, error] : how) {
    ASSERT_EQ(rows.at(point).size(), 2u) << point;
    for (const auto& r : rows.at(point)) {
      EXPECT_EQ(r["point"], point);
      EXPECT_EQ(r["training.steps"], std::to_string(point + 2));
      EXPECT_THAT(r["error"].get<std::string>(), HasSubstr(error));
      EXPECT_FALSE(r.contains("iteration_time_s"));
    }
  }
}

// The whole command: a point killed by a signal is published as its error rows, the other points'
// rows are exactly those of a sweep where nothing died, and the exit status is 2.
TEST(SweepPoints, ASweepWithADeadPointPublishesItsRowsAndExits2) {
  const testing::ScratchDir dir;
  std::ofstream(dir / "s.yaml") << kScenario;
  SweepOptions o;
  o.scenario = (dir / "s.yaml").string();
  o.vary = {"training.steps=2,3,4"};
  o.jobs = 2;
  o.plots = false;
  o.progress = false;
  o.out = (dir / "whole").string();
  ASSERT_EQ(sweep_command(o), 0);
  o.out = (dir / "dead").string();
  const PointBody body = [](const scenario::Scenario& s, const SweepPoint& p) {
    if (p.index == 1)
      ::raise(SIGKILL);
    return simulate_point(s, p);
  };
  ASSERT_EQ(sweep_command(o, body), 2);
  const auto whole = nlohmann::json::parse(testing::slurp(dir / "whole" / "summary.json"));
  const auto dead = nlohmann::json::parse(testing::slurp(dir / "dead" / "summary.json"));
  ASSERT_EQ(whole["results"].size(), 6u);
  ASSERT_EQ(dead["results"].size(), 6u);
  for (const int i : {0, 1, 4, 5}) { // points 0 and 2, ddp and acco
    EXPECT_EQ(dead["results"][i], whole["results"][i]) << i;
    EXPECT_GT(dead["results"][i]["iteration_time_s"].get<double>(), 0) << i;
  }
  for (const int i : {2, 3}) {
    const auto& r = dead["results"][i];
    EXPECT_EQ(r["algorithm"], i == 2 ? "ddp" : "acco");
    EXPECT_EQ(r["point"], 1);
    EXPECT_EQ(r["training.steps"], "3");
    EXPECT_THAT(r["error"].get<std::string>(),
                HasSubstr("point 1 (training.steps=3): the process died of signal 9 (Killed)"));
    EXPECT_FALSE(r.contains("iteration_time_s"));
  }
  EXPECT_THAT(testing::slurp(dir / "dead" / "summary.csv"),
              HasSubstr("the process died of signal 9 (Killed)"));
}

} // namespace
} // namespace overlapsim::cli

namespace {

// Issue 26.10: merge refuses a shard given twice, an output directory that is (or holds) a shard,
// a shard of a sweep over other values, a row listed twice and metrics that are not numbers.
TEST_F(Sweep, MergeRefusesWhatWouldLoseOrMixResults) {
  const std::string sweep = "sweep " + scenario_ + " --no-plots --no-progress ";
  ASSERT_EQ(run(sweep + "--vary training.steps=2,3 --shard 0/2 --out " + out("s0")).first, 0);
  ASSERT_EQ(run(sweep + "--vary training.steps=2,3 --shard 1/2 --out " + out("s1")).first, 0);
  ASSERT_EQ(run(sweep + "--vary training.steps=4,5 --shard 1/2 --out " + out("t1")).first, 0);
  ASSERT_EQ(run("merge " + out("m") + " " + out("s0") + " " + out("s1")).first, 0);

  auto r = run("merge " + out("m2") + " " + out("s0") + " " + out("s0") + "/");
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("given twice"));
  const auto before = slurp(fs::path(out("s0")) / "summary.json");
  r = run("merge " + out("s0") + " " + out("s0") + " " + out("s1"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("is this shard; merge into a directory of its own"));
  EXPECT_EQ(slurp(fs::path(out("s0")) / "summary.json"), before);
  r = run("merge " + dir_.string() + " " + out("s0") + " " + out("s1"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("holds this shard"));
  r = run("merge " + out("m2") + " " + out("s0") + " " + out("t1"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("a shard of a different sweep than"));
  EXPECT_THAT(r.second, HasSubstr("its 'sweep.values' differs"));

  auto doc = nlohmann::json::parse(slurp(fs::path(out("s1")) / "summary.json"));
  auto twice = doc;
  twice["results"].push_back(twice["results"][0]);
  fs::create_directories(dir_ / "twice");
  std::ofstream(dir_ / "twice" / "summary.json") << twice.dump();
  r = run("merge " + out("m2") + " " + out("s0") + " " + out("twice"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("point 1, ddp is listed twice"));
  auto text = doc;
  text["results"][0]["iteration_time_s"] = "fast";
  fs::create_directories(dir_ / "text");
  std::ofstream(dir_ / "text" / "summary.json") << text.dump();
  r = run("merge " + out("m2") + " " + out("s0") + " " + out("text"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("text/summary.json: key 'results.0.iteration_time_s': expected a "
                                  "number, got \"fast\""));
  EXPECT_FALSE(fs::exists(out("m2")));
}

// Issue 27.4: the printed table carries samples per step, and an algorithm whose steps hold more
// than twice DDP's samples is named (ACCO accumulating on a slow link).
TEST_F(Sweep, ThePrintedTableShowsSamplesPerStepAndWarnsOfLargerBatches) {
  const auto r =
      run("sweep " + scenario_ +
          " --no-plots --no-progress --vary cluster.inter_node.bandwidth=100Mb/s,100Gb/s "
          "--out " +
          out("o"));
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_THAT(r.second, HasSubstr("samples/step"));
  EXPECT_THAT(r.second, ::testing::ContainsRegex("0 +100Mb/s ddp .* 4\n"));
  EXPECT_THAT(r.second, ::testing::ContainsRegex(
                            "warning: point 0, acco: [0-9]+ samples a step, [0-9.]+x DDP's 4: its "
                            "speedup is bought with a larger batch"));
  EXPECT_THAT(r.second, ::testing::Not(HasSubstr("warning: point 1")));
}

// Issue 62.1: the sweep's printed table marks a row that does not fit, as run's does. 20M x 4
// parameters in bf16 with AdamW need about 1.4 GB per GPU (DDP): a 1 GB GPU holds none.
TEST_F(Sweep, ThePrintedTableMarksWhatDoesNotFit) {
  const auto r = run("sweep " + scenario_ +
                     " --no-plots --no-progress --set algorithms=[ddp] --vary "
                     "cluster.gpu.memory=1GB,80GB --set cluster.gpu.memory_reserve=0B --out " +
                     out("o"));
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_THAT(r.second, ::testing::ContainsRegex(
                            "0 +1GB ddp .* DOES NOT FIT \\([0-9.]+ GB > 1 GB per GPU\\)\n"));
  EXPECT_THAT(r.second, ::testing::ContainsRegex("1 +80GB ddp [^\n]*[0-9]\n"));
}

// Issue 26.10: a shard whose parts merge copies have the wrong types is refused, naming the file
// and the key; nothing is written.
TEST_F(Sweep, MergeRefusesShardsWhosePartsHaveTheWrongTypes) {
  const std::string sweep = "sweep " + scenario_ + " --no-plots --no-progress ";
  ASSERT_EQ(run(sweep + "--vary training.steps=2,3 --shard 0/2 --out " + out("s0")).first, 0);
  ASSERT_EQ(run(sweep + "--vary training.steps=2,3 --shard 1/2 --out " + out("s1")).first, 0);
  const auto doc = nlohmann::json::parse(slurp(fs::path(out("s1")) / "summary.json"));
  ASSERT_FALSE(doc["results"][1].contains("error"));
  const auto refused = [&](const std::string& name, auto damage, const std::string& message) {
    auto bad = doc;
    damage(bad);
    fs::create_directories(dir_ / name);
    std::ofstream(dir_ / name / "summary.json") << bad.dump();
    const auto r = run("merge " + out("m") + " " + out("s0") + " " + out(name));
    EXPECT_EQ(r.first, 1) << name;
    EXPECT_THAT(r.second, HasSubstr(name + "/summary.json: " + message)) << name;
    EXPECT_THAT(r.second, ::testing::Not(HasSubstr("json.exception"))) << name;
  };
  using J = nlohmann::json;
  refused(
      "nested", [](J& d) { d["results"][1]["memory_breakdown"]["params"] = "2 GB"; },
      "key 'results.1.memory_breakdown.params': expected a number, got \"2 GB\"");
  refused(
      "group", [](J& d) { d["results"][1]["steady_state"] = "steady"; },
      "key 'results.1.steady_state': expected an object or list of numbers");
  refused(
      "pergpu", [](J& d) { d["results"][0]["idle_fraction_per_gpu"][1] = J::object(); },
      "key 'results.0.idle_fraction_per_gpu.1': expected a number, got {}");
  refused(
      "error", [](J& d) { d["results"][0]["error"] = 5; },
      "key 'results.0.error': expected a message, got 5");
  refused(
      "nokey", [](J& d) { d["results"][1].erase("training.steps"); },
      "key 'results.1.training.steps': expected the point's value of this varied key");
  refused(
      "vary", [](J& d) { d["sweep"]["vary"] = 5; },
      "key 'sweep.vary': expected the list of varied keys, got 5");
  refused(
      "scenario", [](J& d) { d.erase("scenario"); },
      "key 'scenario': expected the scenario (an object), got null");
  EXPECT_FALSE(fs::exists(out("m")));
  EXPECT_EQ(run("merge " + out("m") + " " + out("s0") + " " + out("s1")).first, 0);
}

} // namespace

namespace overlapsim::cli {
namespace {

using Json = nlohmann::ordered_json;

// A sweep row as summary.json holds it: point, bandwidth, algorithm, samples per second,
// speedup, samples per step, peak memory against an 80 GB GPU.
Json row(int point, const char* bandwidth, const char* algorithm, double samples_s, double speedup,
         double peak_gb) {
  return Json{
      {"net.bandwidth", bandwidth}, {"algorithm", algorithm}, {"throughput_samples_s", samples_s},
      {"speedup_vs_ddp", speedup},  {"samples_per_step", 64}, {"peak_memory_bytes", peak_gb * 1e9},
      {"gpu_memory_bytes", 80e9},   {"point", point}};
}

std::string line_of(const std::string& text, const std::string& start) {
  const auto at = text.find(start);
  return at == std::string::npos ? "" : text.substr(at, text.find('\n', at) - at);
}

TEST(SweepReport, FeasibleWinnerCrossingsAndMemory) {
  // Point 0 (1Gb/s): big is fastest (4x) but needs 90 GB of 80: the winner is fast (2x), and the
  // report names big as faster but not fitting. Point 1 (10Gb/s): big fits (79 GB) and wins.
  // Point 2 (100Gb/s): big's 70 GB is below the GPU's 80 GB, but its row says fits: false with
  // 64 GB available (the fields a summary may carry win over the comparison): fast wins at 1.5x.
  // Point 3 (400Gb/s): slow wins at 1.1x. Along the bandwidth, fast falls back to DDP between
  // 100Gb/s and 400Gb/s; slow overtakes DDP between 10Gb/s and 100Gb/s; flat never does.
  std::vector<Json> rows;
  const char* bw[] = {"1Gb/s", "10Gb/s", "100Gb/s", "400Gb/s"};
  const double fast[] = {2.0, 1.8, 1.5, 0.9}, slow[] = {0.5, 0.8, 1.2, 1.1};
  const double big[] = {4.0, 3.0, 2.5, 0.1}, big_gb[] = {90, 79, 70, 70};
  for (int p = 0; p < 4; ++p) {
    rows.push_back(row(p, bw[p], "ddp", 100, 1.0, 20));
    rows.push_back(row(p, bw[p], "fast", 100 * fast[p], fast[p], 30));
    rows.push_back(row(p, bw[p], "slow", 100 * slow[p], slow[p], 10));
    rows.push_back(row(p, bw[p], "flat", 100, 1.0, 20));
    rows.push_back(row(p, bw[p], "big", 100 * big[p], big[p], big_gb[p]));
  }
  rows[14]["fits"] = false; // point 2's big
  rows[14]["memory_available_bytes"] = 64e9;
  const Json sweep{{"vary", {"net.bandwidth"}},
                   {"values", {{"net.bandwidth", {"1Gb/s", "10Gb/s", "100Gb/s", "400Gb/s"}}}},
                   {"points", 4},
                   {"shard", "0/1"},
                   {"overrides", Json::array()}};
  const std::string md = sweep_report_markdown(Json{{"name", "toy"}}, sweep, rows);
  EXPECT_THAT(md, HasSubstr("4 points x 5 algorithms"));
  EXPECT_EQ(line_of(md, "| 0 | 1Gb/s |"),
            "| 0 | 1Gb/s | fast | 2.00x | 200 | 64 | 30 GB | big (4.00x, 90 GB) |");
  EXPECT_EQ(line_of(md, "| 1 | 10Gb/s |"), "| 1 | 10Gb/s | big | 3.00x | 300 | 64 | 79 GB | - |");
  EXPECT_EQ(line_of(md, "| 2 | 100Gb/s |"),
            "| 2 | 100Gb/s | fast | 1.50x | 150 | 64 | 30 GB | big (2.50x, 70 GB) |");
  EXPECT_EQ(line_of(md, "| 3 | 400Gb/s |"),
            "| 3 | 400Gb/s | slow | 1.10x | 110 | 64 | 10 GB | - |");
  EXPECT_EQ(
      line_of(md, "- fast:"),
      "- fast: faster than DDP from the first point, bandwidth=1Gb/s (2.00x); falls back to or "
      "below DDP between bandwidth=100Gb/s (1.50x) and bandwidth=400Gb/s (0.90x).");
  EXPECT_EQ(line_of(md, "- slow:"),
            "- slow: overtakes DDP between bandwidth=10Gb/s (0.80x) and bandwidth=100Gb/s "
            "(1.20x).");
  EXPECT_EQ(line_of(md, "- flat:"),
            "- flat: never faster than DDP here (at most 1.00x at bandwidth=1Gb/s).");
  EXPECT_EQ(line_of(md, "- ddp"), ""); // DDP is the reference, not a line
  // Memory per GPU: fit, and what does not, against the GPU's memory.
  EXPECT_EQ(line_of(md, "| 0 (net.bandwidth=1Gb/s) | 20 GB"),
            "| 0 (net.bandwidth=1Gb/s) | 20 GB (fits) | 30 GB (fits) | 10 GB (fits) | 20 GB (fits) "
            "| **90 GB > 80 GB: does not fit** |");
  EXPECT_THAT(line_of(md, "| 2 (net.bandwidth=100Gb/s) | 20 GB"),
              HasSubstr("| **70 GB > 64 GB: does not fit** |"));
}

TEST(SweepReport, FitsFieldFirstThenPeakAgainstTheGpu) {
  EXPECT_TRUE(row_fits(row(0, "x", "a", 1, 1, 80))); // equal to the GPU's memory fits
  EXPECT_FALSE(row_fits(row(0, "x", "a", 1, 1, 81)));
  auto r = row(0, "x", "a", 1, 1, 81);
  r["fits"] = true;
  EXPECT_TRUE(row_fits(r));
  r.erase("gpu_memory_bytes");
  r.erase("fits");
  EXPECT_TRUE(row_fits(r)); // no capacity known: nothing to exceed
}

} // namespace
} // namespace overlapsim::cli
