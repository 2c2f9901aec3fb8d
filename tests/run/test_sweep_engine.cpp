// The in-process sweep engine: the same run files as one process per run (--isolate), a
// failed or diverged run never stops the others, and run files do not depend on the number
// of threads or jobs.
#include <doctest/doctest.h>

#include <filesystem>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "src/io/h5.hpp"
#include "src/sweep/sweep.hpp"
#include "tests/support/configs.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;
namespace fs = std::filesystem;

namespace {

const std::string kBase = test::small_run_toml({.dim = 40, .samples = 60, .batch_size = 5, .stages = 4, .updates = 600,
                                                 .tables = "[delay]\nname = \"uniform\"\nmax = 6\n", .log_every = 7});

fs::path make_sweep(const std::string& name, const std::string& base, const std::string& body) {
  const auto dir = test::temp_dir(name);
  test::write_file(dir / "base.toml", base);
  test::write_file(dir / "sweep.toml", "base = \"base.toml\"\n" + body);
  return dir;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

const char* kSeries[] = {"k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "stale_dist", "stage",
                         "batch", "bound", "bound_opt", "bound_stoch", "bound_stale", "G", "batch_loss", "val_loss"};

// every number of a run file that the run computes (not its wall clock), bit for bit
bool same_numbers(const fs::path& a, const fs::path& b) {
  auto fa = h5::open_file_readonly(a.string()), fb = h5::open_file_readonly(b.string());
  bool same = h5::read_attr_string(fa.id(), "status") == h5::read_attr_string(fb.id(), "status");
  for (const char* s : kSeries) {
    const std::string n = std::string("metrics/") + s;
    const auto va = h5::read_vector_double(fa.id(), n), vb = h5::read_vector_double(fb.id(), n);
    same &= va.size() == vb.size() && std::memcmp(va.data(), vb.data(), va.size() * sizeof(double)) == 0;
  }
  hsize_t ra = 0, ca = 0, rb = 0, cb = 0;
  const auto ia = h5::read_matrix_double(fa.id(), "iterates", ra, ca), ib = h5::read_matrix_double(fb.id(), "iterates", rb, cb);
  same &= ra == rb && ca == cb && std::memcmp(ia.data(), ib.data(), ia.size() * sizeof(double)) == 0;
  return same;
}

std::vector<fs::path> run_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir / "runs"))
    if (e.path().extension() == ".h5") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_SUITE("run") {

TEST_CASE("InProcessSweepWritesTheSameRunFilesAsOneProcessPerRun") {
  // --ensemble 1: every run alone, as in its own process (ensembles: tests/run/test_ensemble.cpp)
  // the delay model applies to rpd only: the schedule methods take theirs from the schedule
  const std::string body =
      "[grid]\n\"method.lr\" = [0.005, 0.01]\nseed = [0, 1]\n[zip]\n\"method.name\" = [\"rpd\", \"pipedream\", "
      "\"paci\", \"localsgd\"]\n\"delay.name\" = [\"uniform\", \"zero\", \"zero\", \"zero\"]\n"
      "\"delay.max\" = [6, 0, 0, 0]\n";
  const auto a = make_sweep("engine-inproc", kBase, body), b = make_sweep("engine-isolate", kBase, body);
  std::string out;
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (a / "sweep.toml").string() + " -q --jobs 2 --ensemble 1 --out " +
                                (a / "o").string(), out) == 0);
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (b / "sweep.toml").string() + " -q --isolate --jobs 2 --out " +
                                (b / "o").string(), out) == 0);
  const auto fa = run_files(a / "o"), fb = run_files(b / "o");
  REQUIRE(fa.size() == 16);
  REQUIRE(fa.size() == fb.size());
  for (size_t i = 0; i < fa.size(); ++i) {
    CAPTURE(fa[i]);
    CHECK(fa[i].filename() == fb[i].filename());
    CHECK(same_numbers(fa[i], fb[i]));
  }
}

TEST_CASE("ADivergingRunInAnInProcessSweepIsRecordedAndTheOthersFinish") {
  const auto dir = make_sweep("engine-diverge", kBase, "[grid]\n\"method.lr\" = [0.01, 1e6, 0.02]\n");
  std::string out;
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (dir / "sweep.toml").string() + " -q --out " +
                                (dir / "o").string(), out) == 0);
  std::ifstream in(dir / "o" / "index.csv");
  std::string line, all;
  int ok = 0, diverged = 0;
  while (std::getline(in, line)) {
    ok += line.find(",ok,") != std::string::npos;
    diverged += line.find(",diverged,") != std::string::npos;
  }
  CHECK(ok == 2);
  CHECK(diverged == 1);
}

TEST_CASE("TheIndexFromMemoryEqualsTheIndexReadFromTheRunFiles") {
  // the runs that finish in the sweep's process give their index rows from memory
  // (run_summary_of); --index-only reads every row back from the files: both must agree to the
  // last bit, for an ensemble (rpd's lr grid), runs alone (sgd), a diverging column and an epsilon
  // that some runs reach and others never do
  const auto dir = make_sweep("engine-index", kBase,
                              "epsilon = 0.05\n[grid]\n\"method.lr\" = [0.005, 0.02, 0.08, 1e6]\n[zip]\n"
                              "\"method.name\" = [\"rpd\", \"sgd\"]\n\"delay.name\" = [\"uniform\", \"zero\"]\n"
                              "\"delay.max\" = [6, 0]\n");
  std::string out;
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (dir / "sweep.toml").string() + " -q --jobs 2 --out " +
                                (dir / "o").string(), out) == 0);
  const std::string from_memory = read_text(dir / "o" / "index.csv");
  fs::copy_file(dir / "o" / "index.h5", dir / "memory.h5");
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (dir / "sweep.toml").string() + " -q --index-only --out " +
                                (dir / "o").string(), out) == 0);
  CHECK(from_memory == read_text(dir / "o" / "index.csv"));
  // the rows cover both outcomes and both sides of epsilon
  CHECK(from_memory.find(",diverged,") != std::string::npos);
  int reached = 0, rows = 0;
  auto fm = h5::open_file_readonly((dir / "memory.h5").string()), ff = h5::open_file_readonly((dir / "o" / "index.h5").string());
  for (const char* c : {"k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "bound", "bound_opt", "bound_stoch",
                        "bound_stale", "G", "delta", "lr_within_1_over_L", "time_to_eps_k", "time_to_eps", "wall_seconds"}) {
    CAPTURE(c);
    const auto a = h5::read_vector_double(fm.id(), c), b = h5::read_vector_double(ff.id(), c);
    REQUIRE(a.size() == 8);
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
    if (std::string(c) == "time_to_eps_k")
      for (double v : a) reached += std::isfinite(v), ++rows;
  }
  CHECK(reached > 0);
  CHECK(reached < rows);
  // the bound's terms add up to it (the observer sums them in this order), and the γ ≤ 1/L flag
  // is the run file's /theory attribute: 1 for the small steps, 0 for the diverging γ = 1e6
  const auto bound = h5::read_vector_double(fm.id(), "bound"), opt = h5::read_vector_double(fm.id(), "bound_opt"),
             stoch = h5::read_vector_double(fm.id(), "bound_stoch"), stale = h5::read_vector_double(fm.id(), "bound_stale"),
             within = h5::read_vector_double(fm.id(), "lr_within_1_over_L"), G = h5::read_vector_double(fm.id(), "G");
  std::vector<std::string> paths;  // index.csv's last column, in the rows' order
  {
    std::stringstream csv(from_memory);
    std::string line;
    std::getline(csv, line);
    while (std::getline(csv, line)) paths.push_back(line.substr(line.rfind(',') + 1));
  }
  REQUIRE(paths.size() == bound.size());
  int within_count = 0;
  for (size_t i = 0; i < bound.size(); ++i) {
    CAPTURE(paths[i]);
    if (std::isfinite(bound[i])) CHECK(bound[i] == opt[i] + stoch[i] + stale[i]);
    CHECK(G[i] > 0);
    auto f = h5::open_file_readonly((dir / "o" / paths[i]).string());
    CHECK(within[i] == static_cast<double>(h5::read_attr_int(h5::open_group(f.id(), "theory").id(), "lr_within_1_over_L")));
    within_count += within[i] == 1.0;
  }
  CHECK(within_count == 6);
}

TEST_CASE("ADuplicateGridPointNamesThePointItRepeatsInTheIndex") {
  // positions 2 and 3 repeat 0 and 1 (a literal duplicate step size): they run once, and their
  // index rows say which point they repeat; the first points' duplicate_of is empty (-1 in h5)
  const auto dir = make_sweep("engine-duplicates", kBase, "[grid]\n\"method.lr\" = [0.005, 0.005]\nseed = [1, 2]\n");
  std::string out;
  REQUIRE(test::run_command(test::stale_bin() + " sweep " + (dir / "sweep.toml").string() + " -q --jobs 2 --out " +
                                (dir / "o").string(), out) == 0);
  std::stringstream csv(read_text(dir / "o" / "index.csv"));
  std::string line;
  std::getline(csv, line);
  CHECK(line.rfind("run,position,duplicate_of,method.lr,seed,status,", 0) == 0);
  std::vector<std::string> duplicate_of, runs;
  while (std::getline(csv, line)) {
    const auto a = line.find(','), b = line.find(',', a + 1), c = line.find(',', b + 1);
    runs.push_back(line.substr(0, a));
    duplicate_of.push_back(line.substr(b + 1, c - b - 1));
  }
  CHECK(duplicate_of == std::vector<std::string>{"", "", "0", "1"});
  REQUIRE(runs.size() == 4);
  CHECK(runs[2] == runs[0]);
  CHECK(runs[3] == runs[1]);
  CHECK(run_files(dir / "o").size() == 2);
  auto f = h5::open_file_readonly((dir / "o" / "index.h5").string());
  CHECK(h5::read_vector_int(f.id(), "duplicate_of") == std::vector<int64_t>{-1, -1, 0, 1});
}

TEST_CASE("RunFilesAreBitIdenticalForAnyThreadCount") {
  // large enough (n·d ≥ 2^22) that the full-gradient GEMVs of the metrics run in parallel
  const std::string base = R"(
[objective]
name = "logistic"
generator = "synthetic"
dim = 1024
samples = 4100
batch_size = 100
stages = 4
[method]
name = "pipedream"
lr = 0.05
updates = 24
[log]
progress = false
)";
  const auto dir = test::temp_dir("threads");
  test::write_file(dir / "c.toml", base);
  std::string out;
  for (int t : {1, 2, 4}) {
    const std::string cmd = "OMP_NUM_THREADS=" + std::to_string(t) + " " + test::stale_bin() + " run " +
                            (dir / "c.toml").string() + " -q --out " + (dir / ("t" + std::to_string(t) + ".h5")).string();
    REQUIRE(test::run_command(cmd, out) == 0);
  }
  CHECK(same_numbers(dir / "t1.h5", dir / "t2.h5"));
  CHECK(same_numbers(dir / "t1.h5", dir / "t4.h5"));
}

}  // TEST_SUITE
