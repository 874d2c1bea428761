#include "algorithms/registry.h"

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

#include <algorithm>
#include <fmt/format.h>

namespace overlapsim {

const std::vector<const AlgorithmDescriptor*>& algorithm_registry() {
  static const std::vector<const AlgorithmDescriptor*> registry = {
      &ddp_descriptor(),       &s_sgd_descriptor(),     &zero1_descriptor(),
      &fsdp_descriptor(),      &dpu_descriptor(),       &acco_wp_descriptor(),
      &acco_descriptor(),      &cdp_v1_descriptor(),    &cdp_v2_descriptor(),
      &local_sgd_descriptor(), &plsgd_enp_descriptor(), &dreamddp_descriptor(),
      &asc_wfbp_descriptor(),  &diloco_descriptor(),    &streaming_diloco_descriptor(),
      &demo_descriptor(),      &flexdemo_descriptor(),
  };
  return registry;
}

const AlgorithmDescriptor* find_algorithm(std::string_view name) {
  for (const auto* d : algorithm_registry())
    if (d->name == name)
      return d;
  return nullptr;
}

std::unique_ptr<Algorithm> make_algorithm(const scenario::AlgorithmSpec& spec) {
  const auto* d = find_algorithm(spec.name);
  if (!d) {
    std::string names;
    for (const auto& n : algorithm_names())
      names += fmt::format("{}{}", names.empty() ? "" : ", ", n);
    throw scenario::ScenarioError(
        fmt::format("{}: key 'algorithms': unknown algorithm '{}'; expected one of: {}", spec.where,
                    spec.name, names));
  }
  return d->make(spec);
}

std::vector<std::string> algorithm_names() {
  std::vector<std::string> names;
  for (const auto* d : algorithm_registry())
    names.emplace_back(d->name);
  std::sort(names.begin(), names.end());
  return names;
}

} // namespace overlapsim
