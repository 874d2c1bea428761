// Issue 15, formats and conventions: `collective` beside nccl-tests (15.16), Chrome trace options
// and collective arguments (15.17), `presets`, `--shard-one-based` and SCENARIO.md as a contract
// that loads (15.19).
#include "test_util.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include "cli/collective_command.h"
#include "cli/presets_command.h"
#include "hw/model.h"
#include "hw/presets.h"
#include "hw/units.h"
#include "runtime/runtime.h"
#include "scenario/calibration.h"
#include "scenario/loader.h"
#include "trace/chrome_trace.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>
#include <zlib.h>

namespace {

namespace fs = std::filesystem;
using overlapsim::testing::run;
using overlapsim::testing::slurp;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kScenario = overlapsim::testing::two_node_scenario("formats", "[ddp]");

class FormatsCli : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("overlapsim-formats-" +
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

// The data rows (lines not starting with '#') split into words.
std::vector<std::vector<std::string>> rows_of(const std::string& text) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string s; words >> s;)
      w.push_back(s);
    if (!w.empty() && w[0][0] != '#')
      rows.push_back(w);
  }
  return rows;
}

TEST(CollectiveSizes, OneRuleKAndKiBArePowersOf1024KBOf1000) {
  // nccl-tests -b 1K -e 1G -f 2: 1024 B up to 1073741824 B, 21 sizes.
  const auto sizes = overlapsim::cli::parse_size_range("1K:1G");
  ASSERT_EQ(sizes.size(), 21u);
  EXPECT_EQ(sizes.front(), 1024);
  EXPECT_EQ(sizes.back(), 1073741824);
  EXPECT_EQ(overlapsim::cli::parse_size_range("1KiB:1GiB"), sizes);
  // KB and GB mean what they mean in a scenario (issue 66.4: 1GB was 2^30 here and 1e9 there):
  // 1000 B doubling up to 524.288 MB, 20 sizes.
  const auto decimal = overlapsim::cli::parse_size_range("1KB:1GB");
  ASSERT_EQ(decimal.size(), 20u);
  EXPECT_EQ(decimal.front(), 1000);
  EXPECT_EQ(decimal.back(), 524288000);
  EXPECT_EQ(overlapsim::hw::parse_size_bytes("1GB"), 1e9);
  EXPECT_EQ(overlapsim::hw::parse_size_bytes("1G"), 1073741824);
  EXPECT_EQ(overlapsim::cli::parse_size_range("8"), std::vector<double>{8});
  EXPECT_EQ(overlapsim::cli::parse_size_range("3M:8M"), (std::vector<double>{3 << 20, 6 << 20}));
  EXPECT_THROW(overlapsim::cli::parse_size_range("1KX"), std::invalid_argument);
}

TEST_F(FormatsCli, CollectivePrintsNcclTestsColumnsAndTheAverageBusBandwidth) {
  const auto r = run("collective " + scenario_ + " --op all_reduce --size 1K:1M");
  ASSERT_EQ(r.first, 0) << r.second;
  for (const char* column : {"size", "count", "type", "redop", "root", "out-of-place", "in-place",
                             "#wrong", "(elements)", "#  Rank  0", "#  Rank  1"})
    EXPECT_THAT(r.second, HasSubstr(column));
  EXPECT_THAT(r.second, HasSubstr("# Avg bus bandwidth    : "));
  const auto rows = rows_of(r.second);
  ASSERT_EQ(rows.size(), 11u);
  EXPECT_EQ(rows.front()[0], "1024");
  EXPECT_EQ(rows.back()[0], "1048576");
  for (const auto& w : rows) {
    ASSERT_GE(w.size(), 13u);
    EXPECT_EQ(std::stod(w[1]), std::stod(w[0]) / 4); // count of floats
    EXPECT_EQ(w[2], "float");
    EXPECT_EQ(w[3], "sum");
    EXPECT_EQ(w[4], "-1");
    EXPECT_EQ(w[5], w[9]); // in-place repeats out-of-place
  }
  const auto bcast = run("collective " + scenario_ + " --op broadcast --size 1MB");
  ASSERT_EQ(bcast.first, 0) << bcast.second;
  EXPECT_EQ(rows_of(bcast.second).at(0)[3], "none");
  EXPECT_EQ(rows_of(bcast.second).at(0)[4], "0");
}

TEST_F(FormatsCli, CollectiveWarnsOfAFlatRingAcrossWanSites) {
  // 3 sites of 8 one-GPU nodes, 30 ms apart: NCCL's ring crosses the WAN 2 x 23 = 46 times.
  std::ofstream(dir_ / "wan.yaml") << R"(name: wan
cluster:
  nodes: 24
  gpus_per_node: 1
  gpu: a100-80gb
  inter_node: {bandwidth: 100Gb/s, latency: 5us}
  sites: [{name: a, nodes: [0, 1, 2, 3, 4, 5, 6, 7]}, {name: b, nodes: [8, 9, 10, 11, 12, 13, 14, 15]},
          {name: c, nodes: [16, 17, 18, 19, 20, 21, 22, 23]}]
  wan: {bandwidth: 10Gb/s, latency: 30ms}
model: {preset: gpt-neo-125m}
training: {micro_batch: 1, seq_len: 128}
algorithms: [ddp]
)";
  const auto path = (dir_ / "wan.yaml").string();
  const auto ring = run("collective " + path + " --op all-reduce --size 32MB --algorithm ring");
  ASSERT_EQ(ring.first, 0) << ring.second;
  EXPECT_THAT(ring.second, HasSubstr("warning: --set cluster.collective_algorithm: key "
                                     "'cluster.collective_algorithm': a flat ring across 3 WAN "
                                     "sites pays the WAN latency (30 ms) on each of its steps"));
  const auto automatic = run("collective " + path + " --op all-reduce --size 32MB");
  ASSERT_EQ(automatic.first, 0) << automatic.second;
  EXPECT_THAT(automatic.second, Not(HasSubstr("warning:")));
}

TEST_F(FormatsCli, CollectivePrintsTheChosenAlgorithmAndProtocolPerSize) {
  // 2 nodes x 1 GPU, 10 Gb/s (1.25 GB/s) and 5 us between them; NCCL's tuner (comm/nccl_model.h).
  const auto r = run("collective " + scenario_ + " --op all-reduce --size 1K:1G");
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_THAT(r.second, HasSubstr("collectives: nccl algorithm: auto protocol: auto"));
  const auto rows = rows_of(r.second);
  ASSERT_EQ(rows.size(), 21u);
  // 1 KiB: ring/LL, 12 + 6.6 + 2 x max(5, 5) = 28.6 us, then 1024 B at 21% of 1.25 GB/s.
  EXPECT_EQ(rows.front().back(), "ring/LL");
  EXPECT_NEAR(std::stod(rows.front()[5]), 28.6 + 1024 / (0.21 * 1.25e9) * 1e6, 0.01);
  // 1 GiB: ring/Simple, 1.4 x (12 + 8.4 + 2 x max(14, 5)) = 67.76 us (NCCL 2.18+'s ring plateau
  // on sm_80 and newer), then
  // the link's 1.25 GB/s (the tree's chain would halve it).
  EXPECT_EQ(rows.back().back(), "ring/Simple");
  EXPECT_NEAR(std::stod(rows.back()[5]), 67.76 + 1073741824 / 1.25e9 * 1e6, 0.1);
  // NCCL_PROTO pinned: 1 KiB with LL128, 12 + 14 + 2 x max(8.5, 5) = 43 us + 1024 B at 92%.
  const auto pinned = run("collective " + scenario_ +
                          " --op all-reduce --size 1K --set cluster.nccl_protocol=LL128");
  ASSERT_EQ(pinned.first, 0) << pinned.second;
  EXPECT_THAT(pinned.second, HasSubstr("protocol: LL128"));
  EXPECT_EQ(rows_of(pinned.second).at(0).back(), "ring/LL128");
  EXPECT_NEAR(std::stod(rows_of(pinned.second).at(0)[5]), 43 + 1024 / (0.92 * 1.25e9) * 1e6, 0.01);
}

TEST_F(FormatsCli, CollectiveJsonIsAlwaysAList) {
  for (const std::string size : {"1MB", "1K:4K"}) {
    const auto r = run("collective " + scenario_ + " --size " + size + " --json");
    ASSERT_EQ(r.first, 0) << r.second;
    const auto doc = nlohmann::json::parse(r.second);
    ASSERT_TRUE(doc.is_array()) << size;
    EXPECT_EQ(doc.size(), size == "1MB" ? 1u : 3u);
    EXPECT_EQ(doc[0]["redop"], "sum");
    EXPECT_EQ(doc[0]["type"], "float");
  }
}

TEST_F(FormatsCli, ProfileImportsCollectivesOwnOutput) {
  const auto r = run("collective " + scenario_ + " --op all-reduce --size 1K:1G");
  ASSERT_EQ(r.first, 0) << r.second;
  std::ofstream(out("log.txt")) << r.second;
  // In-process: the fit recovers the scenario's link (10 Gb/s, 2 ranks: a ring's busbw is the
  // link).
  const auto fit = overlapsim::scenario::import_nccl_tests(r.second, "log.txt", "all_reduce", 0);
  EXPECT_EQ(fit.ranks, 2);
  EXPECT_NEAR(fit.bandwidth_Bps, 1.25e9, 0.05 * 1.25e9);
  EXPECT_EQ(fit.points.size(), 21u);
  const auto imported = run("profile --import-nccl-tests " + out("log.txt") +
                            " --op all_reduce --out " + out("profile.json"));
  EXPECT_EQ(imported.first, 0) << imported.second;
  EXPECT_TRUE(fs::exists(out("profile.json")));
}

std::string gunzip(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");
  EXPECT_NE(f, nullptr) << path;
  if (f == nullptr)
    return {};
  std::string text;
  char buf[1 << 16];
  for (int n; (n = gzread(f, buf, sizeof buf)) > 0;)
    text.append(buf, static_cast<std::size_t>(n));
  gzclose(f);
  return text;
}

TEST_F(FormatsCli, TracesGzipAndASubsetOfGpus) {
  const auto r = run("run " + scenario_ + " --no-plots --no-progress --out " + out("o") +
                     " --set output.trace_gzip=true --set 'output.trace_gpus=[1]'");
  ASSERT_EQ(r.first, 0) << r.second;
  EXPECT_FALSE(fs::exists(out("o/trace-ddp.json")));
  const auto doc = nlohmann::json::parse(gunzip(out("o/trace-ddp.json.gz")));
  int comm = 0;
  for (const auto& e : doc["traceEvents"]) {
    EXPECT_EQ(e["pid"], 1) << e.dump();
    if (e.value("cat", "") == "comm") {
      ++comm;
      EXPECT_EQ(e["args"]["group_size"], 2) << e.dump();
      EXPECT_TRUE(e["args"].contains("group")) << e.dump();
    }
  }
  EXPECT_GT(comm, 0);
  const auto summary = nlohmann::json::parse(slurp(out("o/summary.json")));
  EXPECT_EQ(summary["scenario"]["output"]["trace_gpus"], nlohmann::json::array({1}));
  for (const auto& [set, error] : std::vector<std::pair<std::string, std::string>>{
           {"[2]", "output.trace_gpus"}, {"[0, 0]", "listed twice"}, {"[]", "at least one GPU"}}) {
    const auto bad = run("run " + scenario_ + " --no-plots --out " + out("bad") +
                         " --set 'output.trace_gpus=" + set + "'");
    EXPECT_EQ(bad.first, 1) << set;
    EXPECT_THAT(bad.second, HasSubstr(error)) << set;
  }
}

TEST(ChromeTrace, CollectivesCarryGroupAndPeer) {
  using namespace overlapsim;
  Trace t;
  t.workers = 4;
  TraceEvent send;
  send.start = 0;
  send.end = 1e-3;
  send.worker = 2;
  send.stream = StreamKind::comm;
  send.category = OpCategory::comm;
  send.name = t.intern("send stage 1");
  send.group = 5;
  send.group_size = 4;
  send.peer = 3;
  t.events.push_back(send);
  const auto doc = nlohmann::json::parse(chrome_trace_json(t, "t"));
  const auto& args = doc["traceEvents"].back()["args"];
  EXPECT_EQ(args["group"], 5);
  EXPECT_EQ(args["group_size"], 4);
  EXPECT_EQ(args["peer"], 3);
  // A subset without GPU 2 drops the event and GPU 2's process.
  const auto subset = nlohmann::json::parse(chrome_trace_json(t, "t", {0, 1}));
  for (const auto& e : subset["traceEvents"])
    EXPECT_NE(e["pid"], 2);
}

TEST_F(FormatsCli, PresetsListsEveryPresetWithItsNumbers) {
  const auto r = run("presets");
  ASSERT_EQ(r.first, 0) << r.second;
  std::vector<std::string> names = overlapsim::hw::gpu_preset_names();
  for (const auto& v : {overlapsim::hw::link_preset_names(), overlapsim::hw::model_preset_names()})
    names.insert(names.end(), v.begin(), v.end());
  for (const auto& n : names)
    EXPECT_THAT(r.second, HasSubstr("  " + n + " ")) << n;
  EXPECT_THAT(r.second, HasSubstr("312.0")); // A100 bf16 TFLOP/s
  const auto json = run("presets --json");
  ASSERT_EQ(json.first, 0) << json.second;
  const auto doc = nlohmann::json::parse(json.second);
  EXPECT_EQ(doc["gpus"].size(), overlapsim::hw::gpu_preset_names().size());
  // docs/SCENARIO.md lists them as the command prints them (regenerate with `overlapsim presets`).
  const auto docs = slurp(fs::path(OVERLAPSIM_SOURCE_DIR) / "docs/SCENARIO.md");
  EXPECT_THAT(docs, HasSubstr(overlapsim::cli::presets_text()));
}

TEST_F(FormatsCli, ShardTakesSlurmOneBasedIdsWithAFlag) {
  const std::string sweep = "sweep " + scenario_ + " --no-plots --no-progress --jobs 1 " +
                            "--vary training.steps=2,3 --out " + out("o");
  const auto zero_based = run(sweep + " --shard 2/2");
  EXPECT_EQ(zero_based.first, 1);
  EXPECT_THAT(zero_based.second, HasSubstr("--shard-one-based"));
  const auto one_based = run(sweep + " --shard 2/2 --shard-one-based");
  ASSERT_EQ(one_based.first, 0) << one_based.second;
  const auto summary = nlohmann::json::parse(slurp(out("o/summary.json")));
  EXPECT_EQ(summary["sweep"]["shard"], "1/2");
  const auto bad = run(sweep + " --shard 0/2 --shard-one-based");
  EXPECT_EQ(bad.first, 1);
  EXPECT_THAT(bad.second, HasSubstr("1 <= i <= n"));
}

TEST(ScenarioDocs, EveryYamlExampleLoads) {
  const auto docs = slurp(fs::path(OVERLAPSIM_SOURCE_DIR) / "docs/SCENARIO.md");
  // Found by hand, not by a regex: libstdc++'s std::regex recurses once per character of a lazy
  // [\s\S]*? and overflowed the sanitizer build's stack on the ~6 KB scenario block.
  const std::string open = "```yaml\n", close = "```";
  int blocks = 0;
  for (auto start = docs.find(open); start != std::string::npos;
       start = docs.find(open, start + open.size())) {
    const auto body = start + open.size();
    const auto end = docs.find(close, body);
    ASSERT_NE(end, std::string::npos) << "an unclosed yaml block";
    ++blocks;
    const std::string yaml = docs.substr(body, end - body);
    try {
      overlapsim::scenario::load_scenario_text(
          yaml, "docs/SCENARIO.md yaml block " + std::to_string(blocks), {});
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what() << "\n" << yaml;
    }
  }
  EXPECT_GE(blocks, 1);
}

TEST(ScenarioDocs, TraceCategoriesAreTheOnesTracesEmit) {
  const auto docs = slurp(fs::path(OVERLAPSIM_SOURCE_DIR) / "docs/SCENARIO.md");
  const auto at = docs.find("`cat` one of ");
  ASSERT_NE(at, std::string::npos);
  const auto line_end = docs.find("and `args`", at);
  ASSERT_NE(line_end, std::string::npos);
  const std::string list = docs.substr(at, line_end - at);
  std::set<std::string> documented;
  const std::regex name("`([a-z_]+)`");
  for (std::sregex_iterator it(list.begin(), list.end(), name), end; it != end; ++it)
    if ((*it)[1] != "cat")
      documented.insert((*it)[1]);
  std::set<std::string> emitted;
  for (int c = 0; c < overlapsim::kOpCategories; ++c)
    emitted.insert(overlapsim::to_string(static_cast<overlapsim::OpCategory>(c)));
  EXPECT_EQ(documented, emitted);
}

} // namespace
