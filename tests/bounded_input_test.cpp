// Issue 63 (items 4, 7, 8, 9): inputs a robustness campaign found crashing, hanging, printing raw
// library errors or silently accepted: each is now a refusal naming the file (and key) with exit
// status 1.
#include "scenario/calibration.h"
#include "scenario/layer_table.h"
#include "scenario/loader.h"
#include "scenario/torch_profiler_import.h"
#include "scenario/user_json.h"
#include "test_util.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sstream>
#include <tuple>
#include <vector>
#include <zlib.h>

namespace overlapsim::scenario {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using overlapsim::testing::run;
using overlapsim::testing::ScratchDir;
using overlapsim::testing::slurp;
using ::testing::HasSubstr;
using ::testing::Not;

template <class F> std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "no error";
}

std::string nested(int levels) {
  return std::string(static_cast<std::size_t>(levels), '[') +
         std::string(static_cast<std::size_t>(levels), ']');
}

TEST(BoundedJson, NestingPast64LevelsIsRefusedNamingTheFile) {
  std::uintmax_t budget = 1 << 20;
  EXPECT_NO_THROW(parse_user_json<json>(nested(64), "f.json", kSummaryFile, budget));
  for (const int levels : {65, 60000, 200000}) {
    budget = 1 << 20;
    EXPECT_THAT(
        error_of([&] { parse_user_json<json>(nested(levels), "f.json", kSummaryFile, budget); }),
        HasSubstr("f.json: nested more than 64 levels deep; expected a summary"))
        << levels;
  }
}

TEST(BoundedJson, ParsedValuesStayWithinTheBudgetSharedByFiles) {
  // A list of 1000 numbers: the list 16 + 64 bytes, each item 32.
  std::string text = "[0";
  for (int i = 1; i < 1000; ++i)
    text += ",0";
  text += "]";
  const std::uintmax_t takes = 16 + kJsonContainerBytes + 1000 * kJsonListItemBytes;
  std::uintmax_t budget = takes;
  EXPECT_EQ(parse_user_json<nlohmann::ordered_json>(text, "a.json", kSummaryFile, budget).size(),
            1000u);
  EXPECT_EQ(budget, 0u); // all of it taken: a second file has nothing left
  EXPECT_THAT(error_of([&] { parse_user_json<json>(text, "b.json", kSummaryFile, budget); }),
              HasSubstr("b.json: once parsed, its values would take more than 1024 MiB"));
  budget = takes - 1;
  EXPECT_THAT(error_of([&] { parse_user_json<json>(text, "c.json", kSummaryFile, budget); }),
              HasSubstr("c.json: once parsed"));
  // Object members and long strings cost more than list items.
  budget = 16 + kJsonContainerBytes + kJsonMemberBytes + 32 + 100 + 1 + 20;
  EXPECT_NO_THROW(parse_user_json<json>("{\"short\": \"" + std::string(100, 'x') + "\"}", "d.json",
                                        kSummaryFile, budget));
  EXPECT_EQ(budget, 20u);
}

TEST(BoundedJson, NotJsonNamesTheFile) {
  std::uintmax_t budget = 1 << 20;
  EXPECT_THAT(
      error_of([&] { parse_user_json<json>("{\"a\": [1,", "e.json", kSummaryFile, budget); }),
      HasSubstr("e.json: not valid JSON"));
}

// A shard of `sweep` to damage: the real thing, with two points.
class BoundedCli : public ::testing::Test {
protected:
  void SetUp() override {
    std::ofstream(dir_ / "s.yaml") << overlapsim::testing::two_node_scenario("bounded");
  }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }
  // A shard directory holding `text` as its summary.json.
  std::string shard(const std::string& name, const std::string& text) const {
    fs::create_directories(dir_ / name);
    std::ofstream(dir_ / name / "summary.json") << text;
    return path(name);
  }
  ScratchDir dir_;
};

TEST_F(BoundedCli, MergeRefusesADeeplyNestedShardWithoutCrashing) {
  // Issue 63.4: 200,000 levels died of SIGSEGV with nothing printed, 60,000 threw std::bad_alloc.
  for (const int levels : {60000, 200000}) {
    // Deep inside what merge copies (the scenario): the copy recursed off the stack.
    const auto r =
        run("merge " + path("m") + " " +
            shard("deep", R"({"sweep": {"vary": ["a"], "points": 1}, "scenario": {"x": )" +
                              nested(levels) + R"(}, "results": []})"));
    EXPECT_EQ(r.first, 1) << r.second;
    EXPECT_THAT(r.second, HasSubstr("deep/summary.json: nested more than 64 levels deep"));
    EXPECT_FALSE(fs::exists(path("m")));
  }
}

TEST_F(BoundedCli, MergeOutOfMemoryIsAMessageNotAnAbort) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "AddressSanitizer maps terabytes of shadow memory: no ulimit -v under it";
#endif
  // Issue 63.4: memory running out while parsing (here 20 million list items, 40 MB, within the
  // budget, under ulimit -v 400000) was "terminate called ... std::bad_alloc", signal 6.
  fs::create_directories(dir_ / "zeros");
  {
    std::ofstream f(dir_ / "zeros" / "summary.json");
    f << R"({"sweep": {"vary": ["a"], "points": 1}, "scenario": {}, "results": [{"point": 0, )"
      << R"("a": "1", "algorithm": "ddp", "idle_fraction_per_gpu": [0)";
    const std::string chunk = [] {
      std::string c;
      for (int i = 0; i < 1000000; ++i)
        c += ",0";
      return c;
    }();
    for (int i = 0; i < 20; ++i)
      f << chunk;
    f << "]}]}";
  }
  const auto r = run("merge " + path("m") + " " + path("zeros"), "ulimit -v 400000;");
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_THAT(r.second, HasSubstr("zeros/summary.json: out of memory while parsing the summary"));
  EXPECT_THAT(r.second, Not(HasSubstr("terminate")));
  EXPECT_FALSE(fs::exists(path("m")));
}

TEST_F(BoundedCli, MergeRefusesNegativeMetricsAndEmptyNames) {
  ASSERT_EQ(run("sweep " + path("s.yaml") +
                " --no-plots --no-progress --vary training.steps=2,3 --out " + path("s"))
                .first,
            0);
  auto doc = json::parse(slurp(dir_ / "s" / "summary.json"));
  doc["results"][1]["iteration_time_s"] = -0.5;
  const auto negative = run("merge " + path("m") + " " + shard("neg", doc.dump()));
  EXPECT_EQ(negative.first, 1);
  EXPECT_THAT(negative.second, HasSubstr("neg/summary.json: key 'results.1.iteration_time_s': "
                                         "expected a number of at least 0, got -0.5"));
  doc = json::parse(slurp(dir_ / "s" / "summary.json"));
  doc["results"][0]["idle_fraction_per_gpu"][1] = -1;
  EXPECT_THAT(
      run("merge " + path("m") + " " + shard("neg2", doc.dump())).second,
      HasSubstr("key 'results.0.idle_fraction_per_gpu.1': expected a number of at least 0"));
  // The untouched shard merges (the check refuses only what is wrong).
  EXPECT_EQ(run("merge " + path("m") + " " + path("s")).first, 0);
  // Issue 63.7: an empty name printed a raw "filesystem error".
  for (const std::string& args :
       std::vector<std::string>{"'' " + path("s"), path("m2") + " '' " + path("s")}) {
    const auto empty = run("merge " + args);
    EXPECT_EQ(empty.first, 1) << args;
    EXPECT_THAT(empty.second, HasSubstr("expected a path, got an empty one"));
    EXPECT_THAT(empty.second, Not(HasSubstr("filesystem error")));
  }
}

TEST_F(BoundedCli, CommandLineErrorsExitWithOne) {
  // Issue 63.8: CLI11's own codes (104-106) for what docs/SCENARIO.md calls bad input (1).
  const std::string s = path("s.yaml");
  for (const std::string& args : std::vector<std::string>{
           "collective --ranks 1e20", "profile --import-nccl-tests " + s + " --ranks 1e20",
           "collective --algorithm nvls", "sweep " + s + " --jobs abc", "merge " + path("m"),
           "run " + s + " --out ''", "frobnicate", "run " + s + " --no-such",
           "validate " + s + " --timeout -1", "profile " + s + " --timeout 0"}) {
    const auto r = run(args);
    EXPECT_EQ(r.first, 1) << args << ": " << r.second;
    EXPECT_FALSE(r.second.empty()) << args;
  }
  // Issue 63.7: checked where it is parsed, before any worker (or Gloo) sees it.
  EXPECT_THAT(run("validate " + s + " --timeout -1").second, HasSubstr("--timeout"));
  EXPECT_EQ(run("--help").first, 0);
  EXPECT_EQ(run("merge --help").first, 0);
  EXPECT_EQ(run("--version").first, 0);
}

TEST_F(BoundedCli, SetRefusesAnEmptyKey) {
  // Issue 63.9: `cluster.nodes.=1` set cluster.nodes.
  for (const std::string key : {"cluster.nodes.", "cluster..nodes", ".cluster"}) {
    const auto r =
        run("run " + path("s.yaml") + " --no-plots --set " + key + "=1 --out " + path("o"));
    EXPECT_EQ(r.first, 1) << key;
    EXPECT_THAT(r.second, HasSubstr("is empty; expected key.path=value")) << key;
  }
  EXPECT_FALSE(fs::exists(path("o")));
}

TEST(BoundedYaml, DeepNestingNamesFileLineAndDepth) {
  // Issue 63.7: past yaml-cpp's own bound, the message was "not valid YAML: bad file".
  std::string deep = "name: x\nmodel: ";
  for (int i = 0; i < 600; ++i)
    deep += "[";
  const auto e = error_of([&] { load_scenario_text(deep, "deep.yaml"); });
  EXPECT_THAT(e, HasSubstr("deep.yaml:2: nested more than 64 levels deep"));
  EXPECT_THAT(e, Not(HasSubstr("bad file")));
  // And 100 levels, within yaml-cpp's bound, as before.
  std::string hundred = "name: x\nmodel: " + std::string(100, '[') + std::string(100, ']') + "\n";
  EXPECT_THAT(error_of([&] { load_scenario_text(hundred, "h.yaml"); }),
              HasSubstr("nested more than 64 levels deep"));
}

TEST(BoundedLayerTable, AbsurdTimesAreRefusedByFileAndLine) {
  // Issue 63.7: bp_s 1e308 ran into SimGrid's "Deadlock detected" at t = inf.
  for (const std::string bad : {"1e308", "3601", "inf", "-1"})
    EXPECT_THAT(
        error_of([&] { parse_layer_table("bp_s\tcomm_s\n0.5\t0.1\n" + bad + "\t0.1\n", "t.tsv"); }),
        HasSubstr("t.tsv:3: column 'bp_s': expected a number of seconds from 0 to 3600, got '" +
                  bad + "'"));
  EXPECT_EQ(parse_layer_table("bp_s\tcomm_s\n3600\t0.1\n", "t.tsv")[0].bp_s, 3600);
}

// A calibration profile with one inter-node link fit; `link` patches it.
std::string profile(const ScratchDir& dir, const json& link) {
  json fit = {{"op", "all_reduce"},
              {"ranks", 2},
              {"latency_s", 1e-5},
              {"bandwidth_Bps", 1e10},
              {"points", json::array({{{"bytes", 1e6}, {"seconds", 1e-4}}})}};
  fit.update(link);
  const auto path = dir / "cal.json";
  std::ofstream(path)
      << json{{"schema", kCalibrationSchema}, {"links", {{"inter_node", fit}}}}.dump();
  return path.string();
}

TEST(BoundedCalibration, AbsurdNumbersAreRefusedNamingFileAndKey) {
  const ScratchDir dir;
  EXPECT_EQ(read_calibration(profile(dir, json::object())).inter_node->ranks, 2);
  // Issue 63.7: 1e30 ranks read as -2147483648, and no file named.
  EXPECT_THAT(error_of([&] {
                read_calibration(profile(dir, {{"ranks", 1e30}}));
              }),
              HasSubstr("cal.json: links.inter_node: 'ranks' must be a whole number from 0 to "
                        "1048576, found 1e+30"));
  // Issue 63.9: 1e308 B/s printed "inf TB/s per node"; negative measured times were kept.
  EXPECT_THAT(error_of([&] {
                read_calibration(profile(dir, {{"bandwidth_Bps", 1e308}}));
              }),
              HasSubstr("cal.json: links.inter_node: 'bandwidth_Bps' must be a positive number at "
                        "most 1e+15, found 1e+308"));
  EXPECT_THAT(error_of([&] {
                read_calibration(profile(
                    dir, {{"points", json::array({{{"bytes", 1e6}, {"seconds", -1e-4}}})}}));
              }),
              HasSubstr("cal.json: links.inter_node: point 1: 'seconds' must be a non-negative"));
  EXPECT_THAT(error_of([&] {
                read_calibration(profile(dir, {{"latency_s", -1}}));
              }),
              HasSubstr("'latency_s' must be a non-negative number"));
  // An nccl-tests log's negative or infinite times were fitted as measured.
  for (const std::string time : {"-156.0", "inf", "1e300"})
    EXPECT_THAT(error_of([&] {
                  import_nccl_tests("#  Rank 0\n#  Rank 1\n 1048576 262144 float sum -1 " + time +
                                        " 1 2 0 1 2 3 0\n",
                                    "log.txt", "all_reduce", 0);
                }),
                HasSubstr("log.txt:3: expected a size of 0 to 1e+18 bytes and a time of 0 to "
                          "3.6e+09 us, got '1048576' and '" +
                          time + "'"));
}

// A gzip member of `mib` MiB of `fill` bytes, streamed through zlib (never held whole).
std::string gzip_of(int mib, char fill = '\0') {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY); // 15 + 16: a gzip wrapper
  const std::string zeros(1 << 20, fill);
  std::string out;
  char buf[1 << 16];
  for (int i = 0; i <= mib; ++i) {
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(zeros.data()));
    z.avail_in = i < mib ? static_cast<uInt>(zeros.size()) : 0;
    do {
      z.next_out = reinterpret_cast<Bytef*>(buf);
      z.avail_out = sizeof buf;
      deflate(&z, i < mib ? Z_NO_FLUSH : Z_FINISH);
      out.append(buf, sizeof buf - z.avail_out);
    } while (z.avail_out == 0);
  }
  deflateEnd(&z);
  return out;
}

TEST(BoundedProfilerTrace, AGzipBombIsRefusedAtOnceNamingTheFile) {
  // Issue 63.7: 3 GB of zeros, gzip'd, was inflated whole into std::bad_alloc. 48 gzip members of
  // 64 MiB each inflate to 3 GiB from 3 MB on disk: parsed as they inflate, refused at byte 1.
  const ScratchDir dir;
  const auto path = (dir / "bomb.json.gz").string();
  {
    const std::string member = gzip_of(64);
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 48; ++i)
      out << member;
  }
  EXPECT_LT(fs::file_size(path), 8u << 20);
  std::ofstream(dir / "s.yaml") << overlapsim::testing::kKinetoScenario;
  const auto s = load_scenario((dir / "s.yaml").string());
  const auto start = std::chrono::steady_clock::now();
  EXPECT_THAT(error_of([&] { import_torch_profiler(path, s); }),
              HasSubstr("bomb.json.gz: not valid JSON"));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 2.0);
  // Through the command line: the same message, exit status 1.
  const auto r = run("profile " + (dir / "s.yaml").string() + " --import-torch-profiler " + path +
                     " --out " + (dir / "p.json").string());
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("bomb.json.gz: not valid JSON"));
  EXPECT_THAT(r.second, Not(HasSubstr("bad_alloc")));
  // Spaces, or one endless string, would be kept by the lexer: refused past 16 MiB in a row.
  for (const auto& [name, head, fill] :
       {std::tuple{"spaces.json.gz", "", ' '},
        std::tuple{"string.json.gz", "{\"traceEvents\": \"", 'a'}}) {
    const auto file = (dir / name).string();
    gzFile f = gzopen(file.c_str(), "wb");
    gzputs(f, head);
    gzclose(f);
    std::ofstream(file, std::ios::binary | std::ios::app) << gzip_of(64, fill);
    EXPECT_THAT(error_of([&] { import_torch_profiler(file, s); }),
                HasSubstr(std::string(name) +
                          ": more than 16 MiB of one string, number or "
                          "whitespace at byte " +
                          std::to_string((16 << 20) + std::string(head).size())));
  }
}

TEST(BoundedProfilerTrace, NegativeDurationsAreRefused) {
  // Issue 63.9: a kernel of -5 us was summed into its layer's time.
  const ScratchDir dir;
  const auto path = (dir / "neg.json").string();
  std::ofstream(path) << json{{"traceEvents", json::array({{{"ph", "X"},
                                                            {"cat", "kernel"},
                                                            {"name", "k"},
                                                            {"ts", 10},
                                                            {"dur", -5},
                                                            {"args", {{"correlation", 1}}}}})}}
                             .dump();
  std::ofstream(dir / "s.yaml") << overlapsim::testing::kKinetoScenario;
  const auto s = load_scenario((dir / "s.yaml").string());
  EXPECT_THAT(error_of([&] { import_torch_profiler(path, s); }),
              HasSubstr("neg.json: key 'traceEvents.0.dur' (k): expected a duration from 0 to "
                        "1e13 microseconds, got -5"));
}

} // namespace
} // namespace overlapsim::scenario
