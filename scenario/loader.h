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

// Its message never echoes more than ~200 characters of one value (issue 26.12: a 10 MB value
// came back whole on stderr): a quoted value past that is cut, with its length.
class ScenarioError : public std::runtime_error {
public:
  explicit ScenarioError(const std::string& what);
};

// `message` with every '...'-quoted run longer than `limit` characters cut to its first `limit`
// characters and "…' (N characters)", and the whole cut at 4 x limit + 1000 characters.
std::string shorten_quoted_values(const std::string& message, std::size_t limit = 200);

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
