#include "algorithms/algorithm.h"

#include "algorithms/acco.h"
#include "algorithms/asc_wfbp.h"
#include "algorithms/cdp.h"
#include "algorithms/ddp.h"
#include "algorithms/demo.h"
#include "algorithms/diloco.h"
#include "algorithms/flexdemo.h"
#include "algorithms/fsdp.h"
#include "algorithms/local_sgd.h"
#include "algorithms/streaming_diloco.h"
#include "algorithms/zero1.h"
#include "scenario/loader.h"

#include <fmt/format.h>
#include <functional>
#include <map>

namespace overlapsim {

std::string_view to_string(UpdateKind kind) {
  switch (kind) {
  case UpdateKind::synchronous:
    return "synchronous";
  case UpdateKind::local:
    return "local";
  case UpdateKind::delayed:
    return "delayed";
  }
  return "synchronous";
}

namespace {

using Factory = std::function<std::unique_ptr<Algorithm>(const scenario::AlgorithmSpec&)>;

const std::map<std::string, Factory>& registry() {
  static const std::map<std::string, Factory> factories = {
      {"ddp", make_ddp},
      {"s-sgd", make_s_sgd},
      {"zero1", make_zero1},
      {"fsdp", make_fsdp},
      {"demo", make_demo},
      {"flexdemo", make_flexdemo},
      {"dpu", make_dpu},
      {"acco-wp", make_acco_wp},
      {"acco", make_acco},
      {"cdp-v1", make_cdp_v1},
      {"cdp-v2", make_cdp_v2},
      {"local-sgd", make_local_sgd},
      {"plsgd-enp", make_plsgd_enp},
      {"dreamddp", make_dreamddp},
      {"diloco", make_diloco},
      {"streaming-diloco", make_streaming_diloco},
      {"asc-wfbp", make_asc_wfbp},
  };
  return factories;
}

} // namespace

std::unique_ptr<Algorithm> make_algorithm(const scenario::AlgorithmSpec& spec) {
  const auto it = registry().find(spec.name);
  if (it == registry().end()) {
    std::string names;
    for (const auto& n : algorithm_names())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    throw scenario::ScenarioError(
        fmt::format("{}: key 'algorithms': unknown algorithm '{}'; expected one of: {}", spec.where,
                    spec.name, names));
  }
  return it->second(spec);
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const auto& [name, factory] : registry())
    names.push_back(name);
  return names;
}

} // namespace overlapsim
