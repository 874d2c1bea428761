#include "files/gzip.h"

#include <fmt/format.h>
#include <limits>
#include <stdexcept>
#include <zlib.h>

namespace overlapsim {

std::string gzip_compress(std::string_view data) {
  z_stream z{};
  // windowBits 15 + 16: a gzip header and trailer rather than a raw zlib stream.
  if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw std::runtime_error("gzip: cannot initialise zlib");
  std::string out;
  out.resize(deflateBound(&z, static_cast<uLong>(data.size())) + 32);
  // One call: the input size fits uInt for any trace this writes (deflateBound was sized for it).
  if (data.size() > std::numeric_limits<uInt>::max()) {
    deflateEnd(&z);
    throw std::runtime_error(fmt::format("gzip: {} bytes is too large", data.size()));
  }
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  if (status != Z_STREAM_END)
    throw std::runtime_error(fmt::format("gzip: zlib failed (status {})", status));
  return out;
}

} // namespace overlapsim
