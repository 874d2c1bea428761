// Splitting one line of a delimited text table (the DreamDDP authors' TSV profiles, loss-curve
// CSVs) into its fields, and finding a header's column. Shared so that both readers treat empty
// trailing fields and missing columns the same way.
#pragma once

#include <cstddef>
#include <istream>
#include <optional>
#include <string>
#include <vector>

namespace overlapsim::scenario {

// The fields of `line` between `separator`s; a trailing separator ends with an empty field, so a
// row's field count does not depend on whether its last cell is empty.
std::vector<std::string> split_fields(const std::string& line, char separator);

// Strips a trailing '\r' (files written on Windows).
void strip_carriage_return(std::string& line);

// Reads up to the first non-empty line and returns its fields (empty at the end of the input);
// `line_no` counts the lines read, for error messages.
std::vector<std::string> read_header(std::istream& in, char separator, int& line_no);

// The index of the header field equal to `name`, if any.
std::optional<std::size_t> find_column(const std::vector<std::string>& header,
                                       const std::string& name);

} // namespace overlapsim::scenario
