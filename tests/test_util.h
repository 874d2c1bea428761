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
