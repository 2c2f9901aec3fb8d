#pragma once
// Observes a method's updates and turns them into the run file's series: f − f_*, the exact
// ‖∇f(w_k)‖² at the current iterate, its running mean (1/K) Σ_{k<K} ‖∇f(w_k)‖², the running
// G = max block-gradient norm, and the bound of docs/theory.md §3
//
//   2 S Δ_0 / (γ K) + γ S L G² + γ² L² δ² G²
//
// with L and f_* from the objective and δ from the delay model. An objective that knows no L
// (the char-level GPT) gets L̂, the running estimate of src/theory/smoothness_estimator.hpp over
// the logged iterates so far (log.L_estimate; a lower estimate of L, so that bound is labelled
// an estimate), and Δ₀ from its certified lower bound f_low when f_* is unknown. An
// IterateTracker keeps f and ∇f current under block changes, so metrics every update stay cheap.
// A non-finite loss or gradient, or f − f_* far above its start, stops the run (status
// "diverged").
#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>

#include "optimizers/method.hpp"
#include "src/io/run_log.hpp"
#include "src/theory/smoothness_estimator.hpp"

namespace stale {

struct MetricsOptions {
  int64_t every = 1;            // log cadence in block updates
  int64_t iterates_every = -1;  // -1 auto, 0 none
  bool exact_mean = true;
  double lr = 0;
  int64_t delta = 0;
  int64_t updates = 0;
  // diverged when f − f_* (the loss when f_* is unknown) exceeds divergence × max(start, 1),
  // or is not finite; 0: only when not finite
  double divergence = 1e6;
  // stop as if interrupted once k ≥ stop_after (0: never; tests of checkpoint and resume)
  int64_t stop_after = 0;
  // estimate L along the run (src/theory/smoothness_estimator.hpp); the bound uses the estimate
  // only where the objective has no certified L
  bool estimate_L = false;
  int L_power_steps = 0;
  bool clock = false;  // the method keeps a simulated clock: time = 0 at k = 0 (else NaN: no clock)
};

class MetricsObserver final : public RunObserver {
 public:
  // log may be null (metrics computed, nothing written)
  MetricsObserver(const Objective& f, RunLog* log, MetricsOptions opt,
                  std::function<void(const MetricsRow&)> progress = {});

  // track f and ∇f with `t` instead of the objective's own tracker (an ensemble column's
  // view of the ensemble's tracker); call before on_start, or after restore (a resumed
  // column: `t` then takes the checkpoint's tracker state)
  void use_tracker(std::unique_ptr<IterateTracker> t);
  void on_start(const Vec& w0) override;
  void on_update(const UpdateEvent& e, ConstVecRef delta, const Vec& w) override;
  void prepare_update(const UpdateEvent& e, ConstVecRef delta) override;
  // diverged, or interrupted: a SIGINT/SIGTERM (src/run/interrupt.hpp) seen at the last update
  bool should_stop() const override { return diverged_ || interrupted_; }
  // update k's row or checkpoint holds its event: on the cadence, at every update with the
  // exact mean (its divergence check), at stop_after or a stop already requested, and when a
  // timed checkpoint is due. A stop or a checkpoint that arrives during an update the method
  // was told is not recorded waits for the next update (on_update), so that no row or
  // checkpoint ever holds a stale_dist the method left out.
  bool records_update(int64_t k) override;
  bool interrupted() const { return interrupted_ && !diverged_; }
  // checkpoints (src/run/checkpoint.hpp): due every log.flush_seconds and when interrupted
  bool checkpoint_due() const override;
  void checkpoint(StateBag&& method_state) override;
  const StateBag* resume_state() const override { return resumed_ ? &resume_method_ : nullptr; }
  // continue from a checkpoint (method/, metrics/, log/): this observer's state now, the
  // method's through resume_state()
  void restore(const StateBag& checkpoint);

  bool diverged() const { return diverged_; }
  // why the run was declared diverged (empty when it was not)
  const std::string& divergence_reason() const { return reason_; }
  const MetricsRow& last() const { return last_; }
  // the logged rows whose f − f_* fell below every earlier one's (since the start or the resume)
  const std::vector<SuboptLow>& subopt_lows() const { return lows_; }
  bool resumed() const { return resumed_; }
  double delta0() const { return delta0_; }
  double G() const { return G_; }
  double grad_norm_sq_mean() const { return k_ > 0 ? grad_sq_sum_ / static_cast<double>(k_) : current_gns_; }
  int64_t updates_done() const { return k_; }
  // the largest delay of the updates reported so far (since the start or the resume)
  int64_t delta_seen() const { return delta_seen_; }
  // log the final state if the last update was not on the cadence
  void finish(const Vec& w);
  // the smoothness estimate along the run (null when log.L_estimate is off)
  const SmoothnessEstimator* L_estimator() const { return L_est_ ? &*L_est_ : nullptr; }
  // the L the bound uses: the objective's certified L, else the estimate so far (NaN: none)
  double bound_L() const;
  // whether that L is the estimate
  bool bound_L_estimated() const { return !std::isfinite(L_) && L_est_.has_value(); }

 private:
  void record(const UpdateEvent& e, const Vec& w);
  // update k (k_ still the one before) ends a log interval or the run: the one cadence rule
  bool on_cadence(int64_t k) const { return k / opt_.every != k_ / opt_.every || k == opt_.updates; }
  void track(const UpdateEvent& e, ConstVecRef delta);
  MetricsRow make_row(const UpdateEvent& e);

  const Objective& f_;
  RunLog* log_;
  MetricsOptions opt_;
  std::function<void(const MetricsRow&)> progress_;
  std::unique_ptr<IterateTracker> tracker_, injected_;
  double f_star_, L_;  // L_: the objective's certified L (NaN when it has none)
  std::optional<SmoothnessEstimator> L_est_;
  double start_value_ = 0;
  double delta0_ = 0, G_ = 0, grad_sq_sum_ = 0, current_gns_ = 0, current_loss_ = 0;
  int64_t k_ = 0, last_logged_ = -1, logged_rows_ = 0, iterate_stride_ = 1;
  int64_t delta_seen_ = 0;  // largest delay of the updates so far: δ when the plan has none (coupled timelines)
  bool diverged_ = false;
  std::string reason_;
  void check_divergence(double grad_norm);
  bool current_fresh_ = true;
  bool prepared_ = false;  // prepare_update already passed the change to the tracker
  MetricsRow last_;
  std::vector<SuboptLow> lows_;
  UpdateEvent last_event_;
  std::chrono::steady_clock::time_point t0_;
  // checkpoint and resume
  // `details`: the event just reported has its details (see records_update)
  void latch_stop(bool details = true);
  int64_t asked_k_ = -1;         // the update records_update last answered for,
  bool asked_records_ = true;    // and its answer
  bool interrupted_ = false;
  bool flush_pending_ = false;  // a flush is due; the method's checkpoint (or the next update) does it
  bool stop_checkpointed_ = false;
  const Vec* last_w_ = nullptr;  // the iterate of the last on_update (for the tracker's checkpoint)
  bool resumed_ = false;
  StateBag resume_method_;
  StateBag resume_tracker_;  // the checkpoint's tracker state, for a tracker use_tracker hands in
};

}  // namespace stale
