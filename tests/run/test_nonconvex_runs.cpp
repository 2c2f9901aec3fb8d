// A run on a nonconvex objective (objective.nonconvex_reg > 0) records what it knows and no
// more: f_* is unknown, so /objective and /theory carry the certified lower bound f_low = 0 with
// f_star_is_lower_bound = 1, μ = 0, L = L_convex + 2λ; subopt is f − f_low and the bound's Δ₀ is
// f(w₀) − f_low. A convex run's file has no such attribute (its attributes are those it always
// had). The stability predictor, whose recursion is linear, refuses the key.
#include <doctest/doctest.h>

#include "objectives/objective_factory.hpp"
#include "src/io/h5.hpp"
#include "src/run/run_in_memory.hpp"
#include "src/run/runner.hpp"
#include "src/theory/stability_pattern.hpp"
#include "tests/support/user_error.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;

namespace {

std::string config_text(double lambda, const std::string& name = "quadratic") {
  return "seed = 3\nbackend = \"cpu\"\n[objective]\nname = \"" + name + "\"\ngenerator = \"" +
         (name == "quadratic" ? "random" : "synthetic") +
         "\"\ndim = 24\nsamples = 48\nbatch_size = 6\nstages = 4\nnonconvex_reg = " + std::to_string(lambda) +
         "\n[method]\nname = \"rpd\"\nlr = 0.05\nupdates = 300\n[delay]\nname = \"uniform\"\nmax = 6\n"
         "[log]\nprogress = false\nevery = 10\n";
}

}  // namespace

TEST_SUITE("run") {

TEST_CASE("ANonconvexRunRecordsTheLowerBoundInPlaceOfFStar") {
  for (const std::string name : {"quadratic", "logistic"}) {
    CAPTURE(name);
    const double lambda = 0.4;
    const Config cfg = Config::from_string(config_text(lambda, name), "nonconvex.toml");
    const double L_convex = make_objective(Config::from_string(config_text(0.0, name), "c.toml"), BackendKind::Cpu)->constants().L;

    const InMemoryRun run = run_in_memory(cfg);
    REQUIRE(run.result.status == "ok");
    CHECK(run.objective.f_star == 0.0);
    CHECK(run.objective.f_star_is_lower_bound);
    CHECK(run.objective.mu == 0.0);
    CHECK(run.objective.L == L_convex + 2 * lambda);
    CHECK(run.theory.f_star_is_lower_bound);
    CHECK(run.theory.f_star == 0.0);
    CHECK(run.theory.mu == 0.0);
    REQUIRE(run.metrics.size() > 2);
    CHECK(run.theory.delta0 == run.metrics.front().loss);  // Δ₀ = f(w₀) − 0
    for (const auto& row : run.metrics) CHECK(row.subopt == row.loss);

    const auto dir = test::temp_dir("nonconvex-run-" + name);
    const std::string path = (dir / "nonconvex.h5").string();
    REQUIRE(run_experiment(cfg, path, false).status == "ok");
    auto file = h5::open_file_readonly(path);
    for (const char* group : {"objective", "theory"}) {
      CAPTURE(group);
      auto g = h5::open_group(file.id(), group);
      CHECK(h5::read_attr_int(g.id(), "f_star_is_lower_bound") == 1);
      CHECK(h5::read_attr_double(g.id(), "f_star") == 0.0);
      CHECK(h5::read_attr_double(g.id(), "mu") == 0.0);
      CHECK(h5::read_attr_double(g.id(), "L") == L_convex + 2 * lambda);
    }
    CHECK(h5::read_attr_double(h5::open_group(file.id(), "theory").id(), "Delta0") == run.theory.delta0);

    // the convex run's file: no such attribute
    const std::string convex = (dir / "convex.h5").string();
    REQUIRE(run_experiment(Config::from_string(config_text(0.0, name), "c.toml"), convex, false).status == "ok");
    auto cf = h5::open_file_readonly(convex);
    CHECK_FALSE(h5::attr_exists(h5::open_group(cf.id(), "objective").id(), "f_star_is_lower_bound"));
    CHECK_FALSE(h5::attr_exists(h5::open_group(cf.id(), "theory").id(), "f_star_is_lower_bound"));
  }
}

TEST_CASE("TheStabilityPredictorRefusesTheNonconvexRegulariser") {
  const std::string e = test::error_of(
      [] { check_stability_objective(Config::from_string(config_text(0.25), "nonconvex.toml")); });
  CHECK(e.find("objective.nonconvex_reg") != std::string::npos);
  CHECK(e.find("0.25") != std::string::npos);
  CHECK(e.find("valid here is 0") != std::string::npos);
  CHECK(test::error_of([] { check_stability_objective(Config::from_string(config_text(0.0), "convex.toml")); }).empty());
}

}  // TEST_SUITE
