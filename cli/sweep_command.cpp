#include "cli/sweep_command.h"

#include "cli/plots.h"
#include "cli/run_command.h"
#include "sim/child_process.h"
#include "spec/loader.h"
#include "trace/summary.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <unistd.h>

namespace overlapsim::cli {

namespace {

using nlohmann::ordered_json;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string part; std::getline(ss, part, sep);)
    out.push_back(part);
  return out;
}

std::vector<std::string> point_overrides(const SweepOptions& o, const SweepPoint& p) {
  auto overrides = o.overrides;
  for (const auto& [key, value] : p.values)
    overrides.push_back(key + "=" + value);
  return overrides;
}

// The rows of one point, with the varied keys as their first columns.
std::vector<ordered_json> point_rows(const spec::Scenario& scenario, const SweepPoint& p) {
  std::vector<ordered_json> rows;
  for (const auto& row : simulate_rows(scenario, /*progress=*/false)) {
    ordered_json j;
    for (const auto& [key, value] : p.values)
      j[key] = value;
    const ordered_json full = to_json(row);
    for (auto it = full.begin(); it != full.end(); ++it)
      j[it.key()] = it.value();
    j["point"] = p.index;
    rows.push_back(std::move(j));
  }
  return rows;
}

// A point running in a child process; its rows come back as JSON.
struct Child {
  sim::ChildProcess process;
  const SweepPoint* point;
};

Child spawn(const spec::Scenario& scenario, const SweepPoint& p) {
  return Child{sim::ChildProcess([&] { return ordered_json(point_rows(scenario, p)).dump(); }), &p};
}

std::vector<ordered_json> collect(Child& c) {
  std::string where;
  for (const auto& [k, v] : c.point->values)
    where += fmt::format("{}{}={}", where.empty() ? "" : " ", k, v);
  std::string reply;
  try {
    reply = c.process.collect();
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(fmt::format("point {} ({}): {}", c.point->index, where, e.what()));
  }
  std::vector<ordered_json> rows;
  for (auto& r : ordered_json::parse(reply))
    rows.push_back(std::move(r));
  return rows;
}

void progress_line(std::size_t done, std::size_t total, double elapsed, bool final) {
  static double last = -10;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  if (!final && !tty && elapsed - last < 5)
    return;
  last = elapsed;
  const double eta =
      done ? elapsed * static_cast<double>(total - done) / static_cast<double>(done) : 0;
  const int width = 30;
  const int filled = total ? static_cast<int>(width * done / total) : width;
  std::fprintf(stderr, "%s[%s%s] %zu/%zu points, %.1f s elapsed, ~%.0f s left%s", tty ? "\r" : "",
               std::string(static_cast<std::size_t>(filled), '#').c_str(),
               std::string(static_cast<std::size_t>(width - filled), '.').c_str(), done, total,
               elapsed, eta, tty && !final ? "" : "\n");
  std::fflush(stderr);
}

} // namespace

std::vector<SweepPoint> sweep_grid(const std::vector<std::string>& vary) {
  std::vector<std::pair<std::string, std::vector<std::string>>> axes;
  for (const auto& v : vary) {
    const auto eq = v.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == v.size())
      throw std::invalid_argument(fmt::format("--vary '{}': expected key.path=v1,v2,...", v));
    axes.emplace_back(v.substr(0, eq), split(v.substr(eq + 1), ','));
    for (const auto& value : axes.back().second)
      if (value.empty())
        throw std::invalid_argument(fmt::format("--vary '{}': empty value in the list", v));
  }
  std::vector<SweepPoint> grid(1);
  for (const auto& [key, values] : axes) {
    std::vector<SweepPoint> next;
    for (const auto& p : grid)
      for (const auto& value : values) {
        SweepPoint q = p;
        q.values.emplace_back(key, value);
        next.push_back(std::move(q));
      }
    grid = std::move(next);
  }
  for (std::size_t i = 0; i < grid.size(); ++i)
    grid[i].index = static_cast<int>(i);
  return grid;
}

int sweep_command(const SweepOptions& o) {
  try {
    if (o.vary.empty())
      throw std::invalid_argument("expected at least one --vary key.path=v1,v2,...");
    const auto grid = sweep_grid(o.vary);
    int shard = 0, shards = 1;
    if (!o.shard.empty()) {
      const auto parts = split(o.shard, '/');
      if (parts.size() != 2 || std::sscanf(o.shard.c_str(), "%d/%d", &shard, &shards) != 2 ||
          shards < 1 || shard < 0 || shard >= shards)
        throw std::invalid_argument(
            fmt::format("--shard '{}': expected i/n with 0 <= i < n", o.shard));
    }
    // Every point is loaded before anything runs: a bad key or value fails the whole sweep early.
    const auto base = spec::load_scenario(o.scenario, o.overrides);
    std::vector<const SweepPoint*> mine;
    std::vector<spec::Scenario> scenarios;
    for (const auto& p : grid) {
      auto s = spec::load_scenario(o.scenario, point_overrides(o, p));
      if (p.index % shards != shard)
        continue;
      s.output.traces = false;
      mine.push_back(&p);
      scenarios.push_back(std::move(s));
    }
    const std::string dir = o.out.empty() ? base.output.dir : o.out;
    const std::size_t jobs = static_cast<std::size_t>(
        o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency()));
    const auto start = std::chrono::steady_clock::now();
    std::map<int, std::vector<ordered_json>> by_point;
    std::deque<Child> running;
    std::size_t next = 0;
    auto elapsed = [&] {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    };
    while (next < mine.size() || !running.empty()) {
      while (next < mine.size() && running.size() < jobs) {
        running.push_back(spawn(scenarios[next], *mine[next]));
        ++next;
      }
      // The oldest child first: replies are small, and points take similar times.
      Child c = std::move(running.front());
      running.pop_front();
      try {
        by_point[c.point->index] = collect(c);
      } catch (...) {
        running.clear(); // the other points' children are killed
        throw;
      }
      if (o.progress)
        progress_line(by_point.size(), mine.size(), elapsed(), by_point.size() == mine.size());
    }
    std::vector<ordered_json> rows;
    for (auto& [index, point_rows_] : by_point)
      for (auto& r : point_rows_)
        rows.push_back(std::move(r));
    std::vector<std::string> keys;
    for (const auto& [key, value] : grid.front().values)
      keys.push_back(key);
    ordered_json top;
    top["sweep"] = {{"vary", keys},
                    {"points", grid.size()},
                    {"shard", fmt::format("{}/{}", shard, shards)},
                    {"overrides", o.overrides}};
    write_summary(dir, spec::to_json(base), rows, top);
    if (o.plots && base.output.plots && shards == 1)
      draw_plots(dir);
    std::printf("%zu points x %zu algorithms: outputs in %s\n", mine.size(), base.algorithms.size(),
                dir.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlapsim sweep: %s\n", e.what());
    return 1;
  }
}

int merge_command(const std::string& out, const std::vector<std::string>& shards) {
  try {
    ordered_json first;
    std::vector<ordered_json> rows;
    std::set<int> points;
    for (const auto& dir : shards) {
      std::ifstream in(dir + "/summary.json");
      if (!in)
        throw std::runtime_error(fmt::format("{}/summary.json: cannot read", dir));
      const auto doc = ordered_json::parse(in);
      if (!doc.contains("sweep"))
        throw std::runtime_error(fmt::format("{}/summary.json: not a sweep summary", dir));
      if (first.is_null()) {
        first = doc;
      } else if (doc["scenario"] != first["scenario"] ||
                 doc["sweep"]["vary"] != first["sweep"]["vary"] ||
                 doc["sweep"]["points"] != first["sweep"]["points"] ||
                 doc["sweep"]["overrides"] != first["sweep"]["overrides"]) {
        throw std::runtime_error(
            fmt::format("{}: a shard of a different sweep than {}", dir, shards[0]));
      }
      std::set<int> here;
      for (const auto& r : doc["results"]) {
        const int p = r["point"].get<int>();
        if (points.contains(p))
          throw std::runtime_error(fmt::format("{}: point {} is in two shards", dir, p));
        here.insert(p);
        rows.push_back(r);
      }
      points.insert(here.begin(), here.end());
    }
    if (first.is_null())
      throw std::runtime_error("expected shard directories to merge");
    const int total = first["sweep"]["points"].get<int>();
    for (int p = 0; p < total; ++p)
      if (!points.contains(p))
        throw std::runtime_error(fmt::format("point {} of {} is in no shard", p, total));
    std::stable_sort(rows.begin(), rows.end(), [](const ordered_json& a, const ordered_json& b) {
      return a["point"].get<int>() < b["point"].get<int>();
    });
    ordered_json top;
    top["sweep"] = first["sweep"];
    top["sweep"]["shard"] = "merged";
    write_summary(out, nlohmann::json::parse(first["scenario"].dump()), rows, top);
    draw_plots(out);
    std::printf("%d points from %zu shards: outputs in %s\n", total, shards.size(), out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "overlapsim merge: %s\n", e.what());
    return 1;
  }
}

} // namespace overlapsim::cli
