// Helpers shared by the simulator's tests: scenarios from inline YAML, one-call simulation.
#pragma once

#include "sim/sim_runtime.h"
#include "spec/loader.h"
#include "trace/metrics.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <sys/wait.h>
#include <unistd.h>
#include <utility>

namespace overlapsim::testing {

#ifdef OVERLAPSIM_BINARY
// Runs the overlapsim executable with `args`: its exit status and what it printed (both streams).
inline std::pair<int, std::string> run(const std::string& args) {
  FILE* p = popen((std::string(OVERLAPSIM_BINARY) + " " + args + " 2>&1").c_str(), "r");
  std::string out;
  char buf[4096];
  while (std::size_t n = fread(buf, 1, sizeof buf, p))
    out.append(buf, n);
  return {WEXITSTATUS(pclose(p)), out};
}
#endif

// A fresh directory for the running test, removed when it goes out of scope. Its name holds the
// test's name and this process's id: ctest runs every test in its own process, several at once,
// and two checkouts may run their suites on one machine, so a fixed /tmp name races.
class ScratchDir {
public:
  ScratchDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = info ? std::string(info->test_suite_name()) + "." + info->name() : "none";
    for (char& c : name)
      if (c == '/')
        c = '_';
    path_ = std::filesystem::temp_directory_path() /
            ("overlapsim-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

private:
  std::filesystem::path path_;
};

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The loader's error for `yaml` (with --set `overrides`), or "no error".
inline std::string error_of(const std::string& yaml,
                            const std::vector<std::string>& overrides = {}) {
  try {
    spec::load_scenario_text(yaml, "bad.yaml", overrides);
  } catch (const spec::ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

// `s` with the first `from` replaced by `to`; a test failure when `from` is absent.
inline std::string replace(std::string s, const std::string& from, const std::string& to) {
  const auto pos = s.find(from);
  EXPECT_NE(pos, std::string::npos) << from;
  return s.replace(pos, from.size(), to);
}

inline spec::Scenario scenario_from(const std::string& yaml,
                                    const std::vector<std::string>& overrides = {}) {
  return spec::load_scenario_text(yaml, "test.yaml", overrides);
}

struct Simulated {
  Trace trace;
  Metrics metrics;
};

inline Simulated simulate(const spec::Scenario& s, const std::string& algorithm,
                          std::map<std::string, std::string> options = {}) {
  spec::AlgorithmSpec a;
  a.name = a.label = algorithm;
  a.where = "test";
  for (auto& [k, v] : options)
    a.options[k] = spec::AlgorithmOption{v, "test"};
  auto result = sim::simulate(s, a);
  auto metrics = compute_metrics(result.trace, s.training.warmup_steps, s.training.steps);
  return {std::move(result.trace), std::move(metrics)};
}

} // namespace overlapsim::testing
