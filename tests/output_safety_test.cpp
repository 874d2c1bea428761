// Issue 26: a command never deletes a file it did not write (its output directory's manifest says
// which it did), publishes all of its outputs or none, and an interrupted or failed plot publishes
// nothing and exits non-zero.
#include "test_util.h"
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <fcntl.h>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sys/stat.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

namespace {

namespace fs = std::filesystem;
using overlapsim::testing::run;
using overlapsim::testing::ScratchDir;
using overlapsim::testing::slurp;
using ::testing::HasSubstr;
using ::testing::Not;

const std::string kScenario = overlapsim::testing::two_node_scenario("safety", "[ddp]");

class OutputSafety : public ::testing::Test {
protected:
  void SetUp() override { std::ofstream(scenario_) << kScenario; }
  std::string out(const std::string& name) const { return (dir_ / name).string(); }
  std::string run_into(const std::string& name, const std::string& extra = " --no-plots") const {
    return "run " + scenario_ + extra + " --out " + out(name);
  }
  std::vector<std::string> names_in(const std::string& name) const {
    std::vector<std::string> files;
    for (const auto& e : fs::directory_iterator(dir_ / name))
      files.push_back(e.path().filename().string());
    std::sort(files.begin(), files.end());
    return files;
  }
  void expect_no_staging() const {
    for (const auto& e : fs::directory_iterator(dir_.path()))
      EXPECT_THAT(e.path().filename().string(), Not(HasSubstr("staging")));
  }
  ScratchDir dir_;
  std::string scenario_ = (dir_ / "s.yaml").string();
};

TEST_F(OutputSafety, FilesNamedLikeOutputsAreNeverDeleted) {
  // The campaign's case: every name matched an output pattern, so the directory was replaced.
  fs::create_directories(dir_ / "photos");
  for (const char* name : {"holiday.png", "trace-mine.json", "loss.csv", "draft.tmp.docx"})
    std::ofstream(dir_ / "photos" / name) << name;
  const auto r = run(run_into("photos"));
  EXPECT_EQ(r.first, 1) << r.second;
  EXPECT_THAT(r.second,
              HasSubstr("photos: holds 'draft.tmp.docx' and no .overlapsim-outputs.json"));
  EXPECT_EQ(names_in("photos"), (std::vector<std::string>{"draft.tmp.docx", "holiday.png",
                                                          "loss.csv", "trace-mine.json"}));
  EXPECT_EQ(slurp(dir_ / "photos" / "holiday.png"), "holiday.png");
  expect_no_staging();
}

TEST_F(OutputSafety, ARunReplacesOnlyTheFilesItsManifestLists) {
  ASSERT_EQ(run(run_into("o")).first, 0);
  const auto manifest = nlohmann::json::parse(slurp(dir_ / "o" / ".overlapsim-outputs.json"));
  EXPECT_EQ(manifest["tool"], "overlapsim");
  std::vector<std::string> listed;
  for (const auto& f : manifest["files"]) {
    listed.push_back(f["name"]);
    EXPECT_EQ(f["bytes"].get<std::uintmax_t>(), fs::file_size(dir_ / "o" / f["name"]));
  }
  EXPECT_EQ(listed, (std::vector<std::string>{"report.md", "summary.csv", "summary.json",
                                              "trace-ddp.json"}));
  // Its own outputs are replaced.
  ASSERT_EQ(run(run_into("o")).first, 0);

  // A file the user added: refused, kept.
  std::ofstream(dir_ / "o" / "notes.txt") << "mine";
  auto r = run(run_into("o"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("holds 'notes.txt', which overlapsim did not write"));
  EXPECT_EQ(slurp(dir_ / "o" / "notes.txt"), "mine");
  fs::remove(dir_ / "o" / "notes.txt");

  // An output the user edited is theirs now: refused, kept.
  const auto report = slurp(dir_ / "o" / "report.md");
  std::ofstream(dir_ / "o" / "report.md", std::ios::app) << "my conclusions\n";
  r = run(run_into("o"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("'report.md' changed since overlapsim wrote it"));
  EXPECT_THAT(slurp(dir_ / "o" / "report.md"), HasSubstr("my conclusions"));

  // A listed file the user removed takes nothing with it: the directory is replaced.
  std::ofstream(dir_ / "o" / "report.md") << report; // back as it was
  fs::remove(dir_ / "o" / "summary.csv");
  ASSERT_EQ(run(run_into("o")).first, 0);
  EXPECT_TRUE(fs::exists(dir_ / "o" / "summary.csv"));
  expect_no_staging();
}

TEST_F(OutputSafety, ASymlinkedOutputDirectoryIsWrittenThrough) {
  fs::create_directories(dir_ / "real");
  fs::create_directory_symlink(dir_ / "real", dir_ / "link");
  ASSERT_EQ(run(run_into("link")).first, 0);
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));
  EXPECT_TRUE(fs::exists(dir_ / "real" / "summary.json"));
  ASSERT_EQ(run(run_into("link")).first, 0); // and again, through the link
  EXPECT_TRUE(fs::is_symlink(dir_ / "link"));

  fs::create_directory_symlink(dir_ / "gone", dir_ / "dangling");
  const auto r = run(run_into("dangling"));
  EXPECT_EQ(r.first, 1);
  EXPECT_THAT(r.second, HasSubstr("dangling: a symbolic link to"));
  EXPECT_THAT(r.second, HasSubstr("which does not exist"));
  EXPECT_FALSE(fs::exists(dir_ / "gone"));
}

TEST_F(OutputSafety, AnEmptyOutIsAnError) {
  // It fell back to the scenario's output.dir without a word.
  const auto r = run("run " + scenario_ + " --no-plots --out ''");
  EXPECT_NE(r.first, 0);
  EXPECT_THAT(r.second, HasSubstr("--out"));
  EXPECT_THAT(r.second, HasSubstr("expected a path, got an empty one"));
  EXPECT_FALSE(fs::exists("out/safety"));
}

// Runs `overlapsim args` with `env` added; returns its pid.
pid_t start(const std::vector<std::string>& args, const std::string& env) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::putenv(const_cast<char*>(env.c_str()));
    std::vector<char*> argv = {const_cast<char*>(OVERLAPSIM_BINARY)};
    for (const auto& a : args)
      argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(OVERLAPSIM_BINARY, argv.data());
    ::_exit(127);
  }
  return pid;
}

TEST_F(OutputSafety, AnInterruptWhilePlottingPublishesNothingAndExits130) {
  ASSERT_EQ(run(run_into("o")).first, 0);
  const auto before = slurp(dir_ / "o" / "summary.json");
  // A plotter that says it started, then takes its time.
  const auto started = dir_ / "started";
  std::ofstream(dir_ / "slow.py") << "import pathlib, time\npathlib.Path('" << started.string()
                                  << "').touch()\ntime.sleep(60)\n";
  for (const int sig : {SIGINT, SIGTERM}) {
    fs::remove(started);
    const pid_t pid =
        start({"run", scenario_, "--set", "seed=7", "--no-progress", "--out", out("o")},
              "OVERLAPSIM_PLOTS_SCRIPT=" + (dir_ / "slow.py").string());
    for (int i = 0; i < 600 && !fs::exists(started); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    ASSERT_TRUE(fs::exists(started));
    const auto sent = std::chrono::steady_clock::now();
    ::kill(pid, sig); // to the process alone, not its group: std::system() ignored this
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(20));
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    EXPECT_EQ(slurp(dir_ / "o" / "summary.json"), before); // the previous outputs, untouched
    expect_no_staging();
  }
}

// The staging directories beside `o`, by name.
std::vector<std::string> staging_dirs(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().starts_with(".o.staging."))
      names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

std::string this_host() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return name;
}

TEST_F(OutputSafety, OnlyStagingDirectoriesThisToolProvablyMadeAreRemoved) {
  // Issue 63.1: a directory named like a killed run's staging directory, its "pid" a dead one in
  // any spelling strtol accepts, was removed with the user's thesis in it.
  const std::string dead = "999999";
  ASSERT_NE(::kill(999999, 0), 0); // no such process (pid_max is lower)
  const std::string token = "0123456789abcdef";
  const auto marker = [&](const std::string& host, const std::string& pid) {
    return "overlapsim staging directory\nhost " + host + "\npid " + pid + "\ntoken " + token +
           "\n";
  };
  struct LookAlike {
    std::string name;
    std::string marker; // "" for none
    bool link = false;
  };
  const std::vector<LookAlike> look_alikes = {
      {".o.staging." + dead, ""},
      {".o.staging.0" + dead, ""},
      {".o.staging.+" + dead, ""},
      {".o.staging. " + dead, ""},
      {".o.staging." + dead + "." + token, ""},                                     // no marker
      {".o.staging.0" + dead + "." + token, marker(this_host(), "0" + dead)},       // not canonical
      {".o.staging." + dead + "." + token + "x", marker(this_host(), dead)},        // not a token
      {".o.staging." + dead + ".0123456789ABCDEF", marker(this_host(), dead)},      // not canonical
      {".o.staging." + dead + "." + token, marker("another-host", dead)},           // another host
      {".o.staging.1" + dead + "." + token, marker(this_host(), dead)},             // wrong pid
      {".o.staging.2" + dead + "." + token, marker(this_host(), "2" + dead), true}, // a link in it
  };
  std::set<std::string> names;
  for (const auto& l : look_alikes) {
    fs::create_directories(dir_ / l.name);
    std::ofstream(dir_ / l.name / "thesis.tex") << "chapter 1";
    if (!l.marker.empty())
      std::ofstream(dir_ / l.name / ".overlapsim-staging") << l.marker;
    if (l.link)
      fs::create_symlink("/etc/hostname", dir_ / l.name / "hostname");
    names.insert(l.name);
  }
  // And one that a killed run of this tool left: exactly so, so removed.
  const std::string killed = ".o.staging.3" + dead + "." + token;
  fs::create_directories(dir_ / killed / "sub");
  std::ofstream(dir_ / killed / ".overlapsim-staging") << marker(this_host(), "3" + dead);
  std::ofstream(dir_ / killed / "summary.json") << "{";
  std::ofstream(dir_ / killed / "sub" / "trace.json") << "[";

  ASSERT_EQ(run(run_into("o")).first, 0);
  const auto left = staging_dirs(dir_.path());
  EXPECT_EQ(std::set<std::string>(left.begin(), left.end()), names);
  for (const auto& l : look_alikes)
    EXPECT_EQ(slurp(dir_ / l.name / "thesis.tex"), "chapter 1") << l.name;
  EXPECT_FALSE(fs::exists(dir_ / killed));
  // The published directory holds no marker.
  EXPECT_FALSE(fs::exists(dir_ / "o" / ".overlapsim-staging"));
}

TEST_F(OutputSafety, AKilledRunsStagingDirectoryIsRemovedByTheNextRun) {
  // A run killed (SIGKILL: no handler runs) while plotting leaves its staging directory, with the
  // marker that proves it is this tool's; the next run into the same directory removes it.
  const auto started = dir_ / "started";
  std::ofstream(dir_ / "slow.py") << "import pathlib, time\npathlib.Path('" << started.string()
                                  << "').touch()\ntime.sleep(60)\n";
  const pid_t pid = start({"run", scenario_, "--no-progress", "--out", out("o")},
                          "OVERLAPSIM_PLOTS_SCRIPT=" + (dir_ / "slow.py").string());
  for (int i = 0; i < 600 && !fs::exists(started); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(fs::exists(started));
  ::kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  const auto left = staging_dirs(dir_.path());
  ASSERT_EQ(left.size(), 1u);
  EXPECT_THAT(left[0], ::testing::MatchesRegex("\\.o\\.staging\\.[0-9]+\\.[0-9a-f]{16}"));
  EXPECT_THAT(slurp(dir_ / left[0] / ".overlapsim-staging"),
              HasSubstr("host " + this_host() + "\npid " + std::to_string(pid) + "\n"));
  ASSERT_EQ(run(run_into("o")).first, 0);
  EXPECT_TRUE(staging_dirs(dir_.path()).empty());
}

TEST_F(OutputSafety, AnOutputDirectoryKeepsItsModeOwnerAndGroup) {
  // Issue 63.2: a run into a private directory left it world-readable (0755).
  const auto mode_of = [](const fs::path& p) {
    struct stat st {};
    ::stat(p.c_str(), &st);
    return st.st_mode & 07777;
  };
  for (const unsigned mode : {0700u, 02770u, 0750u}) {
    const std::string name = fmt::format("m{:o}", mode);
    fs::create_directories(dir_ / name);
    ::chmod((dir_ / name).c_str(), mode);
    ASSERT_EQ(run(run_into(name)).first, 0);
    EXPECT_EQ(mode_of(dir_ / name), mode) << name; // an empty directory, replaced
    ASSERT_EQ(run(run_into(name)).first, 0);
    EXPECT_EQ(mode_of(dir_ / name), mode) << name; // a previous run's outputs, exchanged
  }
  // A previous output the user made private after the run.
  ASSERT_EQ(run(run_into("p")).first, 0);
  ::chmod((dir_ / "p").c_str(), 0700);
  ASSERT_EQ(run(run_into("p")).first, 0);
  EXPECT_EQ(mode_of(dir_ / "p"), 0700u);
  // Owner and group are kept too (as root, hand the directory to another group first).
  if (::geteuid() == 0) {
    ASSERT_EQ(::chown((dir_ / "p").c_str(), 0, 1), 0);
    ASSERT_EQ(run(run_into("p")).first, 0);
    struct stat st {};
    ::stat((dir_ / "p").c_str(), &st);
    EXPECT_EQ(st.st_gid, 1u);
  }
  // A new directory follows the umask.
  ASSERT_EQ(run(run_into("n027"), "umask 027;").first, 0);
  EXPECT_EQ(mode_of(dir_ / "n027"), 0750u);
  ASSERT_EQ(run(run_into("n077"), "umask 077;").first, 0);
  EXPECT_EQ(mode_of(dir_ / "n077"), 0700u);
  expect_no_staging();
}

// Whether a process whose command line mentions `needle` is still alive.
bool process_mentioning(const std::string& needle) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos)
      continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ifstream stat_in(e.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(stat_in)), std::istreambuf_iterator<char>());
    const auto state = stat.rfind(')');
    const bool zombie =
        state != std::string::npos && stat.size() > state + 2 && stat[state + 2] == 'Z';
    if (!zombie && cmdline.find(needle) != std::string::npos)
      return true;
  }
  return false;
}

TEST_F(OutputSafety, ASignalDuringTheSimulationStopsItCleanly) {
  // Issue 63.3: SIGINT/SIGTERM were handled only while plotting; during the simulation the
  // process died of the signal, silently, and left its staging directory with partial traces.
  ASSERT_EQ(run(run_into("o")).first, 0);
  const auto before = slurp(dir_ / "o" / "summary.json");
  // A simulation of several seconds: 64 GPUs, every one simulated, many steps.
  const std::string slow = (dir_ / "slow.yaml").string();
  std::ofstream(slow) << kScenario;
  for (const int sig : {SIGINT, SIGTERM}) {
    const auto err = dir_ / "stderr";
    const pid_t pid = ::fork();
    if (pid == 0) {
      const int fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      ::dup2(fd, 2);
      std::vector<std::string> args = {OVERLAPSIM_BINARY,
                                       "run",
                                       slow,
                                       "--no-progress",
                                       "--no-plots",
                                       "--set",
                                       "cluster.nodes=64",
                                       "--set",
                                       "cluster.rank_classes=off",
                                       "--set",
                                       "training.steps=1500",
                                       "--force",
                                       "--out",
                                       out("o")};
      std::vector<char*> argv;
      for (auto& a : args)
        argv.push_back(a.data());
      argv.push_back(nullptr);
      ::execv(OVERLAPSIM_BINARY, argv.data());
      ::_exit(127);
    }
    // The staging directory exists once the simulation is under way.
    for (int i = 0; i < 600 && staging_dirs(dir_.path()).empty(); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    ASSERT_FALSE(staging_dirs(dir_.path()).empty());
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    const auto sent = std::chrono::steady_clock::now();
    ::kill(pid, sig); // to the process alone, as `kill` or a batch system sends it
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_LT(std::chrono::steady_clock::now() - sent, std::chrono::seconds(10));
    ASSERT_TRUE(WIFEXITED(status)) << "died of signal " << WTERMSIG(status);
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    const auto message = slurp(err);
    EXPECT_EQ(std::count(message.begin(), message.end(), '\n'), 1) << message;
    EXPECT_THAT(message, HasSubstr("overlapsim run: interrupted by signal " + std::to_string(sig)));
    EXPECT_THAT(message, HasSubstr("nothing was published"));
    EXPECT_EQ(slurp(dir_ / "o" / "summary.json"), before);
    EXPECT_TRUE(staging_dirs(dir_.path()).empty());
    // The simulation's process is gone with it.
    bool alive = true;
    for (int i = 0; i < 100 && (alive = process_mentioning(slow)); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(alive);
  }
}

TEST_F(OutputSafety, PlotRedrawsAPublishedDirectoryAndFailsCleanly) {
  ASSERT_EQ(run(run_into("o")).first, 0);
  EXPECT_FALSE(fs::exists(dir_ / "o" / "speedup.png"));
  const auto drawn = run("plot " + out("o"));
  ASSERT_EQ(drawn.first, 0) << drawn.second;
  EXPECT_EQ(slurp(dir_ / "o" / "speedup.png").substr(0, 4), "\x89PNG");
  // The new plots are in the manifest: the directory can be replaced again.
  EXPECT_THAT(slurp(dir_ / "o" / ".overlapsim-outputs.json"), HasSubstr("speedup.png"));
  ASSERT_EQ(run(run_into("o")).first, 0);
  EXPECT_FALSE(fs::exists(dir_ / "o" / "speedup.png"));

  // A failing plotter: exit 1, the directory as it was.
  const auto files = names_in("o");
  std::ofstream(dir_ / "broken.py") << "raise SystemExit(2)\n";
  const auto failed =
      run("plot " + out("o"), "OVERLAPSIM_PLOTS_SCRIPT=" + (dir_ / "broken.py").string());
  EXPECT_EQ(failed.first, 1) << failed.second;
  EXPECT_THAT(failed.second, HasSubstr("the plotting script exited with status 2"));
  EXPECT_EQ(names_in("o"), files);

  // A directory overlapsim did not publish is not plotted into.
  fs::create_directories(dir_ / "hand");
  std::ofstream(dir_ / "hand" / "summary.json") << "null";
  const auto hand = run("plot " + out("hand"));
  EXPECT_EQ(hand.first, 1);
  EXPECT_THAT(hand.second, HasSubstr("hand: holds 'summary.json' and no .overlapsim-outputs.json"));
  EXPECT_THAT(hand.second, Not(HasSubstr("Traceback")));
  // An unwritable place for the staging directory: exit 1, no traceback (issue 26.8).
  if (::geteuid() != 0) {
    fs::permissions(dir_.path(), fs::perms::owner_write, fs::perm_options::remove);
    EXPECT_EQ(run("plot " + out("o")).first, 1);
    fs::permissions(dir_.path(), fs::perms::owner_write, fs::perm_options::add);
  }
}

} // namespace
