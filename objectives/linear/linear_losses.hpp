#pragma once
// Per-sample losses ℓ(a, y) of the linear models at the activation a = xᵀw, with ℓ' and ℓ''
// (docs/theory.md §7). Header-only and free of Eigen so that the CUDA twins can share them.
#include <cmath>

#ifdef __CUDACC__
#define STALE_HD __host__ __device__ inline
#else
#define STALE_HD inline
#endif

namespace stale {

// least squares: ℓ = ½ (a − y)²  →  f(w) = (1/(2n)) ‖Xw − y‖² for equal batches
struct SquaredLoss {
  static constexpr const char* name = "quadratic";
  STALE_HD static double value(double a, double y) { return 0.5 * (a - y) * (a - y); }
  STALE_HD static double deriv(double a, double y) { return a - y; }
  STALE_HD static double curvature(double, double) { return 1.0; }
};

// binary cross-entropy with y ∈ {0, 1}: ℓ = log(1 + e^a) − y a, written without overflow
struct LogisticLoss {
  static constexpr const char* name = "logistic";
  STALE_HD static double softplus(double a) { return (a > 0 ? a : 0.0) + log1p(exp(-fabs(a))); }
  STALE_HD static double sigmoid(double a) {
    return a >= 0 ? 1.0 / (1.0 + exp(-a)) : exp(a) / (1.0 + exp(a));
  }
  STALE_HD static double value(double a, double y) { return softplus(a) - y * a; }
  STALE_HD static double deriv(double a, double y) { return sigmoid(a) - y; }
  STALE_HD static double curvature(double a, double) {
    const double s = sigmoid(a);
    return s * (1.0 - s);
  }
};

}  // namespace stale
