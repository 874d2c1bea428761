// Issue 15 through the command line: silently ignored inputs are errors (15.7), error exits name
// file and key (15.8), and a failed run leaves no outputs (15.9).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

const char* kScenario = R"(name: robust
cluster:
  nodes: 2
  gpus_per_node: 1
  gpu: a100-80gb
  inter_node: {bandwidth: 10Gb/s, latency: 5us}
model:
  layers:
    - {name: block, params: 2M, fwd_flops_per_sample: 20G, repeat: 4}
training: {micro_batch: 2, seq_len: 128, steps: 2}
algorithms: [ddp, acco]
)";

std::pair<int, std::string> run(const std::string& args) {
  FILE* p = popen((std::string(OVERLAPSIM_BINARY) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  return {WEXITSTATUS(pclose(p)), out};
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class RobustCli : public ::testing::Test {
protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("overlapsim-robust-" +
            std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
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

} // namespace
