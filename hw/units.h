// Parsing and printing of the physical quantities a scenario file is written in.
//
// Sizes use powers of 1000 for B/KB/MB/GB/TB and powers of 1024 for KiB/MiB/GiB/TiB; bandwidths
// accept bits ("100Gb/s", "10Mbit/s") or bytes ("300GB/s") per second with k/M/G/T prefixes; times
// accept ns/us/ms/s (and min, h); counts accept k/M/G/T suffixes ("7.1M"). Sizes, bandwidths, times
// and compute rates need their unit: a bare number is an error (except 0); a count may be bare.
// Every parser returns SI base units as a finite double (UnitError on overflow, e.g. 1e308TB).
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace overlapsim::hw {

// Thrown on text that is not a quantity of the expected kind. what() says what was expected, e.g.
// "expected a bandwidth like 100Gb/s or 300GB/s, got '12 apples'"; callers prefix file/line/key.
class UnitError : public std::invalid_argument {
public:
  using std::invalid_argument::invalid_argument;
};

// Sizes follow one rule everywhere (scenarios, --set, --size, --max-memory; GNU coreutils'):
// KB, MB, GB, TB, PB are powers of 1000; KiB, MiB, GiB, TiB and a bare K, M, G, T (nccl-tests'
// -b/-e spelling) powers of 1024.
double parse_size_bytes(std::string_view text); // "80GB" -> 8e10, "1.5MiB" -> 1572864, "1G" -> 2^30
double parse_bandwidth_Bps(std::string_view text); // "100Gb/s" -> 1.25e10, "300GB/s" -> 3e11
double parse_time_s(std::string_view text);        // "2us" -> 2e-6, "50ms" -> 0.05
double parse_count(std::string_view text);         // "7.1M" -> 7.1e6, "14.6G" -> 1.46e10
double parse_flops_per_s(std::string_view text);   // "312TFLOPS" or "312T" -> 3.12e14

// Human-readable forms for tables and titles ("1.25 GB", "12.5 GB/s", "3.20 ms", "125.2M").
std::string format_bytes(double bytes);
std::string format_bandwidth(double bytes_per_s);
std::string format_time(double seconds);
std::string format_count(double count);

} // namespace overlapsim::hw
