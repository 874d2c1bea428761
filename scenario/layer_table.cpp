#include "scenario/layer_table.h"
#include "scenario/user_file.h"

#include "scenario/delimited_fields.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>

namespace overlapsim::scenario {
std::vector<LayerTimes> parse_layer_table(const std::string& text,
                                          const std::string& name_for_errors) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  const std::vector<std::string> header = read_header(in, '\t', line_no);
  const auto bp = find_column(header, "bp_s");
  const auto comm = find_column(header, "comm_s");
  if (!bp || !comm)
    throw std::runtime_error(
        fmt::format("{}:{}: expected a tab-separated header with columns 'bp_s' and 'comm_s'",
                    name_for_errors, line_no));
  const auto fwd = find_column(header, "fwd_s");
  const auto name = find_column(header, "module");
  const auto params = find_column(header, "params");

  std::vector<LayerTimes> layers;
  while (std::getline(in, line)) {
    ++line_no;
    strip_carriage_return(line);
    if (line.empty())
      continue;
    const auto cells = split_fields(line, '\t');
    if (cells.size() != header.size())
      throw std::runtime_error(fmt::format("{}:{}: expected {} tab-separated columns, found {}",
                                           name_for_errors, line_no, header.size(), cells.size()));
    // Issue 63.7: bp_s 1e308 ran the simulation into a deadlock at t = inf; a layer's time is at
    // most an hour (a scenario's longest time), its parameters at most a layer's 1e13.
    auto number = [&](std::size_t col, double max, const char* what) {
      const std::string& s = cells[col];
      double v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v) || v < 0 || v > max)
        throw std::runtime_error(
            fmt::format("{}:{}: column '{}': expected a number{} from 0 to {:g}, got '{}'",
                        name_for_errors, line_no, header[col], what, max, s));
      return v;
    };
    constexpr double kMaxSeconds = 3600, kMaxParams = 1e13;
    LayerTimes l;
    l.name = name ? cells[*name] : fmt::format("layer{}", layers.size());
    l.bp_s = number(*bp, kMaxSeconds, " of seconds");
    l.comm_s = number(*comm, kMaxSeconds, " of seconds");
    if (fwd)
      l.fwd_s = number(*fwd, kMaxSeconds, " of seconds");
    if (params)
      l.params = number(*params, kMaxParams, "");
    layers.push_back(std::move(l));
  }
  if (layers.empty())
    throw std::runtime_error(fmt::format("{}: expected at least one layer row", name_for_errors));
  return layers;
}

std::vector<LayerTimes> read_layer_table(const std::string& path) {
  return parse_layer_table(read_user_file(path, kLayerTableFile), path);
}

} // namespace overlapsim::scenario
