// Sweeps: expansion (grid × zip, counts), run names that depend only on the resolved config,
// shards that partition the grid, resume after a kill, and results independent of --jobs.
#include <doctest/doctest.h>

#include <signal.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <thread>

#include "src/core/error.hpp"
#include "src/sweep/sweep.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("run");

using namespace stale;
namespace fs = std::filesystem;

namespace {

const std::string kBase = test::small_run_toml({.dim = 48, .samples = 80, .batch_size = 4, .stages = 4, .updates = 1500,
                                                 .tables = "[delay]\nname = \"uniform\"\nmax = 6\n", .log_every = 50});

fs::path make_sweep(const std::string& name, const std::string& body) {
  const auto dir = test::temp_dir(name);
  test::write_file(dir / "base.toml", kBase);
  test::write_file(dir / "sweep.toml", "base = \"base.toml\"\n" + body);
  return dir;
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// index rows without the wall-clock column (the only one that may differ between runs)
std::vector<std::string> rows_without_wall(const fs::path& csv) {
  std::vector<std::string> out;
  std::ifstream in(csv);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string c;
    while (std::getline(ss, c, ',')) cells.push_back(c);
    if (cells.size() >= 2) cells.erase(cells.end() - 2);  // wall_seconds precedes path
    std::string joined;
    for (const auto& x : cells) joined += x + ",";
    out.push_back(joined);
  }
  return out;
}

}  // namespace

TEST_CASE("SweepExpandsGridTimesZipInAStableOrder") {
  const auto dir = make_sweep("expand", R"(
[grid]
"method.lr" = [0.01, 0.02, 0.04]
seed = [0, 1]
[zip]
"objective.stages" = [2, 4]
"delay.max" = [3, 14]
)");
  const Sweep s = load_sweep((dir / "sweep.toml").string());
  CHECK(s.runs.size() == 3 * 2 * 2);
  std::set<std::string> hashes;
  for (const auto& r : s.runs) hashes.insert(r.hash);
  CHECK(hashes.size() == s.runs.size());
  // zip varies together
  for (const auto& r : s.runs) {
    const int S = static_cast<int>(r.config.get_int("objective.stages"));
    CHECK(r.config.get_int("delay.max") == (S == 2 ? 3 : 14));
  }
  CHECK(s.runs[0].config.get_float("method.lr") == 0.01);
  CHECK(s.runs.back().config.get_float("method.lr") == 0.04);
}

TEST_CASE("RunHashDependsOnTheResolvedConfigNotOnKeyOrder") {
  const auto a = make_sweep("hash-a", "[grid]\nseed = [0, 1]\n\"method.lr\" = [0.01]\n");
  const auto b = make_sweep("hash-b", "[grid]\n\"method.lr\" = [0.01]\nseed = [1, 0]\n");
  const Sweep sa = load_sweep((a / "sweep.toml").string()), sb = load_sweep((b / "sweep.toml").string());
  std::set<std::string> ha, hb;
  for (const auto& r : sa.runs) ha.insert(r.hash);
  for (const auto& r : sb.runs) hb.insert(r.hash);
  CHECK(ha == hb);
  // a value given as an override equals the same value in the base file
  Config c1 = Config::from_string(kBase, "x");
  Config c2 = Config::from_string(kBase, "y");
  c2.apply_override("method.lr=0.01");
  c2.apply_override("log.out=elsewhere.h5");
  CHECK(config_hash(c1) == config_hash(c2));
  c2.apply_override("method.lr=0.02");
  CHECK(config_hash(c1) != config_hash(c2));
  // setting a key to its default is the same run as leaving it out
  Config c3 = Config::from_string(kBase, "z");
  c3.apply_override("method.optimizer=sgd");
  CHECK(config_hash(c1) == config_hash(c3));
}

TEST_CASE("ShardsPartitionTheGrid") {
  const auto dir = make_sweep("shard", "[grid]\n\"method.lr\" = [0.01, 0.02, 0.03, 0.05, 0.07]\nseed = [0, 1, 2]\n");
  const Sweep s = load_sweep((dir / "sweep.toml").string());
  for (int N : {1, 2, 4, 7, 20}) {
    std::multiset<int64_t> seen;
    for (int i = 0; i < N; ++i)
      for (const auto& r : s.runs)
        if (r.position % N == i) seen.insert(r.position);
    CHECK(seen.size() == s.runs.size());
    CHECK(std::set<int64_t>(seen.begin(), seen.end()).size() == s.runs.size());
  }
  int i = 0, n = 0;
  parse_shard("3/8", i, n);
  CHECK((i == 3 && n == 8));
  CHECK_THROWS_AS(parse_shard("8/8", i, n), UserError);
  CHECK_THROWS_AS(parse_shard("x", i, n), UserError);
}

TEST_CASE("SweepFileErrorsNameTheKey") {
  const auto dir = make_sweep("bad", "[grid]\n\"method.lrr\" = [0.01]\n");
  CHECK_THROWS_WITH_AS(load_sweep((dir / "sweep.toml").string()), doctest::Contains("method.lrr"), UserError);
  const auto dir2 = make_sweep("bad2", "[zip]\nseed = [0, 1]\n\"method.lr\" = [0.01]\n");
  CHECK_THROWS_WITH_AS(load_sweep((dir2 / "sweep.toml").string()), doctest::Contains("equal lengths"), UserError);
  const auto dir3 = make_sweep("bad3", "[grid]\n\"method.lr\" = [-1.0]\n");
  CHECK_THROWS_WITH_AS(load_sweep((dir3 / "sweep.toml").string()), doctest::Contains("method.lr"), UserError);
}

TEST_CASE("JobsOneAndJobsTwoGiveIdenticalIndexRows") {
  const std::string body = "epsilon = 5.0\n[grid]\n\"method.lr\" = [0.005, 0.01]\nseed = [0, 1, 2]\n";
  const auto d1 = make_sweep("jobs1", body), d2 = make_sweep("jobs2", body);
  std::string out;
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (d1 / "sweep.toml").string() + " -q --jobs 1 --out " +
                                (d1 / "o").string(), out) == 0);
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (d2 / "sweep.toml").string() + " -q --jobs 2 --out " +
                                (d2 / "o").string(), out) == 0);
  const auto r1 = rows_without_wall(d1 / "o" / "index.csv"), r2 = rows_without_wall(d2 / "o" / "index.csv");
  CHECK(r1.size() == 7);
  CHECK(r1 == r2);
  CHECK(read(d1 / "o" / "index.csv").find(",ok,") != std::string::npos);
  CHECK(fs::exists(d1 / "o" / "index.h5"));
}

TEST_CASE("KilledSweepResumesToTheSameResults") {
  // Runs long enough that the kill lands mid-way: the twelve runs go as three ensembles of
  // four, whose files appear four at a time, and at the base's 1500 updates the whole sweep
  // took ~50 ms — a poller that a busy machine held back for ~15 ms saw all twelve done.
  const std::string body =
      "[set]\n\"method.updates\" = 60000\n[grid]\n\"method.lr\" = [0.002, 0.004, 0.006, 0.008]\nseed = [0, 1, 2]\n";
  const auto ref = make_sweep("resume-ref", body), cut = make_sweep("resume-cut", body);
  std::string out;
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (ref / "sweep.toml").string() +
                                " -q --out " + (ref / "o").string(), out) == 0);
  // start the sweep in its own process group, kill the group once a few runs are done
  const auto pidfile = cut / "pid";
  std::system(("setsid sh -c 'echo $$ > " + pidfile.string() + "; exec " + test::stale_bin() + " sweep " +
               (cut / "sweep.toml").string() + " -q --out " + (cut / "o").string() +
               " >/dev/null 2>&1' &").c_str());
  const auto runs = cut / "o" / "runs";
  auto count_done = [&] {
    int n = 0;
    if (fs::exists(runs))
      for (const auto& e : fs::directory_iterator(runs)) n += e.path().extension() == ".h5";
    return n;
  };
  const auto t0 = std::chrono::steady_clock::now();
  while (count_done() < 3 && std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60))
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  pid_t pid = 0;
  std::ifstream(pidfile) >> pid;
  REQUIRE(pid > 0);
  REQUIRE(::kill(-pid, SIGKILL) == 0);  // the sweep and its running children, mid-run
  while (::kill(-pid, 0) == 0) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  const int done_at_kill = count_done();
  CHECK(done_at_kill >= 3);
  CHECK(done_at_kill < 12);  // the kill landed mid-way
  const int rc = test::run_command(test::stale_bin() + " sweep " + (cut / "sweep.toml").string() + " -q --out " +
                                       (cut / "o").string(), out);
  CAPTURE(out);
  REQUIRE(rc == 0);
  CHECK(count_done() == 12);
  CHECK(rows_without_wall(ref / "o" / "index.csv") == rows_without_wall(cut / "o" / "index.csv"));
}

TEST_SUITE_END();
