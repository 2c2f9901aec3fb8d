#include "src/theory/smoothness_estimator.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "src/core/error.hpp"

namespace stale {

namespace {
// unit roundoff of the arithmetic the objective evaluates in (its gradients are that accurate)
double unit_roundoff(const std::string& precision) {
  if (precision == "float64") return std::ldexp(1.0, -53);
  if (precision == "tf32") return std::ldexp(1.0, -11);  // tensor-core products keep 10 mantissa bits
  return std::ldexp(1.0, -24);                           // float32
}

double nan_max(double a, double b) { return std::isnan(a) ? b : std::isnan(b) ? a : std::max(a, b); }
}  // namespace

SmoothnessEstimator::SmoothnessEstimator(const Objective& f, int power_steps)
    : f_(f), power_steps_(power_steps), eps_scale_(std::cbrt(unit_roundoff(f.precision()))) {
  STALE_CHECK(power_steps >= 0, "log.L_power_steps >= 0");
}

double SmoothnessEstimator::estimate() const { return nan_max(secant_, power_); }

std::string SmoothnessEstimator::method() const {
  std::string m = "secant over consecutive logged iterates";
  if (power_steps_ > 0)
    m += " and power iteration (" + std::to_string(power_steps_) +
         " central-difference Hessian-vector products per logged iterate, warm-started)";
  return m;
}

void SmoothnessEstimator::observe(const Vec& w, const Vec& g) {
  const auto t0 = std::chrono::steady_clock::now();
  struct Clock {
    double& total;
    std::chrono::steady_clock::time_point t0;
    ~Clock() { total += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); }
  } clock{seconds_, t0};
  if (!w.allFinite() || !g.allFinite()) return;
  const double scale = std::max(1.0, w.norm());
  if (w_prev_.size() == w.size()) {
    const double dw = (w - w_prev_).norm();
    // a step below √u·‖w‖ moves the point by little more than the rounding of w itself in the
    // objective's precision (float32: the same float weights), so its ratio is rounding noise;
    // above it the ratio's relative error is O(√u)
    if (dw > std::sqrt(unit_roundoff(f_.precision())) * scale) {
      const double r = (g - g_prev_).norm() / dw;
      if (std::isfinite(r)) secant_ = nan_max(secant_, r), ++pairs_;
    }
  }
  w_prev_ = w;
  g_prev_ = g;
  if (power_steps_ == 0) return;
  if (v_.size() != w.size()) {
    const double n = g.norm();
    v_ = n > 0 ? Vec(g / n) : Vec(Vec::Constant(w.size(), 1.0 / std::sqrt(static_cast<double>(w.size()))));
  }
  for (int t = 0; t < power_steps_; ++t) power_step(w);
}

void SmoothnessEstimator::power_step(const Vec& w) {
  // central difference: O(ε²) truncation against the forward difference's O(ε), and both
  // gradients from the same code path (a tracker's incrementally moved ∇f(w) would differ from
  // value_grad's by rounding that the division by ε amplifies)
  const double eps = eps_scale_ * std::max(1.0, w.norm());
  f_.value_grad(w + eps * v_, plus_);
  f_.value_grad(w - eps * v_, minus_);
  ++hvps_;
  Vec hv = (plus_ - minus_) / (2 * eps);
  const double n = hv.norm();
  if (!std::isfinite(n) || n == 0) return;
  power_ = nan_max(power_, n);
  v_ = hv / n;
}

void SmoothnessEstimator::save(StateBag& b) const {
  b.put_doubles("L", {secant_, power_, seconds_});
  b.put_ints("counts", {pairs_, hvps_});
  b.put("w_prev", w_prev_);
  b.put("g_prev", g_prev_);
  b.put("v", v_);
}

void SmoothnessEstimator::restore(const StateBag& b) {
  const auto& L = b.get_doubles("L");
  const auto& c = b.get_ints("counts");
  if (L.size() != 3 || c.size() != 2) throw UserError("checkpoint: the smoothness estimate has the wrong shape");
  secant_ = L[0], power_ = L[1], seconds_ = L[2];
  pairs_ = c[0], hvps_ = c[1];
  w_prev_ = b.get_vec("w_prev");
  g_prev_ = b.get_vec("g_prev");
  v_ = b.get_vec("v");
  for (const Vec* v : {&w_prev_, &g_prev_, &v_})
    if (v->size() != 0 && v->size() != f_.dim())
      throw UserError("checkpoint: the smoothness estimate's vectors have " + std::to_string(v->size()) +
                      " values where this objective has " + std::to_string(f_.dim()) +
                      "; --force continues only on data of the same shape");
}

}  // namespace stale
