#include "objectives/linear/dense_spectrum.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>

#include "src/core/memory.hpp"
#include "src/core/rng.hpp"

namespace stale {

void extreme_eigenvalues(const Mat& H, double& lambda_max, double& lambda_min) {
  if (H.rows() <= 4096) {
    Eigen::SelfAdjointEigenSolver<Mat> es(H, Eigen::EigenvaluesOnly);
    lambda_max = es.eigenvalues().maxCoeff();
    lambda_min = es.eigenvalues().minCoeff();
    return;
  }
  Rng rng(0, Stream::Eval);
  Vec v(H.rows());
  for (Index i = 0; i < v.size(); ++i) v(i) = rng.normal();
  v.normalize();
  double lam = 0;
  for (int it = 0; it < 2000; ++it) {
    Vec u = H * v;
    const double next = v.dot(u);
    v = u.normalized();
    if (std::abs(next - lam) <= 1e-13 * std::abs(next)) {
      lam = next;
      break;
    }
    lam = next;
  }
  lambda_max = lam;
  lambda_min = 0.0;
}

// L, μ and f_* come from dense d × d matrices (the Gram/Hessian, its factorisation): sized
// before they are formed, so a LIBSVM file with a stray feature index of 10^6 is refused
// with its d instead of std::bad_alloc
void check_dense_hessian(Index d, int copies, const std::string& what) {
  const double bytes = copies * static_cast<double>(d) * static_cast<double>(d) * sizeof(double);
  check_memory(bytes, what + ": " + std::to_string(copies) + " dense d x d matrices at d = " + std::to_string(d) +
                          " (objective.dim, or a LIBSVM file's largest feature index)",
               "reduce objective.dim or check the data file's feature indices");
}

}  // namespace stale
