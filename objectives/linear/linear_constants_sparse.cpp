// L, μ and f_* of least squares and logistic regression over CSR data
// (linear_constants_sparse.hpp): a dense Gram matrix only while d is small, Lanczos for L
// otherwise, CG / Newton–CG for f_*; cached on disk by a hash of the CSR content.
#include "objectives/linear/linear_constants_sparse.hpp"

#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "objectives/linear/dense_spectrum.hpp"
#include "objectives/linear/linear_constants_cache.hpp"
#include "src/core/memory.hpp"
#include "src/core/rng.hpp"

namespace stale {

namespace {

// folds n elements (of at most 8 bytes) into h, one splitmix64 round each
template <class T>
uint64_t fold(const T* p, size_t n, uint64_t h) {
  static_assert(sizeof(T) <= 8);
  for (size_t i = 0; i < n; ++i) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, sizeof(T));
    h = splitmix64(h ^ word);
  }
  return splitmix64(h ^ n);
}

// the vectors the solvers keep besides the data: Lanczos 4, CG 4, Newton–CG 8 (w, g, step,
// trial, and CG's), each of d doubles; a stray feature index of 10^9 is refused here, by size
void check_vectors(Index d, int copies, const LinearData& data) {
  check_memory(copies * static_cast<double>(d) * sizeof(double),
               "constants of " + data.description + ": " + std::to_string(copies) + " vectors of d = " +
                   std::to_string(d) + " (the data file's largest feature index)",
               "check the data file's feature indices");
}

// H = Xᵀ diag(c) X + λI formed dense from each row's nonzeros (rows hold few: Σ nnz_i² work)
Mat dense_gram(const SparseRowMat& X, const Vec& c, double lambda) {
  Mat H = Mat::Zero(X.cols(), X.cols());
  const int* outer = X.outerIndexPtr();
  const int* idx = X.innerIndexPtr();
  const double* val = X.valuePtr();
  for (Index i = 0; i < X.rows(); ++i)
    for (int p = outer[i]; p < outer[i + 1]; ++p)
      for (int q = outer[i]; q < outer[i + 1]; ++q) H(idx[q], idx[p]) += c(i) * val[p] * val[q];
  H.diagonal().array() += lambda;
  return H;
}

// λ_max and λ_min of Xᵀ diag(c) X + λI: exact from the dense Gram matrix while d is small,
// else λ_max by Lanczos and λ_min = λ (the data part's smallest eigenvalue taken as 0)
template <class Loss>
void gram_extremes(const LinearModelCpuSparse<Loss>& f, double lambda, double& lmax, double& lmin, bool& exact) {
  const LinearData& data = f.data();
  exact = true;
  if (f.dim() <= kSparseDenseGramMaxDim) {
    check_dense_hessian(f.dim(), 1, "constants of " + data.description + " (the Gram matrix, formed dense)");
    extreme_eigenvalues(dense_gram(f.X(), data.weight, lambda), lmax, lmin);
    return;
  }
  Vec a;
  const LinearOperator gram = [&](const Vec& v, Vec& out) {
    f.multiply(v, a);
    a.array() *= data.weight.array();
    f.multiply_transpose(a, out);
    out += lambda * v;
  };
  lmax = lanczos_lambda_max(gram, f.dim(), 500, 1e-14, &exact);
  lmin = lambda;
}

}  // namespace

uint64_t sparse_constants_key(const LinearData& data, const char* loss, double lambda) {
  const SparseRowMat& X = data.X_sparse;
  uint64_t h = splitmix64(0x637372ULL ^ splitmix64(kSparseConstantsVersion));  // "csr", the version
  h = fold(loss, std::strlen(loss), h);
  const int64_t shape[2] = {X.rows(), X.cols()};
  h = fold(shape, 2, h);
  h = fold(X.outerIndexPtr(), static_cast<size_t>(X.rows()) + 1, h);
  h = fold(X.innerIndexPtr(), static_cast<size_t>(X.nonZeros()), h);
  h = fold(X.valuePtr(), static_cast<size_t>(X.nonZeros()), h);
  h = fold(data.y.data(), static_cast<size_t>(data.y.size()), h);
  h = fold(data.weight.data(), static_cast<size_t>(data.weight.size()), h);
  return fold(&lambda, 1, h);
}

double lanczos_lambda_max(const LinearOperator& A, Index d, int max_steps, double rel_tol, bool* converged) {
  Rng rng(0, Stream::Eval);
  Vec v(d), v_prev = Vec::Zero(d), w;
  for (Index i = 0; i < d; ++i) v(i) = rng.normal();
  v.normalize();
  std::vector<double> alpha, beta;  // the tridiagonal T_j: diagonal alpha, off-diagonal beta
  double theta = 0, b = 0;
  int steady = 0;
  for (int j = 0; j < std::min<Index>(max_steps, d); ++j) {
    A(v, w);
    w -= b * v_prev;
    alpha.push_back(w.dot(v));
    w -= alpha.back() * v;
    b = w.norm();
    Eigen::SelfAdjointEigenSolver<Mat> es;
    es.computeFromTridiagonal(Eigen::Map<const Vec>(alpha.data(), static_cast<Index>(alpha.size())),
                              Eigen::Map<const Vec>(beta.data(), static_cast<Index>(beta.size())),
                              Eigen::EigenvaluesOnly);
    const double next = es.eigenvalues().maxCoeff();
    steady = std::abs(next - theta) <= rel_tol * std::abs(next) ? steady + 1 : 0;
    theta = next;
    // b = 0: the Krylov space is invariant and T_j's spectrum is part of A's, exactly
    if (steady >= 2 || b <= 1e-14 * std::abs(theta)) {
      if (converged) *converged = true;
      return theta;
    }
    beta.push_back(b);
    v_prev = v;
    v = w / b;
  }
  if (converged) *converged = static_cast<Index>(alpha.size()) == d;  // T_d is similar to A
  return theta;
}

CgResult conjugate_gradient(const LinearOperator& A, const Vec& b, double rel_tol, int max_iterations) {
  CgResult res;
  res.x = Vec::Zero(b.size());
  const double bnorm = b.norm();
  if (bnorm == 0) return res;
  Vec r = b, p = r, Ap;
  double rr = r.squaredNorm();
  for (; res.iterations < max_iterations && std::sqrt(rr) > rel_tol * bnorm; ++res.iterations) {
    A(p, Ap);
    const double pAp = p.dot(Ap);
    if (!(pAp > 0)) break;  // p in A's null space: b's component there is rounding
    const double step = rr / pAp;
    res.x += step * p;
    r -= step * Ap;
    const double rr_next = r.squaredNorm();
    p = r + (rr_next / rr) * p;
    rr = rr_next;
  }
  res.rel_residual = std::sqrt(rr) / bnorm;
  return res;
}

ObjectiveConstants least_squares_constants(const LeastSquaresCpuSparse& f) {
  const LinearData& data = f.data();
  check_vectors(f.dim(), 6, data);
  const uint64_t key = sparse_constants_key(data, "squared", 0.0);
  CachedConstants cc;
  ObjectiveConstants c;
  if (load_cached(key, f.dim(), cc) && cc.w_star.size() == f.dim()) {
    c.L = cc.lambda_max;
    c.L_exact = true;
    c.mu = std::max(cc.lambda_min, 0.0);
    c.f_star = cc.f_star;
    c.w_star = cc.w_star;
    c.f_star_method = cc.method + " (cached)";
    return c;
  }
  bool exact = true;
  gram_extremes(f, 0.0, cc.lambda_max, cc.lambda_min, exact);
  if (f.dim() > kSparseDenseGramMaxDim) cc.lambda_min = 0;  // unknown (exactly 0 when n < d)
  c.L = cc.lambda_max;
  c.L_exact = exact;
  c.mu = std::max(cc.lambda_min, 0.0);
  // normal equations XᵀCX w = XᵀC y; y − Xw's part outside X's range is what f_* measures
  Vec cy = data.weight.cwiseProduct(data.y), rhs, a;
  f.multiply_transpose(cy, rhs);
  const LinearOperator H = [&](const Vec& v, Vec& out) {
    f.multiply(v, a);
    a.array() *= data.weight.array();
    f.multiply_transpose(a, out);
  };
  const int max_it = static_cast<int>(std::min<Index>(100000, std::max<Index>(1000, 10 * f.dim())));
  const CgResult cg = conjugate_gradient(H, rhs, 1e-13, max_it);
  char buf[160];
  std::snprintf(buf, sizeof buf, "normal equations (CG, %d iterations, |r|/|b| = %.2e)", cg.iterations, cg.rel_residual);
  keep_solution(key, f.dim(), f.convex_value(cg.x), cg.x, buf, cg.rel_residual <= 1e-10, cc, c);
  return c;
}

ObjectiveConstants logistic_constants(const LogisticCpuSparse& f) {
  const LinearData& data = f.data();
  const double lambda = f.l2();
  check_vectors(f.dim(), 10, data);
  const uint64_t key = sparse_constants_key(data, "logistic", lambda);
  CachedConstants cc;
  ObjectiveConstants c;
  c.L_exact = false;  // ¼ λ_max is an upper bound of the logistic Hessian's largest eigenvalue
  c.mu = lambda;
  if (load_cached(key, f.dim(), cc) && cc.w_star.size() == f.dim()) {
    c.L = 0.25 * (cc.lambda_max - lambda) + lambda;
    c.f_star = cc.f_star;
    c.w_star = cc.w_star;
    c.f_star_method = cc.method + " (cached)";
    return c;
  }
  bool exact = true;
  gram_extremes(f, lambda, cc.lambda_max, cc.lambda_min, exact);
  c.L = 0.25 * (cc.lambda_max - lambda) + lambda;
  // Newton–CG: the Newton system (XᵀDX + λI) p = g by CG to a forcing tolerance
  // η = min(0.1, ‖g‖/‖g0‖), which keeps the outer iteration superlinear
  Vec w = Vec::Zero(f.dim()), g, a, curv, u;
  double fw = f.convex_value_grad(w, g);
  const double g0 = g.norm();
  int it = 0, inner = 0;
  bool at_precision = false, stalled = false;
  for (; it < 100 && g.norm() > 1e-12 * g0; ++it) {
    f.multiply(w, a);
    curv.resize(a.size());
    for (Index i = 0; i < a.size(); ++i) curv(i) = data.weight(i) * LogisticLoss::curvature(a(i), data.y(i));
    const LinearOperator H = [&](const Vec& v, Vec& out) {
      f.multiply(v, u);
      u.array() *= curv.array();
      f.multiply_transpose(u, out);
      out += lambda * v;
    };
    const CgResult cg = conjugate_gradient(H, g, std::min(0.1, g.norm() / g0), 10000);
    inner += cg.iterations;
    const Vec& step = cg.x;
    const double slope = g.dot(step);
    // the Newton decrement gᵀH⁻¹g / 2 estimates f(w) − f_*; at the rounding of f, stop
    if (0.5 * slope <= 1e-15 * std::max(1.0, std::abs(fw))) {
      at_precision = true;
      break;
    }
    double t = 1.0, ft = 0;
    Vec trial;
    for (int ls = 0; ls < 60; ++ls, t *= 0.5) {  // Armijo backtracking
      trial = w - t * step;
      ft = f.convex_value(trial);
      if (ft <= fw - 1e-4 * t * slope) break;
    }
    if (!(ft < fw)) {  // no further progress in floating point
      stalled = true;
      break;
    }
    w = trial;
    fw = f.convex_value_grad(w, g);
  }
  const double rel = g0 > 0 ? g.norm() / g0 : 0.0;
  char buf[160];
  std::snprintf(buf, sizeof buf, "newton-cg, %d steps (%d cg), |g|/|g0| = %.2e%s", it, inner, rel,
                at_precision ? ", Newton decrement at machine precision" : "");
  keep_solution(key, f.dim(), fw, w, buf, newton_converged(rel, at_precision, stalled), cc, c);
  return c;
}

}  // namespace stale
