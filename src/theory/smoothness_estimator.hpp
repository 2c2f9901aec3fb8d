#pragma once
// An estimate of the smoothness constant L of f along a run, for objectives that know no L
// (the char-level GPT), so that the bound of docs/theory.md §3 can be evaluated at all:
//
//   secant  L̂_sec = max over consecutive logged iterates w_i, w_j of ‖∇f(w_j) − ∇f(w_i)‖ / ‖w_j − w_i‖
//   power   L̂_pow = max over logged iterates w of ‖H v‖, ‖v‖ = 1, H v the central difference
//           (∇f(w + εv) − ∇f(w − εv)) / (2ε), then v ← H v / ‖H v‖ (log.L_power_steps per logged iterate)
//   L̂ = max(L̂_sec, L̂_pow)
//
// Both are ≤ L for an L-smooth f: the secant by the mean value theorem (‖∇f(y) − ∇f(x)‖ ≤
// sup_[x,y] ‖∇²f‖ · ‖y − x‖), ‖H v‖ ≤ ‖∇²f(w)‖ for a unit v (up to the O(ε²) of the central
// difference). So L̂ is a LOWER estimate of L in general — L is a supremum over all of R^d and a run
// sees only its own path — and the bound evaluated with it is an estimate, not a certificate: a
// too small L̂ makes the bound smaller, never larger. Every place that writes it says so
// (/theory/L_source, the summary line, the index column L_estimated).
//
// Why the secant is the default and power iteration opt-in: the secant reuses the full gradient
// the tracker already computed at every logged iterate for ‖∇f(w_k)‖², so it costs O(d) per
// logged row and no gradient evaluation; one power step costs two full gradients (for the char-GPT
// each is kEvalBatches forward and backward passes), about what the logged row itself costs.
// Measured: results/PERFORMANCE.md, "Smoothness estimate".
// Why v is carried from one logged iterate to the next rather than restarted: the Hessian moves
// little between logged iterates, so one step per row continues a single power iteration on a
// slowly varying matrix instead of starting a fresh one (which would need tens of steps per row).
// Memory: the last logged iterate and its gradient (2d doubles; 5d with power steps: v and the two
// gradients at w ± εv), all in checkpoints but the two buffers.
// Why the first v is the first logged gradient: it draws from no random stream (a run's
// trajectory and seeds stay untouched), and a gradient weighs the large-curvature directions
// (near a minimum ∇f ≈ ∇²f (w − w_*)).
#include <cstdint>
#include <limits>
#include <string>

#include "objectives/objective.hpp"
#include "src/core/state_bag.hpp"

namespace stale {

class SmoothnessEstimator {
 public:
  // power_steps: central-difference power steps per logged iterate (0: the secant alone)
  SmoothnessEstimator(const Objective& f, int power_steps);

  // a logged iterate w with its full gradient g = ∇f(w) (the tracker's); non-finite ones are skipped
  void observe(const Vec& w, const Vec& g);

  // L̂ = max(secant, power); NaN until a pair or a power step gave a value
  double estimate() const;
  double secant() const { return secant_; }
  double power() const { return power_; }
  int64_t pairs() const { return pairs_; }
  int64_t hvps() const { return hvps_; }
  int power_steps() const { return power_steps_; }
  // wall seconds spent in observe (its cost against the run's: /theory/L_estimate_seconds)
  double seconds() const { return seconds_; }
  // "secant over consecutive logged iterates" [+ " and power iteration …"]: /theory/L_estimate_method
  std::string method() const;

  // checkpoints: a resumed run's estimate equals the uninterrupted run's bit for bit
  void save(StateBag& b) const;
  void restore(const StateBag& b);

 private:
  void power_step(const Vec& w);

  const Objective& f_;
  int power_steps_;
  double eps_scale_;  // ε = eps_scale · max(1, ‖w‖): the cube root of the precision's unit roundoff
  double secant_ = std::numeric_limits<double>::quiet_NaN();
  double power_ = std::numeric_limits<double>::quiet_NaN();
  int64_t pairs_ = 0, hvps_ = 0;
  double seconds_ = 0;
  Vec w_prev_, g_prev_;  // the last logged iterate and its gradient (empty before the first)
  Vec v_;                // the power iteration's unit vector (empty before the first step)
  Vec plus_, minus_;     // gradients at w ± εv (reused buffers)
};

}  // namespace stale
