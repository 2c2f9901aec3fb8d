// Gradients of every linear objective (full, mini-batch, block, stage-wise) against central
// finite differences, with and without the smooth nonconvex regulariser, and the exact constants of the Nesterov and prescribed-spectrum
// quadratics against their closed forms.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "objectives/data/libsvm.hpp"
#include "objectives/linear/linear_constants.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/objective_factory.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/tolerances.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

namespace {

using test::rel_err;

Vec random_point(Index d, uint64_t seed, double scale = 0.3) {
  Rng rng(seed, Stream::Init);
  Vec w(d);
  for (Index i = 0; i < d; ++i) w(i) = scale * rng.normal();
  return w;
}



void check_all_gradients(const Objective& f, uint64_t seed, double scale = 0.3) {
  const Vec w = random_point(f.dim(), seed, scale);
  Vec g;
  f.value_grad(w, g);
  const Vec fd = test::central_difference_gradient([&](const Vec& x) { return f.value(x); }, w);
  CHECK(rel_err(g, fd) <= test::tol::kFiniteDifference);

  const int m = f.num_batches() / 2;
  Vec gm;
  f.batch_value_grad(w, m, gm);
  const Vec fdm = test::central_difference_gradient([&](const Vec& x) {
    Vec tmp;
    return f.batch_value_grad(x, m, tmp);
  }, w);
  CHECK(rel_err(gm, fdm) <= test::tol::kFiniteDifference);

  // every block gradient is the matching slice of the batch gradient
  for (int s = 0; s < f.stages(); ++s) {
    Vec gs(f.blocks().size(s));
    f.batch_block_grad(w, m, s, gs);
    CHECK(rel_err(gs, f.blocks().block(gm, s)) <= test::tol::kReordered);
  }

  // the stage-wise pipeline's weight gradient equals the batch gradient bit for bit (the
  // regulariser enters through the backward pass, the loss value through the head)
  Vec gp;
  test::pipeline_value_grad(f, m, w, gp);
  CHECK(std::memcmp(gp.data(), gm.data(), sizeof(double) * gm.size()) == 0);
  for (int s = 0; s < f.stages(); ++s) {
    Vec gs(f.blocks().size(s));
    f.batch_block_grad(w, m, s, gs);
    CHECK(std::memcmp(gs.data(), gp.data() + f.blocks().offset(s), sizeof(double) * gs.size()) == 0);
    // the point read in place, each block in storage of its own (RPD's mixed point straight
    // from the version store): the same bits
    std::vector<Vec> apart(static_cast<size_t>(f.stages()));
    std::vector<const double*> blocks;
    for (int i = 0; i < f.stages(); ++i) blocks.push_back((apart[static_cast<size_t>(i)] = f.blocks().block(w, i)).data());
    Vec gb(f.blocks().size(s));
    f.batch_block_grad_blocks(blocks, m, s, gb);
    CHECK(std::memcmp(gb.data(), gs.data(), sizeof(double) * gs.size()) == 0);
  }
}

std::unique_ptr<Objective> objective_from(const std::string& toml) {
  return make_objective(Config::from_string(toml, "test.toml"), BackendKind::Cpu);
}

}  // namespace

TEST_CASE("LeastSquaresGradientsMatchFiniteDifferences") {
  for (const char* gen : {"random", "nesterov", "spectrum"}) {
    CAPTURE(gen);
    auto f = objective_from(std::string(R"(
[objective]
name = "quadratic"
generator = ")") + gen + R"("
dim = 23
samples = 40
batch_size = 7
stages = 4
)");
    check_all_gradients(*f, 11);
  }
}

TEST_CASE("LogisticGradientsMatchFiniteDifferences") {
  // batches of 8 rows and of 20 (past the 16 rows the few-rows kernel takes)
  for (int batch : {8, 20}) {
    CAPTURE(batch);
    auto f = objective_from(R"(
[objective]
name = "logistic"
generator = "synthetic"
dim = 19
samples = 50
batch_size = )" + std::to_string(batch) + R"(
stages = 3
l2 = 0.01
)");
    check_all_gradients(*f, 5);
  }
}

// objective.nonconvex_reg = λ adds λ Σ w²/(1 + w²): every view of the gradient (full,
// mini-batch, block, stage-wise, read in place) still matches finite differences and each
// other bit for bit, for every generator, at points spread over the regulariser's convex
// (w² < 1/3) and concave (w² > 1/3) parts
TEST_CASE("NonconvexRegulariserGradientsMatchFiniteDifferences") {
  const std::vector<std::pair<std::string, std::string>> models = {
      {"quadratic", "random"}, {"quadratic", "nesterov"}, {"quadratic", "spectrum"}, {"logistic", "synthetic"}};
  for (const auto& [name, gen] : models) {
    for (double lambda : {0.05, 0.5, 2.0}) {
      CAPTURE(name);
      CAPTURE(gen);
      CAPTURE(lambda);
      auto f = objective_from("[objective]\nname = \"" + name + "\"\ngenerator = \"" + gen +
                              "\"\ndim = 23\nsamples = 40\nbatch_size = 7\nstages = 4\nnonconvex_reg = " +
                              std::to_string(lambda) + "\n");
      for (double scale : {0.3, 1.0, 2.5}) {
        CAPTURE(scale);
        check_all_gradients(*f, 7, scale);
      }
    }
  }
}

TEST_CASE("LibsvmLoaderNormalisesLabelsAndFeedsLogistic") {
  const auto dir = test::temp_dir("libsvm");
  test::write_file(dir / "tiny.libsvm",
                   "+1 1:0.5 3:1.0\n-1 2:-0.25\n-1\n+1 1:1 2:1 3:1 4:2\n-1 4:0.5\n+1 2:0.75 4:-1\n");
  const LinearData d = load_libsvm((dir / "tiny.libsvm").string());
  CHECK(d.n() == 6);
  CHECK(d.d() == 4);
  CHECK(d.y(0) == 1.0);
  CHECK(d.y(1) == 0.0);
  CHECK(d.X(2, 0) == 0.0);  // a row without features
  CHECK(d.X(3, 3) == 2.0);
  auto f = objective_from("[objective]\nname = \"logistic\"\ngenerator = \"libsvm\"\nbatch_size = 2\nstages = 2\ndata = \"" +
                          (dir / "tiny.libsvm").string() + "\"\n");
  CHECK(f->dim() == 4);
  CHECK(f->num_batches() == 3);
  check_all_gradients(*f, 2);
}

TEST_CASE("LibsvmLoaderRejectsMalformedLinesWithFileAndLine") {
  const auto dir = test::temp_dir("libsvm-bad");
  test::write_file(dir / "bad.libsvm", "+1 1:0.5\n-1 3:1 2:1\n");
  CHECK_THROWS_WITH_AS(load_libsvm((dir / "bad.libsvm").string()), doctest::Contains("bad.libsvm:2"), UserError);
}

// precision = "tf32" is the char-level GPT's tensor-core mode (objectives/charlm/charlm_cuda_engine.cu): a
// linear model refuses it with the key named, on either backend, before any data is made
TEST_CASE("LinearModelsRefuseTf32Precision") {
  for (const char* name : {"quadratic", "logistic"}) {
    CAPTURE(name);
    std::string msg;
    try {
      objective_from(std::string("precision = \"tf32\"\n[objective]\nname = \"") + name +
                     "\"\ndim = 16\nsamples = 32\nbatch_size = 4\nstages = 2\n");
    } catch (const UserError& e) {
      msg = e.what();
    }
    CAPTURE(msg);
    CHECK(msg.find("precision") != std::string::npos);
    CHECK(msg.find("tf32") != std::string::npos);
  }
}

TEST_CASE("NesterovQuadraticHasExactHessianAndConstants") {
  const Index d = 512;
  const double mu = 0.01;
  auto cfg = Config::from_string(R"(
[objective]
name = "quadratic"
generator = "nesterov"
dim = 512
samples = 1024
batch_size = 8
stages = 8
mu = 0.01
)", "nesterov.toml");
  auto f = make_objective(cfg, BackendKind::Cpu);
  const auto& c = f->constants();
  const double L_exact = 2 - 2 * std::cos(d * M_PI / (d + 1)) + mu;
  const double mu_exact = 2 - 2 * std::cos(M_PI / (d + 1)) + mu;
  CHECK(std::abs(L_exact - 4.00996) < 1e-5);
  CHECK(rel_err(c.L, L_exact) <= test::tol::kIterativeSolver);
  CHECK(rel_err(c.mu, mu_exact) <= test::tol::kIterativeSolver);
  CHECK(c.f_star == 0.0);
  CHECK(c.L_exact);
  // the empirical Hessian XᵀX/n is T + μI
  auto data = make_linear_data(cfg);
  const Mat H = data->X.transpose() * data->X / static_cast<double>(data->n());
  Mat A = Mat::Zero(d, d);
  for (Index i = 0; i < d; ++i) {
    A(i, i) = 2 + mu;
    if (i + 1 < d) A(i, i + 1) = A(i + 1, i) = -1;
  }
  CHECK((H - A).cwiseAbs().maxCoeff() <= 1e-10);
  // and the objective is zero at w_true
  CHECK(f->value(*c.w_star) == doctest::Approx(0.0).epsilon(1e-20));
}

TEST_CASE("PrescribedSpectrumQuadraticHasItsEigenvalues") {
  auto f = objective_from(R"(
[objective]
name = "quadratic"
generator = "spectrum"
dim = 64
samples = 128
batch_size = 4
stages = 4
mu = 0.05
L = 2.5
)");
  CHECK(f->constants().L == doctest::Approx(2.5).epsilon(1e-10));
  CHECK(f->constants().mu == doctest::Approx(0.05).epsilon(1e-10));
}

TEST_CASE("LogisticFStarIsAStationaryPoint") {
  auto f = objective_from(R"(
[objective]
name = "logistic"
generator = "synthetic"
dim = 30
samples = 200
batch_size = 10
stages = 3
l2 = 0.001
)");
  const auto& c = f->constants();
  REQUIRE(c.w_star);
  Vec g;
  const double fs = f->value_grad(*c.w_star, g);
  Vec g0;
  f->value_grad(Vec::Zero(f->dim()), g0);
  CHECK(g.norm() <= 1e-11 * g0.norm());
  CHECK(fs == doctest::Approx(c.f_star).epsilon(1e-14));
  // L is an upper bound on the Hessian's largest eigenvalue at w_*
  CHECK(c.L >= c.mu);
}

TEST_CASE("IteratorTrackerFollowsBlockChangesExactly") {
  for (const char* name : {"quadratic", "logistic"}) for (const char* reg : {"0", "0.3"}) {
    CAPTURE(name);
    CAPTURE(reg);
    auto f = objective_from(std::string("[objective]\nname = \"") + name + "\"\ngenerator = \"" +
                            (std::string(name) == "quadratic" ? "random" : "synthetic") +
                            "\"\ndim = 40\nsamples = 80\nbatch_size = 8\nstages = 5\nnonconvex_reg = " + reg + "\n");
    Vec w = random_point(f->dim(), 1);
    auto tr = f->make_tracker(w);
    Rng rng(9, Stream::Eval);
    for (int it = 0; it < 2000; ++it) {  // crosses the periodic resync
      const int s = static_cast<int>(rng.uniform_int(5));
      Vec delta(f->blocks().size(s));
      for (Index i = 0; i < delta.size(); ++i) delta(i) = 0.01 * rng.normal();
      f->blocks().block(w, s) += delta;
      tr->block_changed(s, delta);
    }
    Vec g;
    const double v = f->value_grad(w, g);
    CHECK(tr->value() == doctest::Approx(v).epsilon(1e-10));
    CHECK(rel_err(tr->gradient(), g) <= 1e-9);
  }
}

// An ensemble tracker moves the columns that changed to its leading slots before each product:
// whatever subset changes (frozen columns, one column alone, subsets that differ from block to
// block between reads), every column reads as its own single tracker fed the same changes.
TEST_CASE("EnsembleTrackerColumnsEqualSingleTrackersWhicheverColumnsChange") {
  // with the nonconvex regulariser too: it is added from each column's iterate as the single
  // tracker adds it
  for (const char* name : {"quadratic", "logistic"}) for (const char* reg : {"0", "0.3"}) {
    CAPTURE(name);
    CAPTURE(reg);
    const bool quadratic = std::string(name) == "quadratic";
    auto f = objective_from(std::string("[objective]\nname = \"") + name + "\"\ngenerator = \"" +
                            (quadratic ? "random" : "synthetic") +
                            "\"\ndim = 40\nsamples = 80\nbatch_size = 8\nstages = 5\nnonconvex_reg = " + reg + "\n");
    const int P = 6;
    Mat W(f->dim(), P);
    std::vector<std::unique_ptr<IterateTracker>> single;
    for (int p = 0; p < P; ++p) {
      W.col(p) = random_point(f->dim(), 10 + p);
      single.push_back(f->make_tracker(W.col(p)));
    }
    auto ensemble = f->make_ensemble_tracker(W);
    REQUIRE(ensemble->columns() == P);
    Rng rng(11, Stream::Eval);
    for (int it = 0; it < 2500; ++it) {  // crosses the periodic resync of the busiest columns
      // a changing subset: columns 0 and 1 change often, the last column only in bursts
      for (int p = 0; p < P; ++p) {
        const double rate = p < 2 ? 0.9 : (p == P - 1 ? (it / 300) % 2 * 0.5 : 0.3);
        if (rng.uniform() >= rate) continue;
        const int s = static_cast<int>(rng.uniform_int(5));
        Vec delta(f->blocks().size(s));
        for (Index i = 0; i < delta.size(); ++i) delta(i) = 0.01 * rng.normal();
        ensemble->block_changed(p, s, delta);
        single[p]->block_changed(s, delta);
      }
      if (rng.uniform() < 0.5) continue;  // changes of several blocks wait for the next read
      for (int p = 0; p < P; ++p) {
        CAPTURE(it);
        CAPTURE(p);
        REQUIRE(ensemble->value(p) == single[p]->value());
        if (quadratic) REQUIRE(ensemble->gradient_sq_norm(p) == single[p]->gradient_sq_norm());
        else REQUIRE(rel_err(ensemble->gradient(p), single[p]->gradient()) <= 1e-12);
      }
    }
  }
}

TEST_SUITE_END();
