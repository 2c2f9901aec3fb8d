// An objective without an incremental tracker (Objective::make_tracker's default: robust
// regression, the char-GPT, CUDA twins, Python models) is evaluated at the run's own iterate:
// every logged loss equals f(w_k) at the logged iterate w_k, bit for bit — also for localsgd,
// whose logged iterate is the replicas' average, reset to their mean at each averaging (a
// tracker that replayed the per-replica changes onto a copy of w drifted from it by rounding).
#include <doctest/doctest.h>

#include <string>

#include "objectives/objective_factory.hpp"
#include "src/backend/backend.hpp"
#include "src/io/h5.hpp"
#include "src/run/runner.hpp"
#include "tests/support/test_util.hpp"

using namespace stale;

TEST_SUITE("run") {

TEST_CASE("TheRecomputingTrackerLogsFAtTheLoggedIterate") {
  for (const std::string method : {"rpd", "pipedream", "localsgd", "sgd"}) {
    CAPTURE(method);
    const std::string body = "seed = 3\nbackend = \"cpu\"\n[objective]\nname = \"robust\"\ngenerator = \"random\"\n"
                             "dim = 24\nsamples = 64\nbatch_size = 8\nstages = 4\n[method]\nname = \"" + method +
                             "\"\nlr = 0.05\nupdates = 400\n" + (method == "localsgd" ? "local_steps = 3\n" : "") +
                             (method == "rpd" ? "[delay]\nname = \"uniform\"\nmax = 4\n" : "") +
                             "[log]\nprogress = false\nevery = 8\niterates_every = 8\n";
    const Config cfg = Config::from_string(body, "recomputing.toml");
    const auto f = make_objective(cfg, BackendKind::Cpu);
    REQUIRE(f->make_tracker(f->initial_point(3))->follows_deltas() == false);  // the tracker this test is about
    const auto path = test::temp_dir("recomputing-" + method) / "run.h5";
    run_experiment(cfg, path.string(), false);
    auto file = h5::open_file_readonly(path.string());
    REQUIRE(h5::read_attr_string(file.id(), "status") == "ok");
    const std::vector<double> k = h5::read_vector_double(file.id(), "metrics/k");
    const std::vector<double> loss = h5::read_vector_double(file.id(), "metrics/loss");
    const std::vector<double> gns = h5::read_vector_double(file.id(), "metrics/grad_norm_sq");
    hsize_t rows = 0, cols = 0;
    const std::vector<double> W = h5::read_matrix_double(file.id(), "iterates", rows, cols);
    const std::vector<double> iterate_k = h5::read_vector_double(file.id(), "iterates_k");
    REQUIRE(rows == iterate_k.size());
    REQUIRE(rows >= 40);
    int checked = 0;
    for (hsize_t r = 0; r < rows; ++r) {
      size_t row = 0;
      while (row < k.size() && k[row] != iterate_k[r]) ++row;
      REQUIRE(row < k.size());
      const Vec w = Eigen::Map<const Vec>(W.data() + r * cols, static_cast<Index>(cols));
      Vec g;
      const double v = f->value_grad(w, g);
      CAPTURE(iterate_k[r]);
      CHECK(loss[row] == v);
      CHECK(gns[row] == g.squaredNorm());
      ++checked;
    }
    CHECK(checked == static_cast<int>(rows));
  }
}

}  // TEST_SUITE
