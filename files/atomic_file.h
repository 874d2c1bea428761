// Outputs are written atomically: to a temporary file beside the target, then renamed over it, so a
// reader never sees half a file and a failed run leaves the previous outputs intact.
#pragma once

#include <string>
#include <string_view>

namespace overlapsim {

// Throws std::runtime_error naming the path when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view contents);

} // namespace overlapsim
