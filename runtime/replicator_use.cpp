#include "runtime/replicator_use.h"

#include <fmt/format.h>

namespace overlapsim {

ReplicatorUse replicator_use(const ReplicatorPhase& op) {
  return {op.config, op.phase, op.exchanged, op.group_size};
}

double priced_elements(const ReplicatorConfig& config, std::int64_t elements) {
  if (config.kind != ReplicatorKind::demo)
    return static_cast<double>(elements);
  const std::int64_t block = static_cast<std::int64_t>(config.chunk) * config.chunk;
  return static_cast<double>((elements + block - 1) / block * block);
}

std::string price_name(const ReplicatorUse& use) {
  const auto& c = use.config;
  const std::string what =
      fmt::format("{} {}", to_string(c.kind),
                  use.phase == ReplicatorPhase::Kind::encode ? "encode" : "decode + update");
  // Without an exchange a phase only updates the momentum and applies it: the selection's knobs
  // do not matter.
  if (!use.exchanged)
    return fmt::format("{} (no exchange{})", what, c.sign ? "" : ", no sign");
  const std::string values = c.value_bytes == 4 ? "fp32" : "16-bit";
  std::string knobs;
  switch (c.kind) {
  case ReplicatorKind::demo:
    knobs = fmt::format("chunk {}, top-k {}, {} values, ", c.chunk, c.top_k, values);
    break;
  case ReplicatorKind::random:
  case ReplicatorKind::striding:
    knobs = fmt::format("compression {:g}, {} values, ", c.compression, values);
    break;
  case ReplicatorKind::diloco:
    break;
  }
  return fmt::format("{} ({}{} ranks{})", what, knobs, use.group_size, c.sign ? "" : ", no sign");
}

} // namespace overlapsim
