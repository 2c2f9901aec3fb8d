// L, μ and f_* of least squares (linear_constants.hpp): the extreme eigenvalues of the
// Gram matrix, f_* in closed form or by the normal equations; cached on disk.
#include <algorithm>

#include "objectives/linear/dense_spectrum.hpp"
#include "objectives/linear/linear_constants.hpp"
#include "objectives/linear/linear_constants_cache.hpp"

namespace stale {

ObjectiveConstants least_squares_constants(const LeastSquaresCpu& f) {
  check_dense_hessian(f.dim(), 2, "least-squares constants (L, mu by eigenvalues, f_* by LDLT)");
  const auto& d = f.data();
  const uint64_t key = f.cache_key();
  CachedConstants cc;
  const bool cached = load_cached(key, f.dim(), cc);
  if (!cached) extreme_eigenvalues(f.gram(), cc.lambda_max, cc.lambda_min);
  ObjectiveConstants c;
  c.L = cc.lambda_max;
  c.L_exact = true;
  c.mu = std::max(cc.lambda_min, 0.0);
  if (d.w_true && (d.X * *d.w_true - d.y).squaredNorm() == 0.0) {
    c.f_star = 0.0;
    c.w_star = *d.w_true;
    c.f_star_method = "closed form (y = X w_true)";
    cc.w_star.resize(0);
    cc.method = c.f_star_method;
  } else if (cached && cc.w_star.size() == f.dim()) {
    c.f_star = cc.f_star;
    c.w_star = cc.w_star;
    c.f_star_method = cc.method + " (cached)";
  } else {
    const Vec rhs = d.X.transpose() * (d.weight.asDiagonal() * d.y);
    Vec w = f.gram().ldlt().solve(rhs);
    c.f_star = f.convex_value(w);
    c.w_star = w;
    c.f_star_method = "normal equations (LDLT)";
    cc.f_star = c.f_star;
    cc.w_star = w;
    cc.method = c.f_star_method;
  }
  if (!cached) store_cached(key, f.dim(), cc);
  return c;
}

}  // namespace stale
