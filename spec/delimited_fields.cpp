#include "spec/delimited_fields.h"

#include <sstream>

namespace overlapsim::spec {

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

std::optional<std::size_t> find_column(const std::vector<std::string>& header,
                                       const std::string& name) {
  for (std::size_t i = 0; i < header.size(); ++i)
    if (header[i] == name)
      return i;
  return std::nullopt;
}

} // namespace overlapsim::spec
