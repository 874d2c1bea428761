#include "scenario/delimited_fields.h"

#include <sstream>

namespace overlapsim::scenario {

std::vector<std::string> split_fields(const std::string& line, char separator) {
  std::vector<std::string> cells;
  std::string cell;
  std::istringstream in(line);
  while (std::getline(in, cell, separator))
    cells.push_back(cell);
  if (!line.empty() && line.back() == separator)
    cells.emplace_back();
  return cells;
}

void strip_carriage_return(std::string& line) {
  if (!line.empty() && line.back() == '\r')
    line.pop_back();
}

std::vector<std::string> read_header(std::istream& in, char separator, int& line_no) {
  std::string line;
  while (std::getline(in, line)) {
    ++line_no;
    strip_carriage_return(line);
    if (!line.empty())
      return split_fields(line, separator);
  }
  return {};
}

std::optional<std::size_t> find_column(const std::vector<std::string>& header,
                                       const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name)
      return i;
  return std::nullopt;
}

} // namespace overlapsim::scenario
