#include "validate/clock_origin.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <fmt/format.h>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <unistd.h>
#include <vector>

namespace overlapsim::real {
namespace {

// Round trips a rank on another host makes; the shortest one counts.
constexpr int kRoundTrips = 16;

void put(c10d::Store& store, const std::string& key, const std::string& value) {
  store.set(key, std::vector<std::uint8_t>(value.begin(), value.end()));
}

std::string take(c10d::Store& store, const std::string& key) {
  const auto bytes = store.get(key); // waits until some rank has set it
  return {bytes.begin(), bytes.end()};
}

std::string seconds(double s) {
  return fmt::format("{:.17g}", s);
}

double seconds_of(const std::string& text, const std::string& key) {
  double v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw std::runtime_error(
        fmt::format("clock origin: store key '{}' holds '{}', not a time", key, text));
  return v;
}

} // namespace

ClockSample clock_sample(double sent_s, double reply_s, double received_s) {
  return {reply_s - (sent_s + received_s) / 2, received_s - sent_s};
}

ClockOrigin agree_on_origin(c10d::Store& store, const std::string& name, int rank, int world,
                            const std::string& host, const std::function<double()>& now) {
  const auto key = [&](const std::string& what, int r) {
    return fmt::format("{}/{}/{}", name, what, r);
  };
  put(store, key("host", rank), host);
  if (rank == 0) {
    const double origin = now();
    put(store, name + "/origin", seconds(origin));
    // Answer each rank on another host, in rank order; the others wait for their turn, and the
    // round trips spent waiting are the long ones they discard.
    ClockOrigin o{origin, 0};
    for (int r = 1; r < world; ++r) {
      if (take(store, key("host", r)) == host)
        continue;
      for (int k = 0; k < kRoundTrips; ++k) {
        take(store, fmt::format("{}/ask/{}/{}", name, r, k));
        put(store, fmt::format("{}/answer/{}/{}", name, r, k), seconds(now()));
      }
      const std::string bound = key("uncertainty", r);
      o.uncertainty_s = std::max(o.uncertainty_s, seconds_of(take(store, bound), bound));
    }
    return o;
  }
  const std::string origin_key = name + "/origin";
  const double origin0 = seconds_of(take(store, origin_key), origin_key);
  if (take(store, key("host", 0)) == host)
    return {origin0, 0}; // one clock
  ClockSample best{0, std::numeric_limits<double>::infinity()};
  for (int k = 0; k < kRoundTrips; ++k) {
    const double sent = now();
    put(store, fmt::format("{}/ask/{}/{}", name, rank, k), "");
    const std::string answer = fmt::format("{}/answer/{}/{}", name, rank, k);
    const double reply = seconds_of(take(store, answer), answer);
    const ClockSample s = clock_sample(sent, reply, now());
    if (s.round_trip_s < best.round_trip_s)
      best = s;
  }
  const double uncertainty = best.round_trip_s / 2;
  put(store, key("uncertainty", rank), seconds(uncertainty));
  return {origin0 - best.offset_s, uncertainty};
}

std::string host_clock_id() {
  std::ifstream boot("/proc/sys/kernel/random/boot_id");
  std::string id;
  if (boot && std::getline(boot, id) && !id.empty())
    return "boot " + id;
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return fmt::format("host {}", name);
}

double steady_now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

} // namespace overlapsim::real
