// Issue 62: the headline a user acts on. report.md's first sentence names the winner among the
// algorithms that fit in memory (capacity less cluster.gpu.memory_reserve), ranked by time to the
// target loss when the scenario has one; every table marks what does not fit; when nothing fits
// it says what would, computed; without DDP among the algorithms it names its baseline; and its
// claims follow the numbers beside them. Every test reads what a user reads: report.md,
// summary.json and .csv, the printed table.
#include "test_util.h"

#include "cli/report.h"
#include "hw/units.h"

#include <fmt/format.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

namespace overlapsim {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

// Four layers of 25M parameters on 2 x 2 round GPUs (test_util.h): in bf16 with AdamW, DDP holds
// 2.2 GB per GPU (0.2 parameters, 0.2 gradients, 1.2 optimizer state, 0.2 bucket copies, 0.4
// activations), ZeRO-1 1.1 GB, FSDP 0.95 GB, ACCO 1.35 GB.
std::string scenario_yaml(const std::string& gpu_extra, const std::string& algorithms,
                          const std::string& training_extra = "",
                          const std::string& activation = "100MB") {
  // gpu_extra's memory, when it gives one, replaces round_cluster's 80 GB.
  std::string cluster = testing::replace(testing::round_cluster(2, 2), "hbm_bandwidth: 1TB/s}",
                                         "hbm_bandwidth: 1TB/s" + gpu_extra + "}");
  if (gpu_extra.find(", memory: ") != std::string::npos)
    cluster = testing::replace(cluster, "memory: 80GB, ", "");
  return "name: headline\n" + cluster +
         "model:\n  layers:\n    - {name: block, params: 25M, fwd_flops_per_sample: 100G, "
         "activation_bytes_per_sample: " +
         activation +
         ", repeat: 4}\n"
         "training: {micro_batch: 1, seq_len: 1, warmup_steps: 1, steps: 2, optimizer: adamw" +
         training_extra + "}\nalgorithms: " + algorithms + "\n";
}

struct Outputs {
  int status = 0;
  std::string printed, report, csv;
  nlohmann::json summary;
  // The row of `algorithm` in summary.json.
  const nlohmann::json& row(const std::string& algorithm) const {
    for (const auto& r : summary["results"])
      if (r["algorithm"] == algorithm)
        return r;
    ADD_FAILURE() << "no row " << algorithm;
    static const nlohmann::json none;
    return none;
  }
  // The first paragraph under "## Which wins here".
  std::string headline() const {
    const auto at = report.find("## Which wins here\n\n");
    if (at == std::string::npos)
      return "";
    const auto from = at + std::string("## Which wins here\n\n").size();
    return report.substr(from, report.find('\n', from) - from);
  }
};

class Headline : public ::testing::Test {
protected:
  Outputs run(const std::string& yaml, const std::string& args = "") {
    std::ofstream(dir_ / "s.yaml") << yaml;
    const std::string out = (dir_ / "o").string();
    Outputs o;
    std::tie(o.status, o.printed) =
        testing::run("run " + (dir_ / "s.yaml").string() + " --no-plots --no-progress --out " +
                     out + " " + args);
    if (o.status != 0)
      return o;
    o.report = testing::slurp(dir_ / "o" / "report.md");
    o.csv = testing::slurp(dir_ / "o" / "summary.csv");
    o.summary = nlohmann::json::parse(testing::slurp(dir_ / "o" / "summary.json"));
    return o;
  }
  testing::ScratchDir dir_;
};

// 62.1: 1.4 GB less a 100 MB reserve leaves 1.3 GB: DDP (2.2 GB) and ACCO (1.35 GB, under the
// capacity but over what is available, as ACCO at 79.8 of 80 GB) do not fit; ACCO, the fastest,
// is not named; ZeRO-1, the fastest that fits, is.
TEST_F(Headline, TheWinnerFitsAndEveryTableMarksWhatDoesNot) {
  const auto o =
      run(scenario_yaml(", memory: 1.4GB, memory_reserve: 100MB", "[ddp, zero1, fsdp, acco]"));
  ASSERT_EQ(o.status, 0) << o.printed;
  EXPECT_DOUBLE_EQ(o.row("acco")["peak_memory_bytes"].get<double>(), 1.35e9 + 16);
  EXPECT_EQ(o.row("acco")["exceeds_gpu_memory"], false); // under the capacity...
  EXPECT_EQ(o.row("acco")["fits"], false);               // ...over what is available
  EXPECT_EQ(o.row("ddp")["fits"], false);
  EXPECT_EQ(o.row("zero1")["fits"], true);
  EXPECT_EQ(o.row("fsdp")["fits"], true);
  EXPECT_DOUBLE_EQ(o.row("zero1")["memory_available_bytes"].get<double>(), 1.3e9);
  EXPECT_GT(o.row("acco")["speedup_vs_ddp"].get<double>(),
            o.row("zero1")["speedup_vs_ddp"].get<double>());

  const double zero1 = o.row("zero1")["speedup_vs_ddp"].get<double>();
  EXPECT_EQ(o.headline().substr(0, o.headline().find(". ") + 1),
            fmt::format("zero1 is the fastest of the algorithms that fit here, at {:.2f}x the "
                        "samples per second of DDP, which would be faster but does not fit.",
                        zero1));
  EXPECT_THAT(o.headline(), HasSubstr("Left out, as they need more than the 1.3 GB available per "
                                      "GPU (1.4 GB less a 100 MB reserve): ddp (2.2 GB), acco "
                                      "(1.35 GB)."));
  // report.md's tables: the ranking puts what fits first, and every table marks the others.
  EXPECT_THAT(o.report, HasSubstr("- zero1: 0.85x DDP, 4 samples a step, 1.1 GB per GPU\n- fsdp:"));
  // ACCO accumulates at most 4x DDP's micro-batches a step by default: 4 GPUs x 4 samples.
  EXPECT_THAT(o.report, HasSubstr("- acco: 1.94x DDP, 16 samples a step, does not fit: 1.35 GB per "
                                  "GPU of 1.3 GB available"));
  EXPECT_THAT(o.report, HasSubstr("| acco (does not fit) | 64.9 ms |"));
  EXPECT_THAT(o.report, HasSubstr("| 1.35 GB > 1.3 GB available |\n"));
  EXPECT_THAT(o.report,
              ::testing::ContainsRegex("\n\\| ddp \\(does not fit\\) \\| [0-9.]+ MB \\|"));
  EXPECT_THAT(o.report, HasSubstr("\n## acco (does not fit)\n"));
  EXPECT_THAT(o.report, Not(HasSubstr("| zero1 (does not fit)")));
  // The printed table, and summary.csv's columns.
  EXPECT_THAT(o.printed, ::testing::ContainsRegex("\nacco .* 1.35 GB  DOES NOT FIT \\(1.3 GB "
                                                  "available per GPU\\)\n"));
  EXPECT_THAT(o.printed, ::testing::ContainsRegex("\nzero1 .* 1.1 GB\n"));
  EXPECT_THAT(o.csv.substr(0, o.csv.find('\n')),
              HasSubstr(",exceeds_gpu_memory,fits,memory_available_bytes,update,"));
  EXPECT_THAT(o.csv, ::testing::ContainsRegex("\nacco,.*,false,false,1300000000\\.0,delayed,"));

  // The default reserve (hw::default_memory_reserve_bytes): 1 GB and 5% of an 80 GB GPU.
  const auto defaulted = run(scenario_yaml("", "[ddp]"));
  ASSERT_EQ(defaulted.status, 0) << defaulted.printed;
  EXPECT_DOUBLE_EQ(defaulted.row("ddp")["memory_available_bytes"].get<double>(), 75e9);
  EXPECT_DOUBLE_EQ(
      defaulted.summary["scenario"]["cluster"]["gpu"]["memory_reserve_bytes"].get<double>(), 5e9);
  const auto too_big = run(scenario_yaml(", memory_reserve: 80GB", "[ddp]"));
  EXPECT_NE(too_big.status, 0);
  EXPECT_THAT(too_big.printed, HasSubstr("memory_reserve"));
  EXPECT_THAT(too_big.printed, HasSubstr("expected less than the GPU's memory (80 GB)"));
}

// 62.1: when nothing listed fits, the headline says so first and what would, computed by
// simulating it: another algorithm on this cluster, FSDP on more nodes, or plainly nothing.
TEST_F(Headline, NothingFitsSaysFirstWhatWouldComputed) {
  // 1.2 GB: DDP (2.2 GB) and ACCO (1.35 GB) do not fit; ZeRO-1 (1.1 GB), not listed, would.
  const auto other = run(scenario_yaml(", memory: 1.2GB, memory_reserve: 0B", "[ddp, acco]"));
  ASSERT_EQ(other.status, 0) << other.printed;
  EXPECT_THAT(other.headline(),
              StartsWith("Nothing here fits: each custom has 1.2 GB (1.2 GB less a 0 B reserve) "
                         "for training, and the least any of these algorithms needs is acco's "
                         "1.35 GB per GPU. zero1 would fit: it shards the optimizer state, and "
                         "needs 1.1 GB per GPU on this cluster (simulated;"));
  EXPECT_THAT(other.printed, HasSubstr("nothing fits in the 1.2 GB available per GPU. zero1 would "
                                       "fit"));
  // Its number is zero1's own, as a run of it shows.
  const auto zero1 = run(scenario_yaml(", memory: 1.2GB, memory_reserve: 0B", "[zero1]"));
  ASSERT_EQ(zero1.status, 0) << zero1.printed;
  EXPECT_DOUBLE_EQ(zero1.row("zero1")["peak_memory_bytes"].get<double>(), 1.1e9);
  EXPECT_EQ(zero1.row("zero1")["fits"], true);

  // 0.9 GB: FSDP (0.95 GB on 4 GPUs) does not fit either; more GPUs shard its state further.
  const std::string tight = ", memory: 0.9GB, memory_reserve: 0B";
  const auto nodes = run(scenario_yaml(tight, "[ddp, zero1, fsdp]"));
  ASSERT_EQ(nodes.status, 0) << nodes.printed;
  std::smatch m;
  const std::string headline = nodes.headline();
  ASSERT_TRUE(std::regex_search(headline, m,
                                std::regex("FSDP would fit on ([0-9]+) nodes \\(([0-9]+) GPUs\\) "
                                           "instead of 2: it needs ([0-9.]+ MB) per GPU there "
                                           "\\(simulated; ([0-9.]+ ms) per step\\)\\.")))
      << headline;
  const int n = std::stoi(m[1]);
  EXPECT_EQ(std::stoi(m[2]), 2 * n);
  // The fewest: FSDP run on that many nodes fits, with the figure quoted; one node fewer does not.
  const auto there =
      run(scenario_yaml(tight, "[fsdp]"), "--set cluster.nodes=" + std::to_string(n));
  ASSERT_EQ(there.status, 0) << there.printed;
  EXPECT_EQ(there.row("fsdp")["fits"], true);
  EXPECT_EQ(hw::format_bytes(there.row("fsdp")["peak_memory_bytes"].get<double>()), m[3].str());
  EXPECT_EQ(hw::format_time(there.row("fsdp")["iteration_time_s"].get<double>()), m[4].str());
  const auto fewer =
      run(scenario_yaml(tight, "[fsdp]"), "--set cluster.nodes=" + std::to_string(n - 1));
  ASSERT_EQ(fewer.status, 0) << fewer.printed;
  EXPECT_EQ(fewer.row("fsdp")["fits"], false);

  // 1 GB of activations a layer: 4 GB per GPU that no sharding of the model state removes, but
  // activation checkpointing does: its figures are those of a run with it.
  const std::string big = "1GB";
  const auto ckpt = run(scenario_yaml(", memory: 2GB, memory_reserve: 0B", "[ddp, fsdp]", "", big));
  ASSERT_EQ(ckpt.status, 0) << ckpt.printed;
  const auto with = run(scenario_yaml(", memory: 2GB, memory_reserve: 0B", "[ddp, fsdp]", "", big),
                        "--set model.activation_checkpointing=full");
  ASSERT_EQ(with.status, 0) << with.printed;
  EXPECT_EQ(with.row("fsdp")["fits"], true);
  EXPECT_THAT(ckpt.headline(),
              HasSubstr(fmt::format(
                  "the least any of these algorithms needs is fsdp's 4.55 GB per GPU. FSDP with "
                  "activation checkpointing (model.activation_checkpointing: full) would fit: it "
                  "needs {} per GPU on this cluster (simulated; {} per step, {:.2f}x DDP's samples "
                  "per second). The figures below are what each would do with enough memory.",
                  hw::format_bytes(with.row("fsdp")["peak_memory_bytes"].get<double>()),
                  hw::format_time(with.row("fsdp")["iteration_time_s"].get<double>()),
                  with.row("fsdp")["throughput_samples_s"].get<double>() /
                      ckpt.row("ddp")["throughput_samples_s"].get<double>())));
  // 900 MB: under checkpointing FSDP still keeps 1 GB that more GPUs do not shrink.
  const auto none =
      run(scenario_yaml(", memory: 0.9GB, memory_reserve: 0B", "[ddp, fsdp]", "", big));
  ASSERT_EQ(none.status, 0) << none.printed;
  EXPECT_THAT(none.headline(),
              HasSubstr("Not even FSDP fits on any number of GPUs: sharding its parameters, "
                        "gradients and optimizer state over more GPUs leaves 4 GB per GPU of "
                        "activations and buffers (1 GB with activation checkpointing "
                        "(model.activation_checkpointing: full)), more than the 900 MB available. "
                        "Nothing overlapsim computed here fits."));
}

// 62.2: with a target loss the headline names the fastest to it among those that fit and reach
// it, however fast the others' steps, and says apart which have no curve and which never get
// there.
TEST_F(Headline, RanksByTimeToTheTargetAmongWhatFits) {
  std::ofstream(dir_ / "curves.csv") << "algorithm,samples,loss\n"
                                        "ddp,0,6\nddp,100,4\nddp,200,2\n"
                                        "zero1,0,6\nzero1,100,4\nzero1,200,2\n"
                                        "diloco,0,6\ndiloco,200,3.5\n";
  const std::string algorithms = "[ddp, zero1, {name: diloco, H: 2}, {name: local-sgd, H: 2}]";
  const auto o = run(scenario_yaml("", algorithms, ", target_loss: 3, loss_curve: curves.csv"));
  ASSERT_EQ(o.status, 0) << o.printed;
  // DiLoCo's steps are the fastest; only DDP and ZeRO-1 reach the target, DDP first.
  EXPECT_GT(o.row("diloco")["speedup_vs_ddp"].get<double>(), 1);
  const double ddp = o.row("ddp")["time_to_target"]["time_s"].get<double>();
  const double zero1 = o.row("zero1")["time_to_target"]["time_s"].get<double>();
  ASSERT_LT(ddp, zero1);
  EXPECT_EQ(o.headline(),
            fmt::format("ddp reaches loss 3 first: in {} (150 samples at {:.4g} samples per "
                        "second), {:.2f}x sooner than the next, zero1 ({}). diloco's curve never "
                        "reaches 3 (its lowest loss is 3.5).",
                        hw::format_time(ddp), o.row("ddp")["throughput_samples_s"].get<double>(),
                        zero1 / ddp, hw::format_time(zero1)));
  EXPECT_THAT(o.report, HasSubstr("\nWarning: no loss curve for local-sgd in training.loss_curve: "
                                  "its time to loss 3 is unknown, and it is not ranked.\n"));
  EXPECT_THAT(o.printed, HasSubstr("warning: no loss curve for local-sgd in training.loss_curve"));

  // DDP does not fit in 1.5 GB (no reserve): ZeRO-1 leads, and DDP is left out.
  const auto tight = run(scenario_yaml(", memory: 1.5GB, memory_reserve: 0B", algorithms,
                                       ", target_loss: 3, loss_curve: curves.csv"));
  ASSERT_EQ(tight.status, 0) << tight.printed;
  EXPECT_THAT(tight.headline(),
              StartsWith("zero1 reaches loss 3 first of the algorithms that fit: in " +
                         hw::format_time(zero1)));
  EXPECT_THAT(tight.headline(), HasSubstr("Left out, as they need more than the 1.5 GB available "
                                          "per GPU (1.5 GB less a 0 B reserve): ddp (2.2 GB)"));
  EXPECT_THAT(tight.report, HasSubstr("- ddp: " + hw::format_time(ddp) +
                                      " (does not fit: 2.2 GB per GPU of 1.5 GB available)"));
}

// 62.10: without DDP among the algorithms, the headline compares against DDP simulated as the
// baseline, says so, and still names the fastest of those run.
TEST_F(Headline, WithoutDdpTheBaselineIsDdpSimulatedAndNamed) {
  const auto slower = run(scenario_yaml("", "[ddp, zero1, fsdp, acco]"), "--algorithms zero1,fsdp");
  ASSERT_EQ(slower.status, 0) << slower.printed;
  EXPECT_EQ(slower.summary["results"].size(), 2u); // the baseline is not a row
  EXPECT_THAT(slower.headline(),
              StartsWith(fmt::format("zero1 is the fastest of the algorithms run here, at {:.2f}x "
                                     "the samples per second of DDP, which is faster. DDP is not "
                                     "among the algorithms run: it was simulated as the baseline, "
                                     "and is not ranked. DDP's GPUs sit idle",
                                     slower.row("zero1")["speedup_vs_ddp"].get<double>())));
  EXPECT_THAT(slower.report, Not(HasSubstr("Add ddp to the algorithms")));

  const auto faster = run(scenario_yaml("", "[ddp, zero1, fsdp, acco]"), "--algorithms zero1,acco");
  ASSERT_EQ(faster.status, 0) << faster.printed;
  EXPECT_THAT(faster.headline(),
              StartsWith(fmt::format("acco is the fastest here: {:.2f}x the samples per second of "
                                     "DDP. DDP is not among the algorithms run: it was simulated "
                                     "as the baseline",
                                     faster.row("acco")["speedup_vs_ddp"].get<double>())));
}

// 62.8: numbers read as numbers: "1 node", no line for a link the job does not use (one node
// read "custom (0 B/s ...)"), and a preset whose shape was changed says so.
TEST_F(Headline, TheHeaderSaysWhatRan) {
  const auto o = run("name: one\ncluster: {nodes: 1, gpus_per_node: 2, gpu: h100-sxm, intra_node: "
                     "nvlink4}\nmodel: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, "
                     "seq_len: 128, steps: 2}\nalgorithms: [ddp]\n",
                     "--set model.n_layers=2");
  ASSERT_EQ(o.status, 0) << o.printed;
  EXPECT_THAT(o.report, HasSubstr("\n2 GPUs (1 node x 2 h100-sxm), model gpt-neo-125m with its "
                                  "shape overridden (54.34M parameters; the preset has 125.2M), "));
  EXPECT_THAT(o.report, HasSubstr("\nNetwork: nvlink4 (360 GB/s per direction, 1 us latency) per "
                                  "GPU inside a node.\n"));
  EXPECT_THAT(o.printed, HasSubstr("\nnetwork: nvlink4 (360 GB/s per direction, 1 us latency) per "
                                   "GPU inside a node\n"));
  const auto preset = run("name: one\ncluster: {nodes: 1, gpus_per_node: 1, gpu: h100-sxm}\n"
                          "model: {preset: gpt-neo-125m}\ntraining: {micro_batch: 1, seq_len: "
                          "128, steps: 2}\nalgorithms: [ddp]\n");
  ASSERT_EQ(preset.status, 0) << preset.printed;
  EXPECT_THAT(preset.report, HasSubstr("\n1 GPU (1 node x 1 h100-sxm), model gpt-neo-125m (125.2M "
                                       "parameters), "));
  EXPECT_THAT(preset.report, HasSubstr("\nNetwork: none (one GPU).\n"));
}

// 62.6: "almost never idle" only where the idle share is under 1% and under half the baseline's;
// otherwise the share itself.
TEST(HeadlineClaims, IdleClaimsFollowTheNumbers) {
  const auto row = [](const std::string& name, double throughput, double idle) {
    SummaryRow r;
    r.algorithm = name;
    r.metrics.throughput_samples_s = throughput;
    r.metrics.samples = 8;
    r.metrics.steps = 2;
    r.metrics.iteration_time_s = 8 / throughput / 2;
    r.speedup_vs_ddp = throughput / 100;
    r.extra["idle_breakdown"] = {
        {"compute", 1 - idle}, {"exposed_comm", idle}, {"waiting", 0.0}, {"idle_other", 0.0}};
    r.extra["critical_path"] = {{"length_s", 0.04},
                                {"busy_s", 0.04},
                                {"by_category", nlohmann::ordered_json::object()},
                                {"top", nlohmann::ordered_json::array()}};
    return r;
  };
  const auto s =
      testing::scenario_from("name: claims\n" + testing::round_cluster(1) + testing::kFourBlocks +
                             "training: {micro_batch: 4, seq_len: 1, steps: 2}\n"
                             "algorithms: [ddp]\n");
  // The issue's case: 0.9% beside DDP's 0.7% is not "almost never idle".
  const auto close = cli::report_markdown(s, {row("ddp", 100, 0.007), row("diloco", 103, 0.009)});
  EXPECT_THAT(close, HasSubstr("DDP's GPUs sit idle 0.7% of the time (0.7% with their own data on "
                               "the wire, 0.0% waiting for slower peers); diloco's GPUs are idle "
                               "0.9%."));
  EXPECT_THAT(close, Not(HasSubstr("almost never idle")));
  const auto far = cli::report_markdown(s, {row("ddp", 100, 0.2), row("diloco", 150, 0.005)});
  EXPECT_THAT(far, HasSubstr("diloco's GPUs are almost never idle (0.5%): communication runs "
                             "while they keep computing."));
  // Idle under half DDP's but above 1%: the number, no adjective.
  const auto mid = cli::report_markdown(s, {row("ddp", 100, 0.2), row("diloco", 150, 0.05)});
  EXPECT_THAT(mid, HasSubstr("diloco's GPUs are idle 5.0%."));
  // DDP fastest: "little communication left to hide" only when it computes 90% of the time.
  EXPECT_THAT(cli::report_markdown(s, {row("ddp", 100, 0.05), row("diloco", 90, 0.01)}),
              HasSubstr("DDP is the fastest here: its GPUs compute 95.0% of the time, so there is "
                        "little communication left to hide."));
  EXPECT_THAT(cli::report_markdown(s, {row("ddp", 100, 0.3), row("diloco", 90, 0.01)}),
              HasSubstr("DDP is the fastest here: its GPUs compute 70.0% of the time.\n"));
}

// 62.6: README and scenarios/default.yaml quote the share of each step DDP exposes on the default
// scenario: the figure report.md gives.
TEST_F(Headline, TheDefaultScenarioDocsQuoteTheReportsShare) {
  const auto [status, printed] = testing::run(
      "run " + std::string(OVERLAPSIM_SOURCE_DIR) +
      "/scenarios/default.yaml --no-plots --no-progress --out " + (dir_ / "d").string());
  ASSERT_EQ(status, 0) << printed;
  const std::string report = testing::slurp(dir_ / "d" / "report.md");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(report, m,
                                std::regex("\n\\| ddp \\| [^|]+\\| [^|]+\\| [^|]+\\| "
                                           "[^|]+\\| ([0-9.]+%) \\(([^/]+)/step\\)")))
      << report;
  const std::string claim = "DDP exposes " + m[1].str() + " of each step (" + m[2].str();
  const fs::path src = OVERLAPSIM_SOURCE_DIR;
  EXPECT_THAT(testing::slurp(src / "README.md"), HasSubstr(claim));
  std::string yaml = testing::slurp(src / "scenarios" / "default.yaml");
  yaml = std::regex_replace(yaml, std::regex("\n#\\s+"), " ");
  EXPECT_THAT(yaml, HasSubstr(claim));
}

} // namespace
} // namespace overlapsim

namespace overlapsim {
namespace {

// 62.5: DiLoCo's outer sync lasts far longer than a step; the critical path of one average step
// holds only its share, and the report says so beside the figure, with the op's whole length.
TEST_F(Headline, AnOpLongerThanAStepIsSaidToBeAmortised) {
  const auto o = run(scenario_yaml("", "[ddp, {name: diloco, H: 4}]"),
                     "--set training.steps=8 --set cluster.inter_node.bandwidth=100MB/s");
  ASSERT_EQ(o.status, 0) << o.printed;
  const auto& cp = o.row("diloco")["critical_path"];
  double longest = 0;
  for (const auto& op : cp["top"])
    longest = std::max(longest, op["op_seconds"].get<double>());
  ASSERT_GT(longest, 2 * cp["length_s"].get<double>()); // the sync outlasts a step
  const auto section = o.report.substr(o.report.find("\n## diloco\n"));
  EXPECT_THAT(section, HasSubstr("the window is one average step, and ops longer than a step "
                                 "count only their share of it (amortised, below)"));
  EXPECT_THAT(section, HasSubstr(fmt::format("amortised: the op lasts {} in the trace",
                                             hw::format_time(longest))));
  // DDP's ops all fit in its step: nothing said.
  const auto ddp = o.report.substr(o.report.find("\n## ddp\n"), section.size());
  EXPECT_THAT(ddp.substr(0, ddp.find("\n## ", 1)), Not(HasSubstr("amortised")));
}

} // namespace
} // namespace overlapsim
