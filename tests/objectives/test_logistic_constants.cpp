// Logistic constants with fewer samples than features (n < d), where L and f_* are computed
// in the n-dimensional sample space (Woodbury) instead of from the d × d Hessian: L must equal
// the dense Gram matrix's value and w_* must be a stationary point, to the stated tolerances.
#include <doctest/doctest.h>

#include <Eigen/Eigenvalues>
#include <cstdlib>
#include <filesystem>

#include "objectives/linear/linear_constants.hpp"
#include "objectives/linear/linear_model_cpu.hpp"
#include "tests/support/test_util.hpp"

TEST_SUITE_BEGIN("objectives");

using namespace stale;

TEST_CASE("LogisticConstantsWithFewerSamplesThanFeaturesMatchTheDenseHessian") {
  // a fresh cache, so that the solve runs
  const auto cache = test::temp_dir("logistic-cache");
  setenv("STALE_CACHE_DIR", cache.c_str(), 1);
  auto data = std::make_shared<LinearData>(make_synthetic_logistic(6, 40, 7));
  partition_batches(*data, 2);
  const double lambda = 1e-3;
  LogisticCpu f(data, 4, lambda);
  const ObjectiveConstants c = logistic_constants(f);
  CHECK(c.f_star_method.find("Woodbury") != std::string::npos);
  REQUIRE(c.w_star.has_value());

  // L = ¼ λ_max(XᵀCX) + λ from the dense d × d Gram matrix
  Eigen::SelfAdjointEigenSolver<Mat> es(f.gram(), Eigen::EigenvaluesOnly);
  const double L_dense = 0.25 * (es.eigenvalues().maxCoeff() - lambda) + lambda;
  CHECK(c.L == doctest::Approx(L_dense).epsilon(1e-10));

  // w_* is stationary: |∇f(w_*)| ≤ 1e-9 |∇f(0)|, and then f(w_*) − f_* ≤ |∇f|² / (2λ) ≈ 0
  Vec g0, g;
  f.value_grad(Vec::Zero(f.dim()), g0);
  const double fw = f.value_grad(*c.w_star, g);
  CHECK(g.norm() <= 1e-9 * g0.norm());
  CHECK(fw == doctest::Approx(c.f_star).epsilon(1e-14));
  std::filesystem::remove_all(cache);
}

TEST_SUITE_END();
