#include "validate/collective_pieces.h"

#include <gtest/gtest.h>
#include <limits>

namespace overlapsim::real {
namespace {

// A piece is what the link moves in 20 ms, as fp32 elements, within 256 KiB-4 MiB (by hand).
TEST(CollectivePieces, APieceIsTwentyMillisecondsOfTheLinkWithinBounds) {
  // 1 Gbit/s: 125 MB/s x 20 ms = 2.5 MB = 625,000 elements.
  EXPECT_EQ(piece_elements_for(125e6), 625000);
  // 400 Mbit/s: 50 MB/s x 20 ms = 1 MB.
  EXPECT_EQ(piece_elements_for(50e6), 250000);
  // 100 Mbit/s: 12.5 MB/s x 20 ms = 250 kB, below 256 KiB: 65,536 elements.
  EXPECT_EQ(piece_elements_for(12.5e6), 65536);
  // Loopback at 2 GB/s: 40 MB, above 4 MiB: 1,048,576 elements.
  EXPECT_EQ(piece_elements_for(2e9), 1048576);
  // Nothing measured (one rank, or a time of 0): the largest.
  EXPECT_EQ(piece_elements_for(0), 1048576);
  EXPECT_EQ(piece_elements_for(std::numeric_limits<double>::infinity()), 1048576);
}

} // namespace
} // namespace overlapsim::real
