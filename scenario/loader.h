// Reading scenario files: YAML (yaml-cpp) into scenario::Scenario, with the error rules of
// SCENARIO.md. Every error names the file, the line, the key and what was expected; nothing is
// guessed.
#pragma once

#include "scenario/scenario.h"

#include <nlohmann/json_fwd.hpp>
#include <stdexcept>
#include <string>
#include <vector>

namespace overlapsim::scenario {

class ScenarioError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

// `overrides` are "key.path=value" strings (the CLI's --set); each value is parsed as YAML, so
// "cluster.nodes=8", "cluster.inter_node.bandwidth=10Gb/s" and
// "cluster.stragglers=[{gpu: 3, slowdown: 4}]" all work. Sequence items are addressed by index
// ("algorithms.1.H=10").
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {});
Scenario load_scenario_text(const std::string& yaml, const std::string& name_for_errors,
                            const std::vector<std::string>& overrides = {});

// The resolved inputs, as written into summary.json's "scenario" field.
nlohmann::json to_json(const Scenario& scenario);

} // namespace overlapsim::scenario
