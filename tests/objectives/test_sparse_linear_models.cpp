// LIBSVM data stored sparse (objective.storage = "sparse", objectives/linear/linear_model_cpu_sparse.hpp)
// are the dense data in another layout: the CSR twin's loss and gradients (full, batch, block,
// stage-wise) and whole runs of sgd, rpd and pipedream equal the dense twin's to 1e-12
// relative (tol::kReordered: the same products summed in another order — nonzeros only,
// against Eigen's vectorised GEMV over every entry — a few ulps per term; a run of a few
// hundred updates at a stable step size does not amplify them past that), on a small sparse
// LIBSVM file the test writes and on w7a (skipped without the real data). The constants of
// the CSR path (dense Gram for small d, Lanczos and CG/Newton–CG otherwise) agree with the
// dense solvers; malformed files and misplaced keys are one-line errors.
#include <doctest/doctest.h>

#include <Eigen/Eigenvalues>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>

#include "objectives/batch_costs.hpp"
#include "objectives/data/libsvm.hpp"
#include "objectives/linear/linear_constants_sparse.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/objective_factory.hpp"
#include "src/core/error.hpp"
#include "src/checks/config_rules.hpp"
#include "src/run/run_in_memory.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/skip.hpp"
#include "tests/support/tolerances.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

namespace {

// n rows over d features, about 5 nonzeros a row at seeded columns (increasing), every 7th row
// empty (w7a has such rows); labels ±1 for logistic, real targets for least squares
std::string sparse_libsvm_text(Index n, Index d, bool binary, uint64_t seed) {
  Rng rng(seed, Stream::DataGen, 99);
  std::string t;
  for (Index i = 0; i < n; ++i) {
    char buf[64];
    if (binary) t += rng.uniform() < 0.4 ? "+1" : "-1";
    else std::snprintf(buf, sizeof buf, "%.17g", 3.0 * rng.normal()), t += buf;
    if (i % 7 != 3)
      for (Index j = 0; j < d; ++j)
        if (rng.uniform() < 5.0 / static_cast<double>(d)) {
          std::snprintf(buf, sizeof buf, " %lld:%.17g", static_cast<long long>(j + 1), rng.normal());
          t += buf;
        }
    t += "\n";
  }
  return t;
}

std::string write_sparse_file(Index n, Index d, bool binary, uint64_t seed = 1) {
  const auto dir = test::temp_dir("sparse");
  const auto path = dir / "sparse.libsvm";
  test::write_file(path, sparse_libsvm_text(n, d, binary, seed));
  return path.string();
}

// a logistic (libsvm generator) or least-squares (file generator) config over `data`
Config data_config(const std::string& objective, const std::string& data, const std::string& storage,
                   const std::string& extra = "") {
  const bool logistic = objective == "logistic";
  const std::string text = std::string("seed = 5\nbackend = \"cpu\"\n[objective]\nname = \"") + objective +
                           "\"\ngenerator = \"" + (logistic ? "libsvm" : "file") + "\"\ndata = \"" + data +
                           "\"\nstorage = \"" + storage + "\"\nbatch_size = 10\nstages = 4\n" + extra;
  return Config::from_string(text, "sparse.toml");
}

struct Twins {
  std::unique_ptr<Objective> dense, sparse;
};

Twins make_twins(const std::string& objective, const std::string& data, const std::string& extra = "") {
  Twins t;
  t.dense = make_objective(data_config(objective, data, "dense", extra), BackendKind::Cpu);
  t.sparse = make_objective(data_config(objective, data, "sparse", extra), BackendKind::Cpu);
  return t;
}

Vec seeded_point(Index d, uint64_t seed, double scale) {
  Rng rng(seed, Stream::Init);
  Vec w(d);
  for (Index i = 0; i < d; ++i) w(i) = scale * rng.normal();
  return w;
}

// every view of the objective at a few points: full, batch, block and stage-wise
void check_twins_agree(const Objective& dense, const Objective& sparse, double scale = 0.3) {
  REQUIRE(sparse.dim() == dense.dim());
  REQUIRE(sparse.num_batches() == dense.num_batches());
  CHECK(sparse.description().find("(CSR)") != std::string::npos);
  for (uint64_t seed : {1, 2}) {
    const Vec w = seeded_point(dense.dim(), seed, scale);
    Vec gd, gs;
    CHECK(test::rel_err(sparse.value(w), dense.value(w)) <= test::tol::kReordered);
    CHECK(test::rel_err(sparse.value_grad(w, gs), dense.value_grad(w, gd)) <= test::tol::kReordered);
    CHECK(test::rel_err(gs, gd) <= test::tol::kReordered);
    for (int m : {0, dense.num_batches() / 2, dense.num_batches() - 1}) {
      CAPTURE(m);
      CHECK(test::rel_err(sparse.batch_value_grad(w, m, gs), dense.batch_value_grad(w, m, gd)) <= test::tol::kReordered);
      CHECK(test::rel_err(gs, gd) <= test::tol::kReordered);
      for (int s = 0; s < dense.stages(); ++s) {
        Vec bd(dense.blocks().size(s)), bs(dense.blocks().size(s));
        dense.batch_block_grad(w, m, s, bd);
        sparse.batch_block_grad(w, m, s, bs);
        CHECK(test::rel_err(bs, bd) <= test::tol::kReordered);
      }
      Vec pd, ps;
      CHECK(test::rel_err(test::pipeline_value_grad(sparse, m, w, ps), test::pipeline_value_grad(dense, m, w, pd)) <=
            test::tol::kReordered);
      CHECK(test::rel_err(ps, pd) <= test::tol::kReordered);
    }
  }
  const auto &cd = dense.constants(), &cs = sparse.constants();
  CHECK(test::rel_err(cs.L, cd.L) <= test::tol::kIterativeSolver);
  CHECK(std::abs(cs.mu - cd.mu) <= test::tol::kIterativeSolver * cd.L);
  CHECK(test::rel_err(cs.f_star, cd.f_star) <= test::tol::kIterativeSolver);
  CHECK(cs.f_star_is_lower_bound == cd.f_star_is_lower_bound);
}

// the logged series and the final iterate of one run
InMemoryRun run_of(const Config& base, const std::string& method_toml) {
  Config c = base;
  std::istringstream lines(method_toml);
  for (std::string kv; std::getline(lines, kv);)
    if (!kv.empty()) c.apply_override(kv);
  return run_in_memory(c);
}

void check_runs_agree(const InMemoryRun& dense, const InMemoryRun& sparse) {
  REQUIRE(dense.result.status == "ok");
  REQUIRE(sparse.result.status == "ok");
  REQUIRE(sparse.metrics.size() == dense.metrics.size());
  REQUIRE(dense.metrics.size() > 10);
  for (size_t r = 0; r < dense.metrics.size(); ++r) {
    CAPTURE(dense.metrics[r].k);
    REQUIRE(sparse.metrics[r].k == dense.metrics[r].k);
    CHECK(sparse.metrics[r].stage == dense.metrics[r].stage);  // the same draws
    CHECK(sparse.metrics[r].batch == dense.metrics[r].batch);
    CHECK(test::rel_err(sparse.metrics[r].loss, dense.metrics[r].loss) <= test::tol::kReordered);
    CHECK(test::rel_err(sparse.metrics[r].grad_norm_sq, dense.metrics[r].grad_norm_sq) <= test::tol::kReordered);
  }
  CHECK(test::rel_err(sparse.result.final_w, dense.result.final_w) <= test::tol::kReordered);
}

// sgd, rpd over uniform delays and pipedream, each on dense and on sparse storage
void check_methods_agree(const std::string& objective, const std::string& data, const std::string& lr,
                         const std::string& extra = "") {
  for (const std::string method :
       {"method.name=\"sgd\"\nmethod.updates=400", "method.name=\"rpd\"\nmethod.updates=400\ndelay.name=\"uniform\"\ndelay.max=12",
        "method.name=\"pipedream\"\nmethod.updates=400"}) {
    CAPTURE(method);
    const std::string m = method + "\nmethod.lr=" + lr + "\nlog.every=5\nlog.progress=false";
    check_runs_agree(run_of(data_config(objective, data, "dense", extra), m),
                     run_of(data_config(objective, data, "sparse", extra), m));
  }
}

std::string error_of(const std::function<void()>& call) {
  try {
    call();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("SparseLibsvmHoldsTheDenseMatrixAsCsr") {
  const std::string path = write_sparse_file(120, 40, true);
  const LinearData dense = load_libsvm(path, 0, true, DataStorage::Dense);
  const LinearData sparse = load_libsvm(path, 0, true, DataStorage::Sparse);
  REQUIRE(sparse.sparse());
  CHECK_FALSE(dense.sparse());
  CHECK(sparse.X.size() == 0);
  CHECK(sparse.n() == dense.n());
  CHECK(sparse.d() == dense.d());
  CHECK(Mat(sparse.X_sparse.toDense()) == dense.X);  // exact: the same parsed doubles
  CHECK(sparse.y == dense.y);
  CHECK(sparse.X_sparse.nonZeros() == (dense.X.array() != 0).count());
  CHECK(sparse.description == dense.description);
  // auto keeps this small file dense
  CHECK_FALSE(load_libsvm(path, 0, true, DataStorage::Auto).sparse());
}

TEST_CASE("AutoStorageIsSparseOnlyWhenTheDenseMatrixIsLargeAndCsrSmaller") {
  CHECK_FALSE(auto_stores_sparse(25057, 300, 293207));  // w7a: 60 MB dense, kept dense
  CHECK(auto_stores_sparse(10000, 2000000, 100000));     // 160 GB dense, 1.2 MB CSR
  CHECK_FALSE(auto_stores_sparse(20000, 10000, 150000000));  // 1.6 GB dense at 75 % density: CSR is larger
  CHECK_FALSE(auto_stores_sparse(1000, 100000, 1000));   // 0.8 GB dense: under 1 GiB, dense
  CHECK(auto_stores_sparse(2000, 100000, 1000));         // 1.6 GB dense, almost empty
  CHECK(parse_data_storage("auto") == DataStorage::Auto);
  const std::string e = error_of([] { parse_data_storage("csr"); });
  CHECK(e.find("objective.storage") != std::string::npos);
  CHECK(e.find("auto, dense, sparse") != std::string::npos);
}

TEST_CASE("SparseTwinEqualsDenseTwinOnASyntheticSparseFile") {
  for (const bool logistic : {true, false}) {
    CAPTURE(logistic);
    const std::string path = write_sparse_file(300, 60, logistic);
    const Twins t = make_twins(logistic ? "logistic" : "quadratic", path);
    check_twins_agree(*t.dense, *t.sparse);
  }
}

// objective.nonconvex_reg: the CSR twin adds the same coordinate-wise regulariser, read by the
// libsvm (logistic) and file (least squares) generators alike
TEST_CASE("SparseTwinEqualsDenseTwinWithTheNonconvexRegulariser") {
  for (const bool logistic : {true, false}) {
    CAPTURE(logistic);
    const std::string path = write_sparse_file(300, 60, logistic);
    const Twins t = make_twins(logistic ? "logistic" : "quadratic", path, "nonconvex_reg = 0.4\n");
    REQUIRE(t.sparse->constants().f_star_is_lower_bound);
    check_twins_agree(*t.dense, *t.sparse, 1.2);
  }
  check_methods_agree("logistic", write_sparse_file(400, 80, true), "0.5", "nonconvex_reg = 0.2\n");
  check_methods_agree("quadratic", write_sparse_file(400, 80, false), "0.05", "nonconvex_reg = 0.2\n");
}

TEST_CASE("SparseTwinEqualsDenseTwinOnW7a") {
  if (!test::have_data_file("w7a.libsvm")) return;
  for (const std::string objective : {"logistic", "quadratic"}) {
    CAPTURE(objective);
    const Twins t = make_twins(objective, "w7a.libsvm");
    check_twins_agree(*t.dense, *t.sparse);
  }
}

TEST_CASE("SparseDataGiveTheDenseDataBatchCosts") {
  // costs.coupling = "data": the per-batch work counts the nonzeros, whatever the storage
  const std::string path = write_sparse_file(130, 45, true);
  const Twins t = make_twins("logistic", path);
  CHECK(batch_data_costs(*t.sparse) == batch_data_costs(*t.dense));
}

TEST_CASE("SparseStageWisePipelineGradientEqualsBatchGradientBitForBit") {
  const std::string path = write_sparse_file(200, 50, true);
  const auto f = make_objective(data_config("logistic", path, "sparse"), BackendKind::Cpu);
  const Vec w = seeded_point(f->dim(), 3, 0.5);
  for (int m = 0; m < f->num_batches(); m += 3) {
    Vec gb, gp;
    const double lb = f->batch_value_grad(w, m, gb);
    (void)lb;
    test::pipeline_value_grad(*f, m, w, gp);
    CHECK(std::memcmp(gb.data(), gp.data(), sizeof(double) * gb.size()) == 0);
    for (int s = 0; s < f->stages(); ++s) {
      Vec g(f->blocks().size(s));
      f->batch_block_grad(w, m, s, g);
      CHECK(std::memcmp(g.data(), gb.data() + f->blocks().offset(s), sizeof(double) * g.size()) == 0);
    }
  }
}

TEST_CASE("SparseGradientsMatchFiniteDifferences") {
  for (const bool logistic : {true, false}) {
    CAPTURE(logistic);
    const std::string path = write_sparse_file(150, 30, logistic);
    const auto f = make_objective(data_config(logistic ? "logistic" : "quadratic", path, "sparse"), BackendKind::Cpu);
    const Vec w = seeded_point(f->dim(), 4, 0.4);
    Vec g;
    f->value_grad(w, g);
    const Vec fd = test::central_difference_gradient([&](const Vec& x) { return f->value(x); }, w);
    CHECK(test::rel_err(g, fd) <= test::tol::kFiniteDifference);
    const int m = f->num_batches() - 1;
    f->batch_value_grad(w, m, g);
    const Vec fdm = test::central_difference_gradient(
        [&](const Vec& x) {
          Vec unused;
          return f->batch_value_grad(x, m, unused);
        },
        w);
    CHECK(test::rel_err(g, fdm) <= test::tol::kFiniteDifference);
  }
}

TEST_CASE("WholeRunsOnSparseDataEqualDenseRuns") {
  check_methods_agree("logistic", write_sparse_file(400, 80, true), "0.5");
  check_methods_agree("quadratic", write_sparse_file(400, 80, false), "0.05");
}

TEST_CASE("WholeRunsOnSparseW7aEqualDenseRuns") {
  if (!test::have_data_file("w7a.libsvm")) return;
  check_methods_agree("logistic", "w7a.libsvm", "0.5");
}

TEST_CASE("LanczosAndConjugateGradientsMatchDenseSolvers") {
  Rng rng(7, Stream::DataGen);
  Mat B(40, 25);
  for (Index i = 0; i < B.size(); ++i) B.data()[i] = rng.normal();
  const Mat A = B.transpose() * B;  // 25 × 25, positive definite
  const LinearOperator op = [&](const Vec& v, Vec& out) { out = A * v; };
  Eigen::SelfAdjointEigenSolver<Mat> es(A);
  bool converged = false;
  const double lmax = lanczos_lambda_max(op, 25, 100, 1e-14, &converged);
  CHECK(converged);
  CHECK(test::rel_err(lmax, es.eigenvalues().maxCoeff()) <= test::tol::kIterativeSolver);
  const Vec b = seeded_point(25, 8, 1.0);
  const CgResult cg = conjugate_gradient(op, b, 1e-13, 1000);
  CHECK(cg.rel_residual <= 1e-13);
  CHECK(test::rel_err(cg.x, Vec(A.ldlt().solve(b))) <= test::tol::kIterativeSolver);
}

TEST_CASE("SparseConstantsAboveTheDenseGramLimitUseLanczosAndAreCached") {
  // d = 5000 > kSparseDenseGramMaxDim, n = 200: XᵀCX (d × d) and X C Xᵀ (n × n) share their
  // nonzero eigenvalues, so the small dense kernel checks the Lanczos L; μ = 0 exactly (n < d)
  const auto cache = test::temp_dir("sparse-cache");
  setenv("STALE_CACHE_DIR", cache.c_str(), 1);
  const std::string path = write_sparse_file(200, 5000, false, 11);
  REQUIRE(5000 > kSparseDenseGramMaxDim);
  const Config cfg = data_config("quadratic", path, "sparse");
  const auto f = make_objective(cfg, BackendKind::Cpu);
  const auto* ls = dynamic_cast<const LeastSquaresCpuSparse*>(f.get());
  REQUIRE(ls != nullptr);
  const LinearData& data = ls->data();
  const Mat Xd = data.X_sparse.toDense();
  const Mat kernel = data.weight.cwiseSqrt().asDiagonal() * Xd * Xd.transpose() * data.weight.cwiseSqrt().asDiagonal();
  Eigen::SelfAdjointEigenSolver<Mat> es(kernel, Eigen::EigenvaluesOnly);
  const auto& c = f->constants();
  CHECK(test::rel_err(c.L, es.eigenvalues().maxCoeff()) <= test::tol::kIterativeSolver);
  CHECK(c.mu == 0.0);
  // f_* of an underdetermined least squares problem is 0 up to the CG residual, but rows
  // without features keep their targets: f_* = Σ over those rows of c_i y_i² / 2
  double f_empty = 0;
  for (Index i = 0; i < data.n(); ++i)
    if (data.X_sparse.outerIndexPtr()[i] == data.X_sparse.outerIndexPtr()[i + 1])
      f_empty += 0.5 * data.weight(i) * data.y(i) * data.y(i);
  CHECK(test::rel_err(c.f_star, f_empty) <= test::tol::kIterativeSolver);
  // the second build reads the record: the same bits
  const auto again = make_objective(cfg, BackendKind::Cpu);
  CHECK(again->constants().f_star_method.find("(cached)") != std::string::npos);
  CHECK(again->constants().L == c.L);
  CHECK(again->constants().f_star == c.f_star);
  unsetenv("STALE_CACHE_DIR");
  std::filesystem::remove_all(cache);
}

TEST_CASE("MalformedSparseFilesAndMisplacedStorageKeysAreOneLineErrors") {
  const auto dir = test::temp_dir("sparse-bad");
  struct Bad {
    std::string text, expect;
  };
  for (const Bad& b : {Bad{"+1 3:1 2:1\n", "indices must increase"}, Bad{"+1 0:1\n", "index >= 1"},
                       Bad{"x 1:1\n", "numeric label"}, Bad{"+1 1:nan\n", "not finite"}, Bad{"", "no samples"},
                       Bad{"+1 1:1\n2 2:1\n", "not binary"}, Bad{"+1 4294967296:1\n", "beyond 2147483647"}}) {
    CAPTURE(b.text);
    const auto path = dir / "bad.libsvm";
    test::write_file(path, b.text);
    const std::string e = error_of([&] { load_libsvm(path.string(), 0, true, DataStorage::Sparse); });
    CHECK(e.find(b.expect) != std::string::npos);
    CHECK(e.find(path.string()) != std::string::npos);
    CHECK(e.find('\n') == std::string::npos);
  }
  // sparse storage is for LIBSVM files: a dense format is refused naming the key
  const std::string npz = std::string(STALE_SOURCE_DIR) + "/tests/objectives/data_files/good.npz";
  const std::string e = error_of([&] { make_objective(data_config("quadratic", npz, "sparse"), BackendKind::Cpu); });
  CHECK(e.find("objective.storage") != std::string::npos);
  CHECK(e.find('\n') == std::string::npos);
  // a generator that reads no file does not read objective.storage
  Config c = test::small_config("");
  c.apply_override("objective.storage=\"sparse\"");
  const auto unread = unread_keys(c);
  REQUIRE(unread.size() == 1);
  CHECK(unread[0].first == "objective.storage");
  CHECK(unread[0].second.find("objective.generator = libsvm") != std::string::npos);
  // an invalid value lists the valid ones
  const std::string v = error_of([] { test::small_config("").apply_override("objective.storage=\"csr\""); });
  CHECK(v.find("objective.storage") != std::string::npos);
  CHECK(v.find("sparse") != std::string::npos);
}
