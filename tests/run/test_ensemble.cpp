// Lockstep ensembles (docs/design.md "Ensembles"): every column's run file equals its
// separate run's — bit for bit on least squares (the tracker's products sum each column as
// the single tracker does, src/core/block_product.hpp) and for one column, to rounding on
// logistic regression (its gradient Xᵀ ℓ'(XW) is a GEMM) — for every registered method that
// forms ensembles, with a diverging column among converging ones. A lone run is the same loop
// with one column (optimizers/rpd.cpp, optimizers/schedule_executor.cpp): these tests are the
// loop's regression tests at P > 1, tests/golden's digests at P = 1.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "objectives/objective_factory.hpp"
#include "objectives/objective_registry.hpp"
#include "optimizers/method.hpp"
#include "optimizers/method_registry.hpp"
#include "src/backend/backend.hpp"
#include "src/io/h5.hpp"
#include "src/run/runner.hpp"
#include "src/run/sweep.hpp"
#include "tests/test_util.hpp"

using namespace stale;
namespace fs = std::filesystem;

namespace {

const char* kSeries[] = {"k", "time", "loss", "subopt", "grad_norm_sq", "grad_norm_sq_mean", "stale_dist", "stage",
                         "batch", "bound", "bound_opt", "bound_stoch", "bound_stale", "G", "batch_loss"};

// The largest difference between two run files' metric series and iterates, each relative
// to the largest magnitude of its series (a difference of rounding size relative to the
// values the series takes; f − f_* near convergence is a difference of two O(f_*) numbers).
// Infinite when the files differ in status, length or the pattern of non-finite values.
double max_difference(const fs::path& a, const fs::path& b) {
  auto fa = h5::open_file_readonly(a.string()), fb = h5::open_file_readonly(b.string());
  if (h5::read_attr_string(fa.id(), "status") != h5::read_attr_string(fb.id(), "status")) return INFINITY;
  double worst = 0;
  auto compare = [&](const std::vector<double>& va, const std::vector<double>& vb) {
    if (va.size() != vb.size()) return worst = INFINITY, void();
    double scale = 0;
    for (double v : va)
      if (std::isfinite(v)) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < va.size(); ++i) {
      if (std::isfinite(va[i]) != std::isfinite(vb[i])) return worst = INFINITY, void();
      if (!std::isfinite(va[i])) continue;
      if (scale > 0) worst = std::max(worst, std::abs(va[i] - vb[i]) / scale);
    }
  };
  for (const char* s : kSeries) {
    const std::string n = std::string("metrics/") + s;
    compare(h5::read_vector_double(fa.id(), n), h5::read_vector_double(fb.id(), n));
  }
  hsize_t ra = 0, ca = 0, rb = 0, cb = 0;
  compare(h5::read_matrix_double(fa.id(), "iterates", ra, ca), h5::read_matrix_double(fb.id(), "iterates", rb, cb));
  // what the run measured beside its metrics: delay table and moments, the schedule's crossings
  for (const char* n : {"delays", "delay_moments/mean", "delay_moments/second", "delay_moments/max",
                        "delay_moments/count", "schedule/max_crossed_measured"}) {
    const bool in_a = h5::exists(fa.id(), n), in_b = h5::exists(fb.id(), n);
    if (in_a != in_b) return INFINITY;
    if (in_a) compare(h5::read_vector_double(fa.id(), n), h5::read_vector_double(fb.id(), n));
  }
  return worst;
}

Config column_config(const std::string& body, double lr) {
  Config c = Config::from_string(body, "ensemble.toml");
  c.set("method.lr", ConfigValue(lr), "test");
  return c;
}

// runs `lrs` separately and as one ensemble; returns the worst column difference and checks
// the statuses
double ensemble_vs_separate(const std::string& name, const std::string& body, const std::vector<double>& lrs,
                            std::vector<std::string>* statuses = nullptr) {
  const auto dir = test::temp_dir("ensemble-" + name);
  std::vector<EnsembleColumn> columns;
  for (size_t i = 0; i < lrs.size(); ++i) {
    const Config c = column_config(body, lrs[i]);
    run_experiment(c, (dir / ("single" + std::to_string(i) + ".h5")).string(), false);
    columns.push_back({c, (dir / ("column" + std::to_string(i) + ".h5")).string()});
  }
  const auto results = run_ensemble_experiment(columns);
  double worst = 0;
  for (size_t i = 0; i < lrs.size(); ++i) {
    CAPTURE(i);
    REQUIRE(results[i].error.empty());
    if (statuses) statuses->push_back(results[i].result.status);
    worst = std::max(worst, max_difference(dir / ("single" + std::to_string(i) + ".h5"),
                                           dir / ("column" + std::to_string(i) + ".h5")));
  }
  MESSAGE(name << ": worst column difference " << worst);
  return worst;
}

std::string base(const std::string& objective, const std::string& method, const std::string& extra = "") {
  return "seed = 5\nbackend = \"cpu\"\n[objective]\nname = \"" + objective +
         "\"\ngenerator = \"" + (objective == "quadratic" ? "random" : "synthetic") +
         "\"\ndim = 48\nsamples = 96\nbatch_size = 8\nstages = 4\n[method]\nname = \"" + method +
         "\"\nupdates = 480\n[log]\nprogress = false\nevery = 3\n" + extra;
}

// logistic: rounding differences of GEMM against GEMV summation, grown over a few hundred
// stale updates
constexpr double kColumnTolerance = 1e-12;

}  // namespace

TEST_SUITE("run") {

// Every registered method that forms ensembles (all but the fresh-read ones) on every objective
// whose registry entry says its cpu twin batches columns: each column equals its run alone, bit
// for bit for one column and on least squares, to kColumnTolerance on logistic. Iterates the
// registries, so a new method or objective is covered without an edit here.
TEST_CASE("EveryRegisteredMethodsEnsembleColumnsEqualItsSeparateRuns") {
  int pairs = 0;
  std::set<std::string> covered;
  for (const auto& o : ObjectiveRegistry::entries()) {
    if (!o.ensembles_on_cpu) continue;
    for (const auto& m : MethodRegistry::entries()) {
      if (m.kind == MethodKind::Fresh) continue;
      CAPTURE(o.name);
      CAPTURE(m.name);
      const std::string extra = m.kind == MethodKind::DelayDriven ? "[delay]\nname = \"uniform\"\nmax = 5\n" : "";
      std::string body = base(o.name, m.name, extra);
      const std::string gen = "generator = \"" + std::string(o.name == "quadratic" ? "random" : "synthetic") + "\"";
      body.replace(body.find(gen), gen.size(), "generator = \"" + o.generators.front().name + "\"");
      {
        // a lockstep ensemble indeed: a method whose columns ran one after another would pass
        // the comparison below without testing the ensemble loop
        const Config c = column_config(body, 0.01);
        const auto f = make_objective(c, BackendKind::Cpu);
        CHECK(make_method(c, *f)->runs_ensembles());
      }
      CHECK(ensemble_vs_separate("registry-one-" + o.name + "-" + m.name, body, {0.01}) == 0.0);
      const double worst = ensemble_vs_separate("registry-" + o.name + "-" + m.name, body, {0.002, 0.005, 0.01, 0.02});
      if (o.name == "quadratic") CHECK(worst == 0.0);
      else CHECK(worst <= kColumnTolerance);
      ++pairs;
      covered.insert(m.name);
    }
  }
  CHECK(pairs >= 2 * 12);  // quadratic and logistic × rpd and the eleven schedule methods, at least
  // the schedule methods added after the first ensembles, pinned: each still registered and covered
  for (const char* name : {"pipemare", "zb-h1", "interleaved", "2bw", "gpipe"}) {
    CAPTURE(name);
    CHECK(covered.count(name) == 1);
  }
}

TEST_CASE("OneColumnEnsembleIsItsSeparateRunBitForBit") {
  for (const std::string method : {"rpd", "pipedream", "paci", "localsgd"}) {
    CAPTURE(method);
    const std::string extra = method == "rpd" ? "[delay]\nname = \"uniform\"\nmax = 5\n" : "";
    CHECK(ensemble_vs_separate("one-" + method, base("quadratic", method, extra), {0.01}) == 0.0);
  }
}

TEST_CASE("EnsembleColumnsEqualSeparateRuns") {
  const std::vector<double> lrs = {0.002, 0.005, 0.01, 0.02};
  for (const std::string objective : {"quadratic", "logistic"}) {
    for (const std::string method : {"rpd", "pipedream", "paci", "localsgd", "1f1b-flush"}) {
      CAPTURE(objective);
      CAPTURE(method);
      const std::string extra = method == "rpd" ? "[delay]\nname = \"uniform\"\nmax = 5\n" : "";
      const double worst = ensemble_vs_separate(objective + "-" + method, base(objective, method, extra), lrs);
      if (objective == "quadratic") CHECK(worst == 0.0);
      else CHECK(worst <= kColumnTolerance);
    }
  }
}

// objective.nonconvex_reg: each column's gradients, stage backward passes and tracked metrics
// add the regulariser from its own point, as its separate run does
TEST_CASE("EnsembleColumnsEqualSeparateRunsWithTheNonconvexRegulariser") {
  const std::vector<double> lrs = {0.005, 0.01, 0.02};
  for (const std::string objective : {"quadratic", "logistic"}) {
    for (const std::string method : {"rpd", "pipedream", "paci"}) {
      CAPTURE(objective);
      CAPTURE(method);
      const std::string extra = method == "rpd" ? "[delay]\nname = \"uniform\"\nmax = 5\n" : "";
      std::string body = base(objective, method, extra);
      const std::string stages = "stages = 4\n";
      body.replace(body.find(stages), stages.size(), stages + "nonconvex_reg = 0.3\n");
      const double worst = ensemble_vs_separate("nonconvex-" + objective + "-" + method, body, lrs);
      if (objective == "quadratic") CHECK(worst == 0.0);
      else CHECK(worst <= kColumnTolerance);
    }
  }
}

TEST_CASE("EnsembleColumnsWithNoiseMomentumAndAReplayedSchedule") {
  // shared noise draws, per-column momentum state, RPD replaying PipeDream's delay table
  Config noisy = Config::from_string(base("quadratic", "pipedream"), "n.toml");
  noisy.set("objective.grad_noise_std", ConfigValue(0.1), "test");
  CHECK(ensemble_vs_separate("noise", noisy.to_toml(), {0.004, 0.008}) == 0.0);
  Config momentum = Config::from_string(base("quadratic", "paci"), "m.toml");
  momentum.set("method.optimizer", ConfigValue(std::string("momentum")), "test");
  CHECK(ensemble_vs_separate("momentum", momentum.to_toml(), {0.002, 0.004}) == 0.0);
  Config replay = Config::from_string(base("quadratic", "rpd", "[delay]\nname = \"schedule\"\nschedule = \"pipedream\"\n"), "r.toml");
  replay.set("objective.grad_noise_std", ConfigValue(0.1), "test");
  CHECK(ensemble_vs_separate("replay", replay.to_toml(), {0.003, 0.006, 0.009}) == 0.0);
}

TEST_CASE("ADivergingColumnStopsAsItsSeparateRunAndTheOthersGoOn") {
  for (const std::string method : {"rpd", "pipedream", "paci", "localsgd"}) {
    CAPTURE(method);
    const std::string extra = method == "rpd" ? "[delay]\nname = \"uniform\"\nmax = 5\n" : "";
    std::vector<std::string> status;
    CHECK(ensemble_vs_separate("diverge-" + method, base("quadratic", method, extra), {0.005, 3.0, 0.01}, &status) ==
          0.0);
    CHECK(status == std::vector<std::string>{"ok", "diverged", "ok"});
  }
}

TEST_CASE("AColumnThatFailsItsChecksIsReportedAndTheOthersRun") {
  const auto dir = test::temp_dir("ensemble-bad");
  const std::string body = base("quadratic", "pipedream");
  Config bad = column_config(body, 0.01);
  bad.set("delay.max", ConfigValue(int64_t{4}), "test");  // pipedream does not read a delay model
  const auto results = run_ensemble_experiment(
      {{column_config(body, 0.01), (dir / "a.h5").string()}, {bad, (dir / "b.h5").string()}});
  CHECK(results[0].error.empty());
  CHECK(results[0].result.status == "ok");
  CHECK(results[1].error.find("delay.max") != std::string::npos);
  CHECK(fs::exists(dir / "a.h5"));
  CHECK(!fs::exists(dir / "b.h5"));
  CHECK(!fs::exists(dir / "b.h5.partial"));
}

TEST_CASE("ASweepGroupsAStepSizeGridIntoEnsemblesWhateverTheJobsShardsOrResume") {
  const std::string body =
      "[grid]\n\"method.lr\" = [0.002, 0.004, 0.008, 0.016, 2.0]\n[zip]\n\"method.name\" = [\"rpd\", \"pipedream\", "
      "\"paci\", \"localsgd\", \"sgd\"]\n\"delay.name\" = [\"uniform\", \"zero\", \"zero\", \"zero\", \"zero\"]\n"
      "\"delay.max\" = [5, 0, 0, 0, 0]\n";
  const auto dir = test::temp_dir("ensemble-sweep");
  test::write_file(dir / "base.toml", base("quadratic", "rpd"));
  test::write_file(dir / "sweep.toml", "base = \"base.toml\"\n" + body);
  const Sweep sweep = load_sweep((dir / "sweep.toml").string());
  // 4 methods with an ensemble loop × 5 step sizes in ensembles of ≤ 3 (3 + 2), sgd's 5 alone
  const auto groups = ensemble_groups(sweep, 3);
  CHECK(groups.size() == 4 * 2 + 5);
  size_t columns = 0;
  for (const auto& g : groups) columns += g.size();
  CHECK(columns == sweep.runs.size());
  std::string out;
  auto sweep_into = [&](const std::string& name, const std::string& flags) {
    REQUIRE(test::run_command(test::stale_bin() + " sweep " + (dir / "sweep.toml").string() + " -q " + flags + " --out " +
                                  (dir / name).string(), out) == 0);
  };
  sweep_into("alone", "--ensemble 1 --jobs 2");
  sweep_into("jobs1", "--ensemble 3 --jobs 1");
  sweep_into("jobs2", "--ensemble 3 --jobs 2");
  for (int i = 0; i < 2; ++i) sweep_into("shards", "--ensemble 3 --shard " + std::to_string(i) + "/2");
  // resume: remove one column of an ensemble and one run alone; the sweep redoes them
  sweep_into("resumed", "--ensemble 3");
  int removed = 0;
  for (const auto& e : fs::directory_iterator(dir / "resumed" / "runs"))
    if (removed < 2 && e.path().extension() == ".h5") fs::remove(e.path()), ++removed;
  sweep_into("resumed", "--ensemble 3");
  int runs = 0;
  for (const auto& e : fs::directory_iterator(dir / "alone" / "runs")) {
    if (e.path().extension() != ".h5") continue;
    ++runs;
    const auto name = e.path().filename();
    CAPTURE(name);
    CHECK(max_difference(e.path(), dir / "jobs1" / "runs" / name) == 0.0);  // least squares: bit for bit
    CHECK(max_difference(dir / "jobs1" / "runs" / name, dir / "jobs2" / "runs" / name) == 0.0);
    CHECK(max_difference(dir / "jobs1" / "runs" / name, dir / "shards" / "runs" / name) == 0.0);
    CHECK(max_difference(dir / "jobs1" / "runs" / name, dir / "resumed" / "runs" / name) == 0.0);
  }
  CHECK(runs == 25);
  for (const auto& e : fs::directory_iterator(dir / "resumed" / "runs"))
    CHECK(e.path().filename().string().rfind(".redo-", 0) != 0);  // scratch columns are removed
}

}  // TEST_SUITE
