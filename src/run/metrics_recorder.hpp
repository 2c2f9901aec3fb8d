#pragma once
// Turns a method's updates into the run file's series: f − f_*, the exact ‖∇f(w_k)‖² at the
// current iterate, its running mean (1/K) Σ_{k<K} ‖∇f(w_k)‖², the running G = max
// block-gradient norm, and the bound of docs/theory.md §3
//
//   2 S Δ_0 / (γ K) + γ S L G² + γ² L² δ² G²
//
// with L and f_* from the objective and δ from the plan (or measured along the run). An
// objective that knows no L (the char-level GPT) gets L̂, the running estimate of
// src/theory/smoothness_estimator.hpp over the logged iterates so far (log.L_estimate; a lower
// estimate of L, so that bound is labelled an estimate), and Δ₀ from its certified lower bound
// f_low when f_* is unknown. An IterateTracker keeps f and ∇f current under block changes, so
// metrics every update stay cheap. When it evaluates and records is LogCadence's to say.
//
// Part of MetricsObserver (src/run/metrics_observer.hpp), which decides when a row is written
// (the cadence, or a divergence); this class keeps the numbers and their checkpoint state.
#include <chrono>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "optimizers/method.hpp"
#include "src/io/run_log.hpp"
#include "src/run/log_cadence.hpp"
#include "src/run/metrics_options.hpp"
#include "src/theory/smoothness_estimator.hpp"

namespace stale {

class MetricsRecorder {
 public:
  // log may be null (metrics computed, nothing written)
  MetricsRecorder(const Objective& f, RunLog* log, const MetricsOptions& opt);

  // track f and ∇f with `t` instead of the objective's own tracker (an ensemble column's view
  // of the ensemble's tracker); before start, or after restore (`t` then takes the checkpoint's
  // tracker state)
  void use_tracker(std::unique_ptr<IterateTracker> t);
  // the tracker at w_0, Δ₀, the rows the log reserves; records row 0
  const MetricsRow& start(const Vec& w0);
  // a lockstep ensemble's change announced ahead (RunObserver::prepare_update): the tracker takes it now
  void prepare(const UpdateEvent& e, ConstVecRef delta);
  // an update's numbers before its row: the running sums and G, the tracker, the delays; f
  // and ∇f evaluated where the cadence says (evaluated()). True when the update is on the
  // cadence, i.e. its row is due.
  bool advance(const UpdateEvent& e, ConstVecRef delta, const Vec& w);
  // f and ∇f were evaluated at the last update (loss() and grad_norm_sq() are w_k's)
  bool evaluated() const { return current_fresh_; }
  // the row of the last update, e its event and w its iterate
  const MetricsRow& record(const UpdateEvent& e, const Vec& w);
  // the final state's row when the last update's is not written yet; true when it wrote one
  bool finish(const Vec& w);

  // the "metrics" part of a checkpoint: sums and counters, the last row and event, the elapsed
  // wall time and the tracker's incremental state (bit-identical metrics after a resume)
  void save(StateBag& m) const;
  void restore(const StateBag& m);

  const LogCadence& cadence() const { return cadence_; }
  const MetricsRow& last() const { return last_; }
  // the logged rows whose f − f_* fell below every earlier one's (since the start or the resume)
  const std::vector<SuboptLow>& subopt_lows() const { return lows_; }
  double loss() const { return current_loss_; }
  double grad_norm_sq() const { return current_gns_; }
  // f − f_* at w_0 (the loss where f_* is unknown): what divergence is measured against
  double start_value() const { return start_value_; }
  double delta0() const { return delta0_; }
  double G() const { return G_; }
  double grad_norm_sq_mean() const { return k_ > 0 ? grad_sq_sum_ / static_cast<double>(k_) : current_gns_; }
  int64_t updates_done() const { return k_; }
  // the largest delay of the updates reported so far (since the start or the resume)
  int64_t delta_seen() const { return delta_seen_; }
  // the smoothness estimate along the run (null when log.L_estimate is off)
  const SmoothnessEstimator* L_estimator() const { return L_est_ ? &*L_est_ : nullptr; }
  // the L the bound uses: the objective's certified L, else the estimate so far (NaN: none)
  double bound_L() const;
  // whether that L is the estimate
  bool bound_L_estimated() const { return !std::isfinite(L_) && L_est_.has_value(); }

 private:
  void track(const UpdateEvent& e, ConstVecRef delta);
  void evaluate(const Vec& w);  // f and ‖∇f‖² at w, the iterate of the update just taken
  MetricsRow make_row(const UpdateEvent& e);

  const Objective& f_;
  RunLog* log_;
  LogCadence cadence_;
  double lr_;
  int64_t planned_delta_;
  bool clock_;
  std::unique_ptr<IterateTracker> tracker_, injected_;
  double f_star_, L_;  // L_: the objective's certified L (NaN when it has none)
  std::optional<SmoothnessEstimator> L_est_;
  double start_value_ = 0;
  double delta0_ = 0, G_ = 0, grad_sq_sum_ = 0, current_gns_ = 0, current_loss_ = 0;
  int64_t k_ = 0, last_logged_ = -1, logged_rows_ = 0;
  int64_t delta_seen_ = 0;  // largest delay of the updates so far: δ when the plan has none (coupled timelines)
  bool current_fresh_ = true;
  bool prepared_ = false;  // prepare already passed the change to the tracker
  MetricsRow last_;
  std::vector<SuboptLow> lows_;
  UpdateEvent last_event_;
  std::chrono::steady_clock::time_point t0_;
  const Vec* last_w_ = nullptr;  // the iterate of the last update (for the tracker's checkpoint)
  bool restored_ = false;
  StateBag resume_tracker_;  // the checkpoint's tracker state, for a tracker use_tracker hands in
};

}  // namespace stale
