// `overlapsim run` end to end: outputs, determinism, errors that leave no outputs, trace schema.
#include "test_util.h"

#include "cli/run_command.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using overlapsim::testing::slurp;
using ::testing::HasSubstr;

const char* kScenario = R"(name: cli
seed: 3
cluster:
  nodes: 2
  gpus_per_node: 2
  gpu: a100-80gb
  intra_node: nvlink3
  inter_node: omnipath-100
  jitter: {distribution: lognormal, sigma: 0.1}
model:
  layers:
    - {name: block, params: 5M, fwd_flops_per_sample: 50G, activation_bytes_per_sample: 4MB, repeat: 4}
training: {micro_batch: 2, seq_len: 128, steps: 3}
algorithms: [ddp, s-sgd]
)";

struct Run {
  int status;
  std::string output;
};

Run overlapsim(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + std::string(OVERLAPSIM_BINARY) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  const int status = pclose(p);
  return {WEXITSTATUS(status), out};
}

class CliRun : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("overlapsim-cli-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "-" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.yaml") << kScenario;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CliRun, WritesSummaryAndTracesDeterministically) {
  // The same scenario and seed twice, into the same directory: byte-identical summaries.
  const std::string cmd =
      "run " + (dir_ / "s.yaml").string() + " --out " + (dir_ / "a").string() + " --no-plots";
  const auto first = overlapsim(cmd);
  ASSERT_EQ(first.status, 0) << first.output;
  const std::string json1 = slurp(dir_ / "a" / "summary.json"),
                    csv1 = slurp(dir_ / "a" / "summary.csv");
  const auto second = overlapsim(cmd);
  ASSERT_EQ(second.status, 0) << second.output;
  EXPECT_EQ(json1, slurp(dir_ / "a" / "summary.json"));
  EXPECT_EQ(csv1, slurp(dir_ / "a" / "summary.csv"));

  const auto summary = nlohmann::json::parse(slurp(dir_ / "a" / "summary.json"));
  ASSERT_EQ(summary["results"].size(), 2u);
  for (const auto& row : summary["results"]) {
    for (const char* field :
         {"algorithm", "workers", "iteration_time_s", "throughput_samples_s", "throughput_tokens_s",
          "speedup_vs_ddp", "idle_fraction_mean", "idle_fraction_max", "exposed_comm_s",
          "comm_bytes_per_step", "peak_memory_bytes", "simulated_time_s", "measured",
          "memory_breakdown"})
      EXPECT_TRUE(row.contains(field)) << field;
    EXPECT_EQ(row["workers"], 4);
    EXPECT_EQ(row["measured"], false);
    EXPECT_DOUBLE_EQ(row["throughput_tokens_s"].get<double>(),
                     row["throughput_samples_s"].get<double>() * 128);
  }
  EXPECT_DOUBLE_EQ(summary["results"][0]["speedup_vs_ddp"].get<double>(), 1.0);
  EXPECT_EQ(summary["scenario"]["cluster"]["network_model"], "exact");

  // Chrome trace: one process per GPU named "node N gpu G", threads compute and comm, complete
  // events with the SCENARIO.md categories.
  const auto trace = nlohmann::json::parse(slurp(dir_ / "a" / "trace-ddp.json"));
  std::set<int> pids;
  std::set<std::string> process_names, thread_names, cats;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "process_name")
      process_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "M" && e["name"] == "thread_name")
      thread_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") {
      pids.insert(e["pid"].get<int>());
      cats.insert(e["cat"].get<std::string>());
      EXPECT_GE(e["dur"].get<double>(), 0);
      if (e["cat"] == "comm") {
        EXPECT_TRUE(e["args"].contains("bytes"));
      }
    }
  }
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3}));
  EXPECT_TRUE(process_names.contains("node 1 gpu 0"));
  EXPECT_EQ(thread_names, (std::set<std::string>{"compute", "comm"}));
  // copy: DDP's gradient bucket copies (gradient_as_bucket_view false, PyTorch's default).
  EXPECT_EQ(cats, (std::set<std::string>{"forward", "backward", "optimizer", "comm", "copy"}));
}

TEST_F(CliRun, BadScenarioFailsWithLocationAndWritesNothing) {
  std::string bad = kScenario;
  bad.replace(bad.find("nodes: 2"), 8, "nodes: 2\n  gpu_count: 3");
  std::ofstream(dir_ / "bad.yaml") << bad;
  const auto r =
      overlapsim("run " + (dir_ / "bad.yaml").string() + " --out " + (dir_ / "o").string());
  EXPECT_NE(r.status, 0);
  EXPECT_THAT(r.output, HasSubstr("bad.yaml:5"));
  EXPECT_THAT(r.output, HasSubstr("cluster.gpu_count"));
  EXPECT_FALSE(fs::exists(dir_ / "o"));

  const auto missing = overlapsim("run " + (dir_ / "nope.yaml").string());
  EXPECT_NE(missing.status, 0);
  EXPECT_THAT(missing.output, HasSubstr("nope.yaml"));

  const auto unknown = overlapsim("run " + (dir_ / "s.yaml").string() +
                                  " --algorithms ddp,magic --out " + (dir_ / "o").string());
  EXPECT_NE(unknown.status, 0);
  EXPECT_THAT(unknown.output, HasSubstr("unknown algorithm 'magic'"));
  EXPECT_FALSE(fs::exists(dir_ / "o"));
}

TEST_F(CliRun, DrawsPlotsAndSurvivesABrokenPlotter) {
  const auto r =
      overlapsim("run " + (dir_ / "s.yaml").string() + " --out " + (dir_ / "p").string());
  ASSERT_EQ(r.status, 0) << r.output;
  for (const char* png :
       {"timeline-ddp.png", "timeline-compare.png", "speedup.png", "memory.png"}) {
    const auto bytes = slurp(dir_ / "p" / png);
    EXPECT_GT(bytes.size(), 10000u) << png;
    EXPECT_EQ(bytes.substr(0, 4), "\x89PNG") << png;
  }
  // A plotter that fails fails the run (issue 26.8): plots are outputs like the others, so
  // nothing is published, and --no-plots is named as the way around.
  std::ofstream(dir_ / "broken.py") << "raise SystemExit(3)\n";
  const auto broken =
      overlapsim("run " + (dir_ / "s.yaml").string() + " --out " + (dir_ / "q").string(),
                 "OVERLAPSIM_PLOTS_SCRIPT=" + (dir_ / "broken.py").string() + " ");
  EXPECT_EQ(broken.status, 1) << broken.output;
  EXPECT_THAT(broken.output, HasSubstr("the plotting script exited with status 3"));
  EXPECT_THAT(broken.output, HasSubstr("--no-plots"));
  EXPECT_FALSE(fs::exists(dir_ / "q"));
}

// Issue 27.8: the default scenario compares the families a user comes for, and its report leads
// with which wins and why. Issue 27.7: --algorithms may add a registered algorithm the scenario
// does not list.
TEST_F(CliRun, TheDefaultScenarioLeadsWithTheComparison) {
  const auto r = overlapsim("run " + std::string(OVERLAPSIM_SOURCE_DIR) +
                            "/scenarios/default.yaml --no-plots --out " + (dir_ / "d").string());
  ASSERT_EQ(r.status, 0) << r.output;
  const auto doc = nlohmann::json::parse(slurp(dir_ / "d" / "summary.json"));
  std::vector<std::string> names;
  for (const auto& row : doc["results"])
    names.push_back(row["algorithm"]);
  EXPECT_EQ(names, (std::vector<std::string>{"ddp", "zero1", "fsdp", "acco", "cdp-v2", "diloco"}));
  const std::string report = slurp(dir_ / "d" / "report.md");
  const auto first_section = report.find("\n## ");
  EXPECT_EQ(report.substr(first_section, 21), "\n## Which wins here\n\n");
  EXPECT_LT(report.find("Ranked by samples per second"), report.find("## All algorithms"));
  EXPECT_THAT(report, HasSubstr("Network: nvlink3"));
  EXPECT_THAT(report, HasSubstr("acco applies gradients one round late"));
  // The algorithms differ here by more than 20%: the comparison has something to show.
  double fastest = 0, slowest = 1e300;
  for (const auto& row : doc["results"]) {
    fastest = std::max(fastest, row["speedup_vs_ddp"].get<double>());
    slowest = std::min(slowest, row["speedup_vs_ddp"].get<double>());
  }
  EXPECT_GT(fastest, 1.2 * slowest);

  const auto added = overlapsim("run " + std::string(OVERLAPSIM_SOURCE_DIR) +
                                "/scenarios/ddp-4x8-a100-gpt-neo-125m.yaml --no-plots "
                                "--algorithms ddp,acco --out " +
                                (dir_ / "a").string());
  ASSERT_EQ(added.status, 0) << added.output;
  EXPECT_THAT(added.output, ::testing::ContainsRegex("\nacco +[0-9]"));
}

TEST_F(CliRun, SeedChangesJitteredResults) {
  ASSERT_EQ(
      overlapsim("run " + (dir_ / "s.yaml").string() + " --no-plots --out " + (dir_ / "a").string())
          .status,
      0);
  ASSERT_EQ(overlapsim("run " + (dir_ / "s.yaml").string() + " --no-plots --set seed=4 --out " +
                       (dir_ / "b").string())
                .status,
            0);
  const auto a = nlohmann::json::parse(slurp(dir_ / "a" / "summary.json"));
  const auto b = nlohmann::json::parse(slurp(dir_ / "b" / "summary.json"));
  EXPECT_NE(a["results"][0]["iteration_time_s"], b["results"][0]["iteration_time_s"]);
}

// Labels longer than the default column (streaming-diloco, a user's label) keep the columns
// aligned: every row's iteration time ends where the header's "iteration" does.
TEST(CliTable, ColumnsStayAlignedPastLongLabels) {
  overlapsim::SummaryRow a, b;
  a.algorithm = "ddp";
  b.algorithm = "streaming-diloco-wide-label";
  for (auto* r : {&a, &b}) {
    r->metrics.iteration_time_s = 0.1;
    r->metrics.steps = 1;
    r->metrics.samples = 1;
  }
  const std::string table = overlapsim::cli::format_table({a, b});
  std::istringstream lines(table);
  std::string header, first, second;
  std::getline(lines, header);
  std::getline(lines, first);
  std::getline(lines, second);
  const auto end = header.find("iteration") + std::string("iteration").size();
  ASSERT_EQ(header.substr(0, b.algorithm.size() + 1), "algorithm" + std::string(19, ' '));
  EXPECT_EQ(first.substr(end - 6, 6), "100 ms") << table;
  EXPECT_EQ(second.substr(end - 6, 6), "100 ms") << table;
}

} // namespace

// A fixed schedule's micro-batches per step count per model replica: under TP2 x PP2 on 8 GPUs
// the 2 replicas each run grad_accum 4 micro-batches of 2 samples, 16 samples a step; per GPU
// (the old divisor) it read 1.
TEST(SummaryRow, MicroBatchesPerStepCountPerModelReplica) {
  overlapsim::SummaryRow row;
  row.workers = 8;
  row.model_replicas = 2;
  row.micro_batch = 2;
  row.metrics.steps = 2;
  row.metrics.samples = 32;
  const auto j = overlapsim::to_json(row);
  EXPECT_DOUBLE_EQ(j["samples_per_step"].get<double>(), 16);
  EXPECT_DOUBLE_EQ(j["micro_batches_per_step"]["mean"].get<double>(), 4);
  row.model_replicas = 0; // pure data parallelism: every worker is a replica
  EXPECT_DOUBLE_EQ(overlapsim::to_json(row)["micro_batches_per_step"]["mean"].get<double>(), 1);
}
