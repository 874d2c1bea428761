// The random draws that tell one GPU's compute from another's: the jitter factor of an op and the
// sequence length of a micro-batch. One source for the simulated workers (sim/sim_worker.h) and for
// the GPUs a statistical fold draws for without simulating them (sim/slowest_of.h), so a folded run
// draws what the full simulation's GPUs draw, from the same seed.
#pragma once

#include "runtime/runtime.h"
#include "scenario/scenario.h"

#include <cstdint>
#include <random>

namespace overlapsim::sim {

// GPU `rank`'s jitter generator: seeded from (seed, rank) alone, so reruns are bit-identical and
// one GPU's draws do not depend on how many ops another GPU ran. The environment variable
// OVERLAPSIM_JITTER_SALT (a whole number; 0 or unset: none) draws other jitter for the same seed
// and the same sequence lengths: bench/orderstat_error.py measures with it how far a run moves
// with the jitter's realisation alone, what no order statistic can reproduce draw for draw.
std::mt19937_64 jitter_generator(std::uint64_t seed, int rank);

// The jitter factor of an op of `seconds` at nominal speed (cluster.jitter: lognormal with
// mu = -sigma^2 / 2, mean 1; or normal N(1, sigma) clamped to >= 0.05; 1 without jitter).
double draw_jitter(const scenario::Jitter& jitter, double seconds, std::mt19937_64& rng);

// GPU `rank`'s micro-batch `mb`: its sequence length over training.seq_len (the longest of
// seq_len_distribution.max_of draws; 1 without a distribution or outside a step).
double seq_ratio_of(const scenario::Scenario& s, int rank, MicroBatch mb);

} // namespace overlapsim::sim
