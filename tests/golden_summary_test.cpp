// Golden summaries (issue 28): every shipped scenario's summary.json, simulated without plots or
// traces, equals tests/golden/<scenario>.summary.json byte for byte, so no number moves by
// accident. When one is meant to move, scripts/update-golden.sh rewrites the files and the commit
// says which numbers moved and why (tests/golden/README.md).
#include "test_util.h"
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

namespace {

namespace fs = std::filesystem;
using overlapsim::testing::ScratchDir;
using overlapsim::testing::slurp;

const fs::path kSource = OVERLAPSIM_SOURCE_DIR;

std::vector<std::string> stems(const fs::path& dir, const std::string& suffix) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string file = e.path().filename().string();
    if (file.size() > suffix.size() && file.ends_with(suffix))
      names.push_back(file.substr(0, file.size() - suffix.size()));
  }
  std::sort(names.begin(), names.end());
  return names;
}

// Up to `limit` leaves that differ, as "results[0].iteration_time_s: 0.52 -> 0.53".
void differences(const nlohmann::json& want, const nlohmann::json& got, const std::string& path,
                 std::vector<std::string>& out, std::size_t limit = 20) {
  if (out.size() >= limit || want == got)
    return;
  if (want.is_object() && got.is_object()) {
    for (auto it = want.begin(); it != want.end(); ++it)
      differences(it.value(), got.contains(it.key()) ? got[it.key()] : nlohmann::json(),
                  path + (path.empty() ? "" : ".") + it.key(), out, limit);
    for (auto it = got.begin(); it != got.end(); ++it)
      if (!want.contains(it.key()))
        out.push_back(path + "." + it.key() + ": (new) " + it.value().dump().substr(0, 80));
    return;
  }
  if (want.is_array() && got.is_array() && want.size() == got.size()) {
    for (std::size_t i = 0; i < want.size(); ++i)
      differences(want[i], got[i], path + "[" + std::to_string(i) + "]", out, limit);
    return;
  }
  out.push_back(path + ": " + want.dump().substr(0, 80) + " -> " + got.dump().substr(0, 80));
}

class GoldenSummary : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenSummary, EqualsTheCommittedFile) {
  const std::string name = GetParam();
  // Summaries above 1 MB (a 131,072-GPU job's per-GPU lists) are kept gzipped.
  const fs::path plain = kSource / "tests" / "golden" / (name + ".summary.json");
  const fs::path gzipped = fs::path(plain.string() + ".gz");
  const fs::path golden = fs::exists(gzipped) ? gzipped : plain;
  ASSERT_TRUE(fs::exists(golden)) << plain << " is missing: run scripts/update-golden.sh";
  const ScratchDir dir;
  const std::string out = (dir / name).string();
  // From the source directory, as the update script runs, so that relative paths read the same.
  const auto [status, output] = overlapsim::testing::run(
      "run scenarios/" + name + ".yaml --no-plots --no-progress --set output.traces=false --out " +
          out,
      "cd '" + kSource.string() + "' &&");
  ASSERT_TRUE(status == 0 || status == 2) << output;
  std::string got = slurp(dir / name / "summary.json");
  for (std::size_t at; (at = got.find(out)) != std::string::npos;)
    got.replace(at, out.size(), "<out>");
  std::string want;
  if (golden == gzipped) {
    int gunzip_status = 0;
    std::tie(gunzip_status, want) =
        overlapsim::testing::run_shell("gzip -dc '" + gzipped.string() + "'");
    ASSERT_EQ(gunzip_status, 0) << want;
  } else {
    want = slurp(golden);
  }
  if (got == want)
    return;
  std::vector<std::string> changed;
  differences(nlohmann::json::parse(want), nlohmann::json::parse(got), "", changed);
  std::string list;
  for (const auto& c : changed)
    list += "\n  " + c;
  ADD_FAILURE() << name << ": summary.json differs from " << golden.string()
                << " (if the change is meant, run scripts/update-golden.sh and say in the commit "
                   "which numbers moved and why); first differences:"
                << list;
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string name = info.param;
  for (char& c : name)
    if (!std::isalnum(static_cast<unsigned char>(c)))
      c = '_';
  return name;
}

INSTANTIATE_TEST_SUITE_P(ShippedScenarios, GoldenSummary,
                         ::testing::ValuesIn(stems(kSource / "scenarios", ".yaml")), test_name);

TEST(GoldenSummaries, OneFilePerShippedScenario) {
  auto goldens = stems(kSource / "tests" / "golden", ".summary.json");
  const auto gzipped = stems(kSource / "tests" / "golden", ".summary.json.gz");
  goldens.insert(goldens.end(), gzipped.begin(), gzipped.end());
  std::sort(goldens.begin(), goldens.end());
  EXPECT_EQ(goldens, stems(kSource / "scenarios", ".yaml"));
}

} // namespace
