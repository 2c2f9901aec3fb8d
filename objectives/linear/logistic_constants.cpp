// L, μ and f_* of L2-regularised logistic regression (linear_constants.hpp): L from the
// extreme eigenvalue of the Gram matrix (an upper bound), f_* by damped Newton (in the
// sample space when n < d); only a converged f_* is cached on disk.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "objectives/linear/dense_spectrum.hpp"
#include "objectives/linear/linear_constants.hpp"
#include "objectives/linear/linear_constants_cache.hpp"

namespace stale {

ObjectiveConstants logistic_constants(const LogisticCpu& f) {
  const auto& data = f.data();
  const double lambda = f.l2();
  // With fewer samples than features (a LIBSVM file with one large feature index) the d × d
  // Hessian λI + BᵀB, B = D^{1/2} X (n × d), is handled in the n-dimensional sample space:
  // BᵀB and BBᵀ share their nonzero eigenvalues, and (Woodbury)
  //   (λI + BᵀB)⁻¹ g = (g − Bᵀ (λI_n + BBᵀ)⁻¹ B g) / λ,
  // so a step costs O(n²d + n³) instead of O(nd² + d³) and memory is n² + nd, not d².
  const Index n = data.X.rows(), d = f.dim();
  const bool dual = n < d && lambda > 0;
  const uint64_t key = f.cache_key();
  CachedConstants cc;
  ObjectiveConstants c;
  c.L_exact = false;
  c.mu = lambda;
  if (load_cached(key, f.dim(), cc) && cc.w_star.size() == f.dim()) {
    c.L = 0.25 * (cc.lambda_max - lambda) + lambda;
    c.f_star = cc.f_star;
    c.w_star = cc.w_star;
    c.f_star_method = cc.method + " (cached)";
    return c;
  }
  if (!dual) check_dense_hessian(d, 3, "logistic constants (L by eigenvalues, f_* by damped Newton) for " + data.description);
  if (dual) {
    const Mat A = data.weight.array().sqrt().matrix().asDiagonal() * data.X;
    const Mat kernel = A * A.transpose();  // n × n, the nonzero spectrum of XᵀCX
    extreme_eigenvalues(kernel, cc.lambda_max, cc.lambda_min);
    cc.lambda_max += lambda;
  } else {
    if (d >= 2000)  // eigenvalues of a d × d matrix: O(d³), tens of seconds at d in the thousands
      std::fprintf(stderr, "logistic constants: eigenvalues of the dense %lld x %lld Gram matrix (%s)...\n",
                   static_cast<long long>(d), static_cast<long long>(d), data.description.c_str());
    extreme_eigenvalues(f.gram(), cc.lambda_max, cc.lambda_min);  // gram() = Xᵀ C X + λI
  }
  c.L = 0.25 * (cc.lambda_max - lambda) + lambda;
  Vec w = Vec::Zero(f.dim()), g;
  // damped Newton with Armijo backtracking; the λI term makes the Hessian positive definite
  double fw = f.convex_value_grad(w, g);
  const double g0 = g.norm();
  int it = 0;
  bool stalled = false, at_precision = false;
  // each step forms and factors a dense system (O(n·d² + d³)): at d in the thousands that is
  // seconds per step, so a solve that has run 2 s says on stderr what it is doing (the result
  // is cached, the next run with the same data skips it)
  const auto t0 = std::chrono::steady_clock::now();
  bool announced = false;
  auto report = [&](int step) {
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (secs < 2.0) return;
    if (!announced)
      std::fprintf(stderr, "logistic f_*: damped Newton on a dense %lld x %lld system (%s); cached afterwards in %s\n",
                   static_cast<long long>(dual ? n : d), static_cast<long long>(dual ? n : d), data.description.c_str(),
                   cache_dir().string().c_str());
    announced = true;
    std::fprintf(stderr, "logistic f_*: Newton step %d, |grad|/|grad_0| = %.2e, %.1f s\n", step, g.norm() / g0, secs);
    std::fflush(stderr);
  };
  for (; it < 200 && g.norm() > 1e-12 * g0; ++it) {
    const Vec a = data.X * w;
    Vec curv(a.size());
    for (Index i = 0; i < a.size(); ++i) curv(i) = data.weight(i) * LogisticLoss::curvature(a(i), data.y(i));
    Vec step;
    if (dual) {
      const Mat B = curv.array().max(0.0).sqrt().matrix().asDiagonal() * data.X;
      Mat small = B * B.transpose();
      small.diagonal().array() += lambda;
      step = (g - B.transpose() * small.ldlt().solve(B * g)) / lambda;
    } else {
      Mat Hm = data.X.transpose() * (curv.asDiagonal() * data.X);
      Hm.diagonal().array() += lambda;
      step = Hm.ldlt().solve(g);
    }
    const double slope = g.dot(step);
    // Newton decrement: gᵀH⁻¹g / 2 estimates f(w) − f_*. Once it is below the rounding of f
    // itself, f_* is known to machine precision and further steps only chase rounding noise
    // in ‖g‖ (which on real data stalls near 1e-11 ‖g0‖, below the 1e-12 aim)
    if (0.5 * slope <= 1e-15 * std::max(1.0, std::abs(fw))) {
      at_precision = true;
      break;
    }
    double t = 1.0;
    Vec trial;
    double ft = 0;
    for (int ls = 0; ls < 60; ++ls) {
      trial = w - t * step;
      ft = f.convex_value(trial);
      if (ft <= fw - 1e-4 * t * slope) break;
      t *= 0.5;
    }
    if (!(ft < fw) && t < 1e-12) {  // no further progress in floating point
      stalled = true;
      break;
    }
    w = trial;
    fw = f.convex_value_grad(w, g);
    report(it + 1);
  }
  char buf[160];
  std::snprintf(buf, sizeof buf, "newton%s, %d steps, |g|/|g0| = %.2e%s", dual ? " (n x n Woodbury)" : "", it,
                g.norm() / g0, at_precision ? ", Newton decrement at machine precision" : "");
  const double rel = g0 > 0 ? g.norm() / g0 : 0.0;
  keep_solution(key, f.dim(), fw, w, buf, newton_converged(rel, at_precision, stalled), cc, c);
  return c;
}

}  // namespace stale
