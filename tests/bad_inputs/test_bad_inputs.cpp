// Every malformed input in tests/bad_inputs/cases.tsv, run through the real binary (issue #12):
// exit code 2, exactly one line on stderr, the line names the case's key/file/word, and the
// working directory (where runs/ and sweeps/ would go) is still empty afterwards.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("bad_inputs");

namespace fs = std::filesystem;

namespace {

const fs::path kDir = fs::path(STALE_SOURCE_DIR) / "tests" / "bad_inputs";

struct Case {
  std::string name, args, expect;
};

std::vector<Case> read_cases() {
  std::ifstream in(kDir / "cases.tsv");
  REQUIRE(in);
  std::vector<Case> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto t1 = line.find('\t'), t2 = line.find('\t', t1 + 1);
    REQUIRE(t1 != std::string::npos);
    REQUIRE(t2 != std::string::npos);
    out.push_back({line.substr(0, t1), line.substr(t1 + 1, t2 - t1 - 1), line.substr(t2 + 1)});
  }
  return out;
}

std::string substitute(std::string s) {
  for (size_t p = s.find("{D}"); p != std::string::npos; p = s.find("{D}")) s.replace(p, 3, kDir.string());
  return s;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// "run {D}/x.toml @overrides/y.args" → argv; @FILE: one argument per line, @@FILE: the whole text
std::vector<std::string> expand(const std::string& args) {
  std::vector<std::string> out;
  std::istringstream ss(args);
  std::string tok;
  while (ss >> tok) {
    if (tok.rfind("@@", 0) == 0) {
      out.push_back(substitute(slurp(kDir / tok.substr(2))));
    } else if (tok[0] == '@') {
      std::ifstream in(kDir / tok.substr(1));
      REQUIRE_MESSAGE(in, "missing argument file " << tok);
      std::string line;
      while (std::getline(in, line)) out.push_back(substitute(line));
    } else {
      out.push_back(substitute(tok));
    }
  }
  return out;
}

struct Result {
  int rc = -1;
  bool timed_out = false;
  std::string err;
};

// runs the binary in `cwd` with stdout and stderr captured separately; 60 s at most
Result run_in(const fs::path& cwd, const std::vector<std::string>& args) {
  const fs::path out = cwd.parent_path() / (cwd.filename().string() + ".stdout");
  const fs::path err = cwd.parent_path() / (cwd.filename().string() + ".stderr");
  const std::string bin = stale::test::stale_bin();
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(bin.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const pid_t pid = fork();
  if (pid == 0) {
    if (chdir(cwd.c_str()) != 0) _exit(127);
    const int o = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0) _exit(127);
    dup2(o, 1);
    dup2(e, 2);
    execv(bin.c_str(), argv.data());
    _exit(127);
  }
  Result r;
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (true) {
    const pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (std::chrono::steady_clock::now() - t0 > std::chrono::seconds(60)) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      r.timed_out = true;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = slurp(err);
  fs::remove(out);
  fs::remove(err);
  return r;
}

}  // namespace

TEST_CASE("EveryBadInputExits2WithOneLineNamingItAndLeavesNoFile") {
  // a fixed memory budget, so that the resource-estimate cases do not depend on the machine
  setenv("STALE_MEMORY_LIMIT", "2G", 1);
  const auto cases = read_cases();
  CHECK(cases.size() >= 80);
  const fs::path root = stale::test::temp_dir("bad-inputs");
  int failures = 0;
  for (const auto& c : cases) {
    const fs::path cwd = root / c.name;
    fs::create_directories(cwd);
    const Result r = run_in(cwd, expand(c.args));
    const size_t lines = static_cast<size_t>(std::count(r.err.begin(), r.err.end(), '\n'));
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(cwd)) left.push_back(e.path().lexically_relative(cwd).string());
    const bool ok = !r.timed_out && r.rc == 2 && lines == 1 && !r.err.empty() && r.err.back() == '\n' &&
                    r.err.find(c.expect) != std::string::npos && left.empty();
    if (!ok) ++failures;
    if (std::getenv("STALE_BAD_INPUTS_VERBOSE")) MESSAGE(c.name << " | " << r.rc << " | " << r.err);
    INFO("case " << c.name << ": stale " << c.args);
    INFO("stderr: " << r.err);
    CHECK_FALSE(r.timed_out);
    CHECK(r.rc == 2);
    CHECK(lines == 1);
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK_MESSAGE(left.empty(), "left behind: " << (left.empty() ? "" : left.front()));
  }
  MESSAGE(cases.size() << " bad inputs, " << failures << " failed");
  fs::remove_all(root);
}

// issue 34: a sweep folder that cannot take the sweep's files is refused before any run, in
// one line and with exit 2 (a file named runs/ in it was an internal error, exit 3, found at the
// first write; a read-only folder failed each run), and nothing in it changes
TEST_CASE("ASweepFolderThatCannotTakeItsFilesIsRefusedBeforeAnyRun") {
  const fs::path root = stale::test::temp_dir("bad-sweep-folder");
  const std::string sweep = (kDir / "sweeps" / "shard_bad.toml").string();
  {
    const fs::path cwd = root / "runs_is_a_file";
    fs::create_directories(cwd / "sw");
    std::ofstream(cwd / "sw" / "runs") << "not a folder\n";
    const Result r = run_in(cwd, {"sweep", sweep, "--out", "sw", "-q"});
    INFO("stderr: " << r.err);
    CHECK(r.rc == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find("sw/runs is a file, not a folder") != std::string::npos);
    std::vector<std::string> left;
    for (const auto& e : fs::recursive_directory_iterator(cwd / "sw")) left.push_back(e.path().filename().string());
    CHECK(left == std::vector<std::string>{"runs"});
  }
  if (geteuid() != 0) {  // root writes into a 0555 folder: the case is only meaningful for a user
    const fs::path cwd = root / "read_only";
    fs::create_directories(cwd / "ro");
    fs::permissions(cwd / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    const Result r = run_in(cwd, {"sweep", sweep, "--out", "ro", "-q"});
    fs::permissions(cwd / "ro", fs::perms::owner_all);
    INFO("stderr: " << r.err);
    CHECK(r.rc == 2);
    CHECK(r.err.find("ro is not writable") != std::string::npos);
    CHECK(fs::is_empty(cwd / "ro"));
  }
  fs::remove_all(root);
}

TEST_SUITE_END();
