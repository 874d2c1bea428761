#include "files/output_stage.h"

#include "files/atomic_file.h"
#include "files/interruption.h"
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
#include <optional>
#include <random>
#include <stdexcept>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

namespace overlapsim {

namespace fs = std::filesystem;

namespace {

// ".<name>.staging.<pid>.<token>" beside the output directory: on the same file system, so that
// the publishing rename is atomic, and hidden from listings.
std::string staging_prefix(const fs::path& dir) {
  return fmt::format(".{}.staging.", dir.filename().string());
}

// Inside each staging directory: a marker saying which process on which host made it, with the
// random token that its name carries too. Only a directory whose marker reads exactly so is
// ever removed as a killed run's (issue 63.1).
constexpr const char* kStagingMarker = ".overlapsim-staging";

std::string marker_text(const std::string& host, const std::string& pid, const std::string& token) {
  return fmt::format("overlapsim staging directory\nhost {}\npid {}\ntoken {}\n", host, pid, token);
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0)
    return "unknown";
  return name;
}

// 16 lowercase hex digits from the random device: no two runs' staging directories share a name.
std::string random_token() {
  std::random_device device;
  const std::uint64_t value = (std::uint64_t{device()} << 32) ^ device();
  return fmt::format("{:016x}", value);
}

bool is_token(std::string_view text) {
  return text.size() == 16 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Reads at most `limit` bytes of a regular file (not a link); nullopt when it is not one.
std::optional<std::string> small_file(const fs::path& file, std::size_t limit) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0)
    return std::nullopt;
  struct stat st {};
  std::optional<std::string> text;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
      static_cast<std::size_t>(st.st_size) <= limit) {
    text.emplace(static_cast<std::size_t>(st.st_size), '\0');
    if (::read(fd, text->data(), text->size()) != static_cast<ssize_t>(text->size()))
      text.reset();
  }
  ::close(fd);
  return text;
}

// Whether `entry`, named like a staging directory of `prefix`, is one a killed run of this tool
// left on this host: the exact spelling ".<name>.staging.<pid>.<token>" with the pid as
// std::to_string writes it, a real directory holding the marker that names this host, that pid
// and that token, nothing in it but plain files and directories, and no process with that pid.
bool left_by_a_killed_run(const fs::directory_entry& entry, const std::string& prefix) {
  const std::string rest = entry.path().filename().string().substr(prefix.size());
  const auto dot = rest.find('.');
  if (dot == std::string::npos)
    return false;
  const std::string pid_text = rest.substr(0, dot), token = rest.substr(dot + 1);
  long pid = 0;
  try {
    std::size_t used = 0;
    pid = std::stol(pid_text, &used);
    if (used != pid_text.size() || pid <= 0 || std::to_string(pid) != pid_text)
      return false;
  } catch (const std::exception&) {
    return false;
  }
  std::error_code ec;
  if (!is_token(token) || entry.is_symlink(ec) || !entry.is_directory(ec))
    return false;
  if (small_file(entry.path() / kStagingMarker, 4096) != marker_text(this_host(), pid_text, token))
    return false;
  for (auto it = fs::recursive_directory_iterator(entry.path(), ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    const auto status = it->symlink_status(ec);
    if (ec || !(fs::is_regular_file(status) || fs::is_directory(status)))
      return false;
  }
  return !ec && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

// Gives the staging directory the mode, owner and group of the output directory it will replace,
// so that a private (0700) or group-shared (2770) directory stays so (issue 63.2). A new output
// directory keeps what mkdir gave it: the umask's mode and the parent's set-group-ID group.
void keep_access_of(const fs::path& dir, const std::string& staging) {
  struct stat st {};
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return;
  struct stat now {};
  if (::stat(staging.c_str(), &now) != 0)
    throw std::runtime_error(fmt::format("{}: cannot read: {}", staging, std::strerror(errno)));
  if ((now.st_uid != st.st_uid || now.st_gid != st.st_gid) &&
      ::chown(staging.c_str(), st.st_uid, st.st_gid) != 0)
    throw std::runtime_error(fmt::format(
        "{}: cannot give the new outputs its owner and group (uid {}, gid {}): {}; a run keeps "
        "them; choose a directory of your own",
        dir.string(), st.st_uid, st.st_gid, std::strerror(errno)));
  if (::chmod(staging.c_str(), st.st_mode & 07777) != 0)
    throw std::runtime_error(fmt::format("{}: cannot give the new outputs its mode {:04o}: {}",
                                         dir.string(), st.st_mode & 07777, std::strerror(errno)));
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
  // Staging directories of runs that were killed (their process is gone) are removed: only those
  // this tool provably made (left_by_a_killed_run).
  const std::string prefix = staging_prefix(target);
  for (const auto& entry : fs::directory_iterator(parent, ec))
    if (entry.path().filename().string().starts_with(prefix) && left_by_a_killed_run(entry, prefix))
      remove_tree(entry.path().string());
  const std::string pid = std::to_string(::getpid());
  for (int attempt = 0;; ++attempt) {
    const std::string token = random_token();
    staging_ = (parent / fmt::format("{}{}.{}", prefix, pid, token)).string();
    if (::mkdir(staging_.c_str(), 0777) == 0) {
      try {
        write_file_atomically((fs::path(staging_) / kStagingMarker).string(),
                              marker_text(this_host(), pid, token));
        keep_access_of(target, staging_);
      } catch (...) {
        remove_tree(staging_);
        throw;
      }
      break;
    }
    if (errno != EEXIST || attempt == 8)
      throw std::runtime_error(
          fmt::format("{}: cannot create: {}", staging_, std::strerror(errno)));
  }
}

OutputStage::~OutputStage() {
  if (!published_) {
    remove_tree(staging_);
  }
}

void OutputStage::publish() {
  throw_if_interrupted(); // an interrupted command publishes nothing (files/interruption.h)
  // Checked again: the user may have put a file there while the run went on.
  check_replaceable(dir_);
  // The marker is not an output. Removed first, so that the manifest does not list it; a process
  // killed from here on leaves a directory that no later run removes (docs/SCENARIO.md).
  std::error_code ec;
  fs::remove(fs::path(staging_) / kStagingMarker, ec);
  write_manifest(staging_);
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
