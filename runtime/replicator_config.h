// What a DeToNATION replicator is configured with (DeToNATION paper, Sec. 3 "Replication
// Schemes"; DeMo, Peng, Quesnelle and Kingma 2024): the scheme, its compression and DeMo-SGD's
// knobs. Shared by the algorithms that use a replicator (algorithms/replicator.h) and by the
// runtimes that run its phases (runtime.h, ReplicatorPhase).
#pragma once

#include <compare>
#include <cstdint>

namespace overlapsim {

enum class ReplicatorKind : std::uint8_t { demo, random, striding, diloco };

const char* to_string(ReplicatorKind kind);

struct ReplicatorConfig {
  ReplicatorKind kind = ReplicatorKind::demo;
  // DCT blocks of chunk x chunk elements of the flat momentum (demo).
  int chunk = 64;
  // Coefficients kept per block (demo): compression = top_k / chunk^2.
  int top_k = 32;
  // The paper's compression rate: the fraction of the momentum's elements selected per step
  // (random, striding; demo: top_k / chunk^2). diloco: a full synchronisation every
  // round(1 / compression) steps, the local gradient in between.
  double compression = 1.0 / 16;
  // Decoupled momentum decay: m <- decay m + g (DeToNATION's compression_decay, 0.999).
  double decay = 0.999;
  bool sign = true;        // DeMo-SGD applies sign(Q)
  double value_bytes = 4;  // value_dtype on the wire: fp32 (Appendix B: full precision trains best)
  std::uint64_t seed = 42; // random: the seed every replica draws the same indices from

  // Elements selected from a piece of `elements` on a step that exchanges.
  std::int64_t selected(std::int64_t elements) const;
  // Whether step `step` (0-based) exchanges anything (diloco: every n-th step only).
  bool exchanges(int step) const;

  friend auto operator<=>(const ReplicatorConfig&, const ReplicatorConfig&) = default;
};

} // namespace overlapsim
