#include "files/output_stage.h"

#include "files/atomic_file.h"
#include "files/remove_tree.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <map>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <unistd.h>
#include <zlib.h>

namespace overlapsim {

namespace fs = std::filesystem;

namespace {

// ".<name>.staging.<pid>" beside the output directory: on the same file system, so that the
// publishing rename is atomic, and hidden from listings.
std::string staging_prefix(const fs::path& dir) {
  return fmt::format(".{}.staging.", dir.filename().string());
}

// A directory's name without trailing separators ("out/run/" is "out/run"); a symbolic link to a
// directory is resolved, so that the outputs go where it points and the link itself stays.
fs::path resolved(const std::string& dir) {
  if (dir.empty())
    throw std::runtime_error("the output directory is empty; name one");
  fs::path p = fs::path(dir).lexically_normal();
  if (!p.has_filename() && p.has_parent_path())
    p = p.parent_path();
  std::error_code ec;
  if (fs::is_symlink(p, ec)) {
    const fs::path target = fs::canonical(p, ec);
    if (ec)
      throw std::runtime_error(fmt::format(
          "{}: a symbolic link to {}, which does not exist; create that directory or choose "
          "another output directory",
          dir, fs::read_symlink(p, ec).string()));
    if (!fs::is_directory(target, ec))
      throw std::runtime_error(
          fmt::format("{}: a symbolic link to {}, which is not a directory", dir, target.string()));
    p = target;
  }
  const std::string name = p.filename().string();
  if (name.empty() || name == "." || name == "..")
    throw std::runtime_error(
        fmt::format("{}: choose a named output directory (a run replaces it as a whole)", dir));
  return p;
}

struct FileRecord {
  std::uintmax_t bytes = 0;
  std::uint32_t crc32 = 0;
};

FileRecord record_of(const fs::path& file) {
  FileRecord r;
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error(
        fmt::format("{}: cannot read: {}", file.string(), std::strerror(errno)));
  uLong crc = ::crc32(0L, Z_NULL, 0);
  std::vector<unsigned char> buf(1 << 20);
  for (;;) {
    const ssize_t n = ::read(fd, buf.data(), buf.size());
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(
          fmt::format("{}: cannot read: {}", file.string(), std::strerror(err)));
    }
    if (n == 0)
      break;
    crc = ::crc32(crc, buf.data(), static_cast<uInt>(n));
    r.bytes += static_cast<std::uintmax_t>(n);
  }
  ::close(fd);
  r.crc32 = static_cast<std::uint32_t>(crc);
  return r;
}

// Every entry under `dir` but the manifest, sorted: files, directories (with `with_directories`)
// and anything else (links, sockets), so that the caller can refuse what it did not write.
std::vector<fs::directory_entry> entries_under(const fs::path& dir, bool with_directories) {
  std::vector<fs::directory_entry> entries;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    if (!with_directories && it->is_directory(ec) && !it->is_symlink(ec))
      continue;
    if (it->path().lexically_relative(dir) == kOutputManifest)
      continue;
    entries.push_back(*it);
  }
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot list: {}", dir.string(), ec.message()));
  std::sort(entries.begin(), entries.end(),
            [](const auto& a, const auto& b) { return a.path() < b.path(); });
  return entries;
}

const char* kChooseAnother =
    "a run replaces its output directory as a whole and deletes only files it wrote itself; "
    "choose a new or empty directory (or move the file away)";

// The manifest's records by relative path; throws when there is none or it is damaged.
std::map<std::string, FileRecord> read_manifest(const fs::path& dir, const std::string& first) {
  const fs::path file = dir / kOutputManifest;
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    throw std::runtime_error(fmt::format(
        "{}: holds '{}' and no {} (the list of the files overlapsim published there); {}",
        dir.string(), first, kOutputManifest, kChooseAnother));
  nlohmann::json doc;
  try {
    if (fs::file_size(file) > (16u << 20))
      throw std::runtime_error("larger than 16 MiB");
    FILE* f = std::fopen(file.c_str(), "rb");
    if (!f)
      throw std::runtime_error(std::strerror(errno));
    std::string text;
    char buf[1 << 16];
    while (const std::size_t n = std::fread(buf, 1, sizeof buf, f))
      text.append(buf, n);
    std::fclose(f);
    doc = nlohmann::json::parse(text);
    std::map<std::string, FileRecord> records;
    if (doc.at("tool") != "overlapsim")
      throw std::runtime_error("not overlapsim's");
    for (const auto& f_ : doc.at("files")) {
      FileRecord r;
      r.bytes = f_.at("bytes").get<std::uintmax_t>();
      r.crc32 = f_.at("crc32").get<std::uint32_t>();
      records[f_.at("name").get<std::string>()] = r;
    }
    return records;
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("{}: a damaged manifest ({}); {}", file.string(), e.what(), kChooseAnother));
  }
}

// Throws unless `dir` is absent, empty, or holds exactly its manifest's files, unchanged.
void check_replaceable(const fs::path& dir) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(dir, ec)))
    return;
  if (!fs::is_directory(dir, ec))
    throw std::runtime_error(fmt::format("{}: exists and is not a directory", dir.string()));
  const auto entries = entries_under(dir, /*with_directories=*/true);
  if (entries.empty())
    return;
  const auto records = read_manifest(dir, entries.front().path().lexically_relative(dir).string());
  for (const auto& e : entries) {
    const std::string name = e.path().lexically_relative(dir).string();
    if (e.is_directory(ec) && !e.is_symlink(ec)) {
      // A directory the outputs are in; any other (even empty) is someone else's.
      const auto after = records.lower_bound(name + "/");
      if (after == records.end() || !after->first.starts_with(name + "/"))
        throw std::runtime_error(fmt::format(
            "{}: holds the directory '{}', which overlapsim did not write (no file of {} is in "
            "it); {}",
            dir.string(), name, kOutputManifest, kChooseAnother));
      continue;
    }
    const auto it = records.find(name);
    if (it == records.end() || e.is_symlink(ec) || !e.is_regular_file(ec))
      throw std::runtime_error(
          fmt::format("{}: holds '{}', which overlapsim did not write (it is not in {}); {}",
                      dir.string(), name, kOutputManifest, kChooseAnother));
    const FileRecord now = record_of(e.path());
    if (now.bytes != it->second.bytes || now.crc32 != it->second.crc32)
      throw std::runtime_error(
          fmt::format("{}: '{}' changed since overlapsim wrote it ({} bytes now, {} then); {}",
                      dir.string(), name, now.bytes, it->second.bytes, kChooseAnother));
  }
}

void write_manifest(const fs::path& staging) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  for (const auto& e : entries_under(staging, /*with_directories=*/false)) {
    const auto r = record_of(e.path());
    files.push_back({{"name", e.path().lexically_relative(staging).string()},
                     {"bytes", r.bytes},
                     {"crc32", r.crc32}});
  }
  nlohmann::ordered_json doc;
  doc["tool"] = "overlapsim";
  doc["about"] = "the files overlapsim published here; a later run replaces this directory only "
                 "while it holds exactly these files, unchanged";
  doc["files"] = files;
  write_file_atomically((staging / kOutputManifest).string(), doc.dump(1) + "\n");
}

} // namespace

void check_output_dir(const std::string& dir) {
  OutputStage probe(dir); // checks, and creates (then removes) a staging directory beside it
}

std::vector<std::string> published_files(const std::string& dir) {
  const fs::path target = resolved(dir);
  std::error_code ec;
  if (!fs::is_directory(target, ec))
    throw std::runtime_error(fmt::format("{}: not a directory", dir));
  check_replaceable(target);
  std::vector<std::string> files;
  for (const auto& e : entries_under(target, /*with_directories=*/false))
    files.push_back(e.path().lexically_relative(target).string());
  return files;
}

OutputStage::OutputStage(std::string dir) {
  const fs::path target = resolved(dir);
  dir_ = target.string();
  check_replaceable(target);
  std::error_code ec;
  const fs::path parent = target.has_parent_path() ? target.parent_path() : fs::path(".");
  fs::create_directories(parent, ec);
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot create: {}", parent.string(), ec.message()));
  // Staging directories of runs that were killed (their process is gone) are removed.
  const std::string prefix = staging_prefix(target);
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string file = entry.path().filename().string();
    if (!file.starts_with(prefix))
      continue;
    const std::string pid_text = file.substr(prefix.size());
    char* end = nullptr;
    const long pid = std::strtol(pid_text.c_str(), &end, 10);
    if (end != pid_text.c_str() && *end == '\0' && pid > 0 &&
        ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH)
      remove_tree(entry.path().string());
  }
  staging_ = (parent / (prefix + std::to_string(::getpid()))).string();
  remove_tree(staging_);
  fs::create_directory(staging_, ec);
  if (ec)
    throw std::runtime_error(fmt::format("{}: cannot create: {}", staging_, ec.message()));
}

OutputStage::~OutputStage() {
  if (!published_) {
    remove_tree(staging_);
  }
}

void OutputStage::publish() {
  // Checked again: the user may have put a file there while the run went on.
  check_replaceable(dir_);
  write_manifest(staging_);
  std::error_code ec;
  // An empty directory (or none) is replaced by a plain rename; a previous run's outputs are
  // exchanged atomically with the new ones, then removed from where the staging directory was.
  if (fs::is_directory(dir_, ec) && fs::is_empty(dir_, ec))
    fs::remove(dir_, ec);
  if (!fs::exists(dir_, ec)) {
    if (::rename(staging_.c_str(), dir_.c_str()) != 0)
      throw std::runtime_error(
          fmt::format("{}: cannot publish the outputs: {}", dir_, std::strerror(errno)));
  } else {
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, dir_.c_str(), RENAME_EXCHANGE) != 0)
      throw std::runtime_error(
          fmt::format("{}: cannot publish the outputs: {}", dir_, std::strerror(errno)));
    remove_tree(staging_); // now the previous outputs
  }
  published_ = true;
}

} // namespace overlapsim
