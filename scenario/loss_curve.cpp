#include "scenario/loss_curve.h"
#include "scenario/user_file.h"

#include "scenario/delimited_fields.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace overlapsim::scenario {
LossCurves parse_loss_curves(const std::string& text, const std::string& name_for_errors) {
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  const std::vector<std::string> header = read_header(in, ',', line_no);
  auto column = [&](const char* name) -> std::size_t {
    if (const auto i = find_column(header, name))
      return *i;
    throw std::runtime_error(fmt::format(
        "{}:{}: expected a comma-separated header with columns 'algorithm', 'samples' and 'loss' "
        "(no '{}')",
        name_for_errors, line_no, name));
  };
  const std::size_t algorithm = column("algorithm"), samples = column("samples"),
                    loss = column("loss");
  LossCurves curves;
  while (std::getline(in, line)) {
    ++line_no;
    strip_carriage_return(line);
    if (line.empty())
      continue;
    const auto cells = split_fields(line, ',');
    if (cells.size() != header.size())
      throw std::runtime_error(fmt::format("{}:{}: expected {} comma-separated columns, found {}",
                                           name_for_errors, line_no, header.size(), cells.size()));
    auto number = [&](std::size_t col) {
      const std::string& s = cells[col];
      double v = 0;
      const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
      if (ec != std::errc{} || end != s.data() + s.size() || !std::isfinite(v) || v < 0)
        throw std::runtime_error(
            fmt::format("{}:{}: column '{}': expected a non-negative number, got '{}'",
                        name_for_errors, line_no, header[col], s));
      return v;
    };
    const std::string& label = cells[algorithm];
    if (label.empty())
      throw std::runtime_error(
          fmt::format("{}:{}: column 'algorithm' is empty", name_for_errors, line_no));
    auto& curve = curves[label];
    const LossPoint p{number(samples), number(loss)};
    if (!curve.empty() && p.samples <= curve.back().samples)
      throw std::runtime_error(fmt::format(
          "{}:{}: column 'samples': {} for '{}' does not increase (the previous point has {})",
          name_for_errors, line_no, cells[samples], label, curve.back().samples));
    curve.push_back(p);
  }
  if (curves.empty())
    throw std::runtime_error(fmt::format("{}: expected at least one point", name_for_errors));
  return curves;
}

LossCurves read_loss_curves(const std::string& path) {
  return parse_loss_curves(read_user_file(path, kLossCurveFile), path);
}

std::optional<double> samples_to_reach(const std::vector<LossPoint>& curve, double target) {
  for (std::size_t i = 0; i < curve.size(); ++i) {
    if (curve[i].loss > target)
      continue;
    if (i == 0)
      return curve[0].samples;
    const LossPoint& a = curve[i - 1];
    const LossPoint& b = curve[i];
    return a.samples + (b.samples - a.samples) * (a.loss - target) / (a.loss - b.loss);
  }
  return std::nullopt;
}

} // namespace overlapsim::scenario
