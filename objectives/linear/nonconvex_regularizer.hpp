#pragma once
// The smooth nonconvex regulariser of the linear models (objective.nonconvex_reg = λ), the one
// the nonconvex stochastic-optimisation literature benchmarks on LIBSVM data (logistic or least
// squares + λ Σ w²/(1 + w²): e.g. SpiderBoost, PAGE, MARINA), so that the harness can hold runs to
// [RPD]'s nonconvex guarantee (docs/theory.md §3, §7):
//
//   r(w)      = λ Σ_i w_i² / (1 + w_i²)                 ∈ [0, λ d)
//   ∂r/∂w_i   = 2λ w_i / (1 + w_i²)²
//   ∂²r/∂w_i² = 2λ (1 − 3 w_i²) / (1 + w_i²)³           ∈ [−λ/2, 2λ]
//
// The Hessian is diagonal: its largest curvature 2λ is at w_i = 0, its most negative −λ/2 at
// w_i² = 1. Added to a data term with Hessian H (0 ≼ H ≼ L_data I), ‖∇²f‖ ≤ L_data + 2λ, attained at
// w = 0 when L_data is (least squares): L = L_data + 2λ (nonconvex_constants below). Every term is
// coordinate-wise, so a block's gradient is the matching slice of the full gradient bit for bit,
// and an exact tracker adds it from the tracked iterate in O(d) (LinearTracker).
//
// With λ = 0 nothing here is called: every caller tests active() first, so the run of a convex
// objective executes the same arithmetic as before the regulariser existed.
#include "objectives/objective.hpp"

namespace stale {

struct NonconvexRegularizer {
  double lambda = 0;

  bool active() const { return lambda != 0; }

  static double term(double w) {
    const double q = w * w;
    return q / (1.0 + q);
  }
  static double term_derivative(double w) {
    const double q = 1.0 + w * w;
    return 2.0 * w / (q * q);
  }
  static double term_curvature(double w) {
    const double q = 1.0 + w * w;
    return 2.0 * (1.0 - 3.0 * w * w) / (q * q * q);
  }

  // r(w), summed in coordinate order (one order for every twin and tracker)
  double value(const double* w, Index n) const {
    double s = 0;
    for (Index i = 0; i < n; ++i) s += term(w[i]);
    return lambda * s;
  }
  double value(ConstVecRef w) const { return value(w.data(), w.size()); }

  // g += ∇r(w) over n coordinates (a whole point or one block)
  void add_gradient(const double* w, Index n, double* g) const {
    for (Index i = 0; i < n; ++i) g[i] += lambda * term_derivative(w[i]);
  }
  void add_gradient(ConstVecRef w, VecRef g) const { add_gradient(w.data(), w.size(), g.data()); }
  // column by column of a d × P (or d_s × P) matrix
  void add_gradient_cols(const Mat& W, Mat& G) const {
    for (Index p = 0; p < W.cols(); ++p) add_gradient(W.col(p).data(), W.rows(), G.col(p).data());
  }
  // f = convex + r at w, and with grad = ∇convex turned into ∇f: value and value_grad of every
  // linear twin (nothing added when λ = 0, so those stay the convex part bit for bit)
  double added_to(double convex, const Vec& w) const { return active() ? convex + value(w) : convex; }
  double added_to(double convex, const Vec& w, Vec& grad) const {
    if (!active()) return convex;
    add_gradient(w, grad);
    return convex + value(w);
  }
};

// The constants of f = convex part + r, from the convex part's (data term + (l2/2)‖w‖²):
//  - L + 2λ (exact when the convex part's L is: both bounds are attained at w = 0);
//  - no strong convexity is claimed (μ = 0);
//  - f_* is unknown: f_low = 0 stands in for it, a certified lower bound (squared and logistic
//    losses, the l2 term and r are all ≥ 0), and f_star_is_lower_bound says so; the bound of
//    docs/theory.md §3 then uses Δ₀ = f(w₀) − f_low ≥ f(w₀) − f_*, so it stays valid.
// With λ = 0 the convex constants are returned unchanged.
inline ObjectiveConstants nonconvex_constants(const ObjectiveConstants& convex, const NonconvexRegularizer& r) {
  if (!r.active()) return convex;
  ObjectiveConstants c;
  c.L = convex.L + 2.0 * r.lambda;
  c.L_exact = convex.L_exact;
  c.mu = 0.0;
  c.f_star = 0.0;
  c.f_star_is_lower_bound = true;
  c.f_star_method = "lower bound f_low = 0 (loss, l2 and nonconvex regulariser are >= 0; the minimum of the nonconvex f is unknown)";
  return c;
}

}  // namespace stale
