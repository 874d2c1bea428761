// gzip (RFC 1952) compression of an output file's contents: Chrome traces of large clusters shrink
// about tenfold, and Perfetto and chrome://tracing open .json.gz directly.
#pragma once

#include <string>
#include <string_view>

namespace overlapsim {

// Throws std::runtime_error when zlib fails.
std::string gzip_compress(std::string_view data);

} // namespace overlapsim
