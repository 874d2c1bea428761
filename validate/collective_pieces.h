// How large the pieces are in which RealWorker runs reduce-scatter and all-gather on Gloo.
//
// Gloo in LibTorch 1.13 has no reduce-scatter, and its all-gather wants equal sizes: RealWorker
// runs both as a series of all-to-alls / all-gathers, one piece after the other, as NCCL's ring
// moves its chunks. A piece is a trade. Too large, and on a shaped link one TCP direction starves
// the other for the whole exchange (an emulated 100 Mbit/s: ZeRO-1's mlp step 510 ms with pieces
// of 4 MiB against 332 ms with 256 KiB ones). Too small, and each piece's own start (a Gloo work,
// fresh buffers: ~0.2 ms, more when a thread waits for a core) is most of its time: over loopback
// a 16 MB all-gather took 41-110 ms in 256 KiB pieces and 31-38 ms in 4 MiB ones, and ZeRO-1's
// gpt-wide step 680 ms against 420 ms. So a piece is what the link moves in about 20 ms (256 KiB
// at 100 Mbit/s, the size that held there), within [256 KiB, 4 MiB].
#pragma once

#include "validate/c10d_compat.h"

#include <chrono>
#include <cstdint>

namespace overlapsim::real {

inline constexpr double kPieceWireSeconds = 0.02;
inline constexpr std::int64_t kMinPieceBytes = 256 * 1024;
inline constexpr std::int64_t kMaxPieceBytes = 4 * 1024 * 1024;

// fp32 elements per piece for a link of `bus_bandwidth_Bps` (an all-reduce's bus bandwidth,
// nccl-tests' busbw): kPieceWireSeconds of it, clamped.
std::int64_t piece_elements_for(double bus_bandwidth_Bps);

// Measures the world group's bus bandwidth with a few 1 MiB all-reduces and returns rank 0's
// piece_elements_for it on every rank (the ranks must cut a collective into the same pieces).
// The group must be Gloo's; `timeout` bounds each wait.
std::int64_t agreed_piece_elements(CommBackend& world, int ranks,
                                   std::chrono::milliseconds timeout);

} // namespace overlapsim::real
