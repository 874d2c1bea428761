// The algorithm descriptors (issue 28.1): each algorithm's name, options, defaults and ranges in
// one place, read by the option parser, `overlapsim algorithms`, validate and the docs.
#include "algorithms/registry.h"
#include "cli/algorithms_command.h"
#include "scenario/loader.h"
#include "test_util.h"

#include <fmt/format.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <regex>
#include <set>

namespace overlapsim {
namespace {

using ::testing::HasSubstr;

scenario::AlgorithmSpec spec_of(std::string_view name,
                                std::map<std::string, std::string> options = {}) {
  scenario::AlgorithmSpec a;
  a.name = a.label = std::string(name);
  a.where = "test.yaml:9";
  for (auto& [k, v] : options)
    a.options[k] = scenario::AlgorithmOption{v, "test.yaml:10"};
  return a;
}

TEST(AlgorithmRegistry, NamesAndColoursAreUniqueAndEveryAlgorithmBuilds) {
  std::set<std::string_view> names, colours;
  for (const auto* d : algorithm_registry()) {
    EXPECT_TRUE(names.insert(d->name).second) << d->name;
    EXPECT_TRUE(colours.insert(d->colour).second) << d->name << " " << d->colour;
    EXPECT_TRUE(std::regex_match(std::string(d->colour), std::regex("#[0-9A-F]{6}"))) << d->name;
    EXPECT_FALSE(d->summary.empty()) << d->name;
    EXPECT_FALSE(d->paper.empty()) << d->name;
    EXPECT_EQ(find_algorithm(d->name), d);
    EXPECT_EQ(make_algorithm(spec_of(d->name))->name(), d->name);
  }
  EXPECT_GE(names.size(), 17u); // the shipped ones; a new algorithm adds to them, no edit here
  EXPECT_EQ(find_algorithm("ddp2"), nullptr);
}

// Every declared default is a value the option accepts: written out explicitly, it builds.
TEST(AlgorithmRegistry, EveryDefaultIsAnAcceptedValueOfItsOption) {
  for (const auto* d : algorithm_registry())
    for (const auto& o : d->options) {
      if (o.fallback.empty())
        continue;
      const auto a = spec_of(d->name, {{std::string(o.key), std::string(o.fallback)}});
      EXPECT_NO_THROW(make_algorithm(a)) << d->name << "." << o.key << " = " << o.fallback;
      if (o.type == OptionType::choice) {
        EXPECT_NE(std::find(o.choices.begin(), o.choices.end(), o.fallback), o.choices.end());
      }
    }
}

TEST(AlgorithmRegistry, OptionsAreCheckedAgainstTheSchema) {
  const auto error = [](const scenario::AlgorithmSpec& a) {
    try {
      make_algorithm(a);
    } catch (const scenario::ScenarioError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_THAT(error(spec_of("diloco", {{"h", "5"}})),
              HasSubstr("test.yaml:10: key 'algorithms.diloco.h': unknown option of algorithm "
                        "'diloco'; expected one of: H, outer_lr, outer_momentum"));
  // The schema's range: H from 1 to 1,000,000; outer_momentum 0 to 1; choices of fsdp.sharding.
  EXPECT_THAT(error(spec_of("local-sgd", {{"H", "0"}})),
              HasSubstr("expected a whole number in [1, 1000000], got '0'"));
  EXPECT_THAT(error(spec_of("diloco", {{"outer_momentum", "1.5"}})),
              HasSubstr("expected a number in [0, 1], got '1.5'"));
  EXPECT_THAT(error(spec_of("fsdp", {{"sharding", "both"}})),
              HasSubstr("expected one of full, hybrid, got 'both'"));
  EXPECT_THAT(error(spec_of("asc-wfbp", {{"simultaneous", "65"}})),
              HasSubstr("expected a whole number in [1, 64]"));
  // Flags follow the loader's rules (scenario/value_rules.h): yes/no as output.plots takes them.
  EXPECT_EQ(error(spec_of("ddp", {{"gradient_as_bucket_view", "yes"}})), "no error");
  EXPECT_EQ(error(spec_of("ddp", {{"gradient_as_bucket_view", "off"}})), "no error");
  EXPECT_THAT(error(spec_of("ddp", {{"gradient_as_bucket_view", "maybe"}})),
              HasSubstr("key 'algorithms.ddp.gradient_as_bucket_view': expected true or false, "
                        "got 'maybe'"));
  EXPECT_THAT(error(spec_of("local-sgd", {{"H", "2.5"}})),
              HasSubstr("expected a whole number, got '2.5'"));
}

// validate's list of real algorithms is the descriptors' real_run (cli/validate_command.cpp).
TEST(AlgorithmRegistry, EveryShippedAlgorithmButAscWfbpRunsForReal) {
  for (const char* name :
       {"ddp", "s-sgd", "zero1", "fsdp", "dpu", "acco-wp", "acco", "cdp-v1", "cdp-v2", "local-sgd",
        "plsgd-enp", "dreamddp", "diloco", "streaming-diloco", "demo", "flexdemo"})
    EXPECT_TRUE(find_algorithm(name)->real_run) << name;
  EXPECT_FALSE(find_algorithm("asc-wfbp")->real_run);
}

// `overlapsim algorithms` prints each algorithm with its options, and docs/SCENARIO.md holds
// exactly what it prints.
TEST(AlgorithmRegistry, DocsAndTheCommandNameEveryAlgorithmAndOption) {
  const auto doc = testing::slurp(std::string(OVERLAPSIM_SOURCE_DIR) + "/docs/SCENARIO.md");
  const auto text = cli::algorithms_text();
  EXPECT_NE(doc.find("```text\n" + text + "```"), std::string::npos)
      << "docs/SCENARIO.md's algorithm list differs from `overlapsim algorithms`";
  const auto json = cli::algorithms_json();
  ASSERT_EQ(json.size(), algorithm_registry().size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    const auto* d = algorithm_registry()[i];
    EXPECT_EQ(json[i]["name"], d->name);
    EXPECT_EQ(json[i]["colour"], d->colour);
    EXPECT_NE(text.find(fmt::format("{}  (", d->name)), std::string::npos) << d->name;
    ASSERT_EQ(json[i]["options"].size(), d->options.size());
    for (const auto& o : d->options)
      EXPECT_NE(text.find(fmt::format("    {:<24} {}", o.key, to_string(o.type))),
                std::string::npos)
          << d->name << "." << o.key;
  }
  EXPECT_THAT(text, HasSubstr("H                        integer, default 10, 1 to 1000000"));
}

} // namespace
} // namespace overlapsim
