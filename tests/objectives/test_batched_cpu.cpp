// The CPU batched fast paths (LinearModelCpu::batch_grad_many, value_grad_many) against the
// per-point loops they replace: columns that share a batch (GEMMs) agree to 1e-12 relative,
// a column alone in its batch is the per-point call bit for bit, and P = 1 of
// value_grad_many is value_grad bit for bit. The Objective defaults (plain loops) are the
// reference the CUDA suite also compares with.
#include <doctest/doctest.h>

#include <cstring>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "objectives/objective_factory.hpp"
#include "tests/support/finite_difference.hpp"
#include "tests/support/tolerances.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

namespace {

Mat random_points(Index d, Index P, uint64_t seed) {
  Rng rng(seed, Stream::Init, 5);
  Mat Z(d, P);
  for (Index p = 0; p < P; ++p)
    for (Index i = 0; i < d; ++i) Z(i, p) = 0.3 * rng.normal();
  return Z;
}

using test::rel_err;
bool bit_equal(const Vec& a, const Vec& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), sizeof(double) * a.size()) == 0;
}

std::unique_ptr<Objective> objective(const std::string& name, int dim = 45, int samples = 130) {
  const std::string gen = name == "logistic" ? "synthetic" : "random";
  return make_objective(Config::from_string("[objective]\nname = \"" + name + "\"\ngenerator = \"" + gen +
                                                "\"\ndim = " + std::to_string(dim) + "\nsamples = " +
                                                std::to_string(samples) + "\nbatch_size = 12\nstages = 4\nl2 = 0.02\n",
                                            "batched.toml"),
                        BackendKind::Cpu);
}

}  // namespace

TEST_CASE("BatchedGradientsOnCpuEqualThePerPointLoop") {
  for (const char* name : {"quadratic", "logistic"}) {
    CAPTURE(name);
    const auto f = objective(name);
    const int M = f->num_batches();
    // batch 4 three times, batch 0 twice, batches M−1 and 2 alone; then one batch for all
    const std::vector<std::vector<int>> layouts = {{4, 0, M - 1, 4, 2, 0, 4}, std::vector<int>(6, 3), {1}};
    for (const auto& batches : layouts) {
      const Mat Z = random_points(f->dim(), static_cast<Index>(batches.size()), 7);
      Mat G;
      f->batch_grad_many(Z, batches, G);
      REQUIRE(G.rows() == f->dim());
      REQUIRE(G.cols() == Z.cols());
      for (Index p = 0; p < Z.cols(); ++p) {
        CAPTURE(p);
        Vec g;
        f->batch_value_grad(Z.col(p), batches[p], g);
        CHECK(rel_err(G.col(p), g) <= test::tol::kReordered);
        const auto alone = std::count(batches.begin(), batches.end(), batches[p]) == 1;
        if (alone) CHECK(bit_equal(G.col(p), g));
      }
      // and the same as the base class's loop
      Mat G_loop;
      f->Objective::batch_grad_many(Z, batches, G_loop);
      CHECK(rel_err(G, G_loop) <= test::tol::kReordered);
    }
  }
}

TEST_CASE("FullGradientsAtManyPointsOnCpuEqualThePerPointLoop") {
  for (const char* name : {"quadratic", "logistic"}) {
    CAPTURE(name);
    const auto f = objective(name);
    for (Index P : {1, 5}) {
      CAPTURE(P);
      const Mat Z = random_points(f->dim(), P, 11);
      Mat G;
      Vec values;
      f->value_grad_many(Z, G, values);
      REQUIRE(values.size() == P);
      for (Index p = 0; p < P; ++p) {
        Vec g;
        const double v = f->value_grad(Z.col(p), g);
        CHECK(rel_err(G.col(p), g) <= test::tol::kReordered);
        CHECK(rel_err(values(p), v) <= test::tol::kReordered);
        if (P == 1) {
          CHECK(bit_equal(G.col(p), g));
          CHECK(values(p) == v);
        }
      }
    }
  }
}

TEST_CASE("FullGradientsAtManyPointsDoNotDependOnTheThreadCount") {
  // above the policy's threshold (n·d·P ≥ 2^22) the P-column products run in fixed chunks on
  // several threads: the same bits on 1 and 4 threads, and each column as the per-point call
  // to the tolerance of a reordered sum
#ifdef _OPENMP
  const int before = omp_get_max_threads();
  for (const char* name : {"quadratic", "logistic"}) {
    CAPTURE(name);
    const auto f = objective(name, 700, 1300);
    const Mat Z = random_points(f->dim(), 5, 13);
    Mat G1, G4;
    Vec v1, v4;
    omp_set_num_threads(1);
    f->value_grad_many(Z, G1, v1);
    omp_set_num_threads(4);
    f->value_grad_many(Z, G4, v4);
    CHECK(std::memcmp(G1.data(), G4.data(), sizeof(double) * G1.size()) == 0);
    CHECK(std::memcmp(v1.data(), v4.data(), sizeof(double) * v1.size()) == 0);
    for (Index p = 0; p < Z.cols(); ++p) {
      Vec g;
      f->value_grad(Z.col(p), g);
      CHECK(rel_err(G4.col(p), g) <= test::tol::kReordered);
    }
  }
  omp_set_num_threads(before);
#else
  MESSAGE("built without OpenMP: one thread only");
#endif
}

TEST_SUITE_END();
