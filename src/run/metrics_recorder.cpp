#include "src/run/metrics_recorder.hpp"

#include <algorithm>
#include <cmath>

#include "src/core/error.hpp"
#include "src/io/metrics_schema.hpp"

namespace stale {

MetricsRecorder::MetricsRecorder(const Objective& f, RunLog* log, const MetricsOptions& opt)
    : f_(f),
      log_(log),
      cadence_(opt.every, opt.iterates_every, opt.exact_mean, opt.updates, f.dim()),
      lr_(opt.lr),
      planned_delta_(opt.delta),
      clock_(opt.clock),
      f_star_(f.constants().f_star),
      L_(f.constants().L) {
  if (opt.estimate_L) L_est_.emplace(f, opt.L_power_steps);
}

void MetricsRecorder::use_tracker(std::unique_ptr<IterateTracker> t) {
  if (!restored_) {
    injected_ = std::move(t);
    return;
  }
  t->restore(resume_tracker_);
  tracker_ = std::move(t);
}

const MetricsRow& MetricsRecorder::start(const Vec& w0) {
  t0_ = std::chrono::steady_clock::now();
  tracker_ = injected_ ? std::move(injected_) : f_.make_tracker(w0);
  tracker_->at(w0);
  current_loss_ = tracker_->value();
  current_gns_ = tracker_->gradient_sq_norm();
  // Δ₀ = f(w₀) − f_*, or f(w₀) − f_low where f_* is unknown: an upper bound on it, so the bound stays one
  delta0_ = current_loss_ - (std::isfinite(f_star_) ? f_star_ : f_.constants().f_low);
  start_value_ = std::isfinite(f_star_) ? delta0_ : current_loss_;
  k_ = 0;
  if (log_ && cadence_.updates() > 0)
    log_->expect_rows(cadence_.expected_rows(), cadence_.expected_iterates(), cadence_.updates());
  UpdateEvent e0;
  if (clock_) e0.time = 0;
  const MetricsRow& row = record(e0, w0);
  last_w_ = &w0;
  return row;
}

void MetricsRecorder::prepare(const UpdateEvent& e, ConstVecRef delta) {
  track(e, delta);
  prepared_ = true;
}

bool MetricsRecorder::advance(const UpdateEvent& e, ConstVecRef delta, const Vec& w) {
  // the sum runs over the iterates *before* each update: (1/K) Σ_{k=0}^{K−1} ‖∇f(w_k)‖²
  const int64_t steps = e.k - k_;
  if (cadence_.exact_mean()) grad_sq_sum_ += static_cast<double>(steps) * current_gns_;
  k_ = e.k;
  G_ = std::max(G_, e.grad_norm);
  if (!prepared_) track(e, delta);
  prepared_ = false;
  if (log_ && e.delays) log_->append_delays(*e.delays);
  if (e.delays)
    for (int64_t d : *e.delays) delta_seen_ = std::max(delta_seen_, d);
  const bool on_cadence = cadence_.on_cadence(k_ - steps, k_);
  current_fresh_ = false;
  if (cadence_.evaluates(on_cadence)) {
    evaluate(w);
    if (!cadence_.exact_mean()) grad_sq_sum_ += static_cast<double>(steps) * current_gns_;  // sampled mean
  }
  last_event_ = e;
  last_w_ = &w;
  return on_cadence;
}

void MetricsRecorder::evaluate(const Vec& w) {
  tracker_->at(w);
  current_loss_ = tracker_->value();
  current_gns_ = tracker_->gradient_sq_norm();
  current_fresh_ = true;
}

void MetricsRecorder::track(const UpdateEvent& e, ConstVecRef delta) {
  if (!tracker_->follows_deltas()) return;  // it reads the iterate itself (evaluate)
  if (e.stage >= 0) {
    tracker_->block_changed(e.stage, delta);
  } else {
    const auto& P = f_.blocks();
    for (int s = 0; s < P.stages(); ++s) tracker_->block_changed(s, delta.segment(P.offset(s), P.size(s)));
  }
}

MetricsRow MetricsRecorder::make_row(const UpdateEvent& e) {
  MetricsRow r;
  r.k = k_;
  r.time = e.time >= 0 ? e.time : std::nan("");
  r.loss = current_loss_;
  r.subopt = current_loss_ - f_star_;
  r.grad_norm_sq = current_gns_;
  r.grad_norm_sq_mean = k_ > 0 ? grad_sq_sum_ / static_cast<double>(k_) : current_gns_;
  r.stale_dist = e.stale_dist;
  r.stage = e.stage;
  r.batch = e.batch;
  r.G = G_;
  r.batch_loss = e.batch_loss;
  if (k_ > 0) {
    const double S = f_.stages(), g = lr_, K = static_cast<double>(k_),
                 d = static_cast<double>(bound_delay(planned_delta_, delta_seen_));
    const double L = bound_L();
    r.bound_opt = 2.0 * S * delta0_ / (g * K);
    r.bound_stoch = g * S * L * G_ * G_;
    r.bound_stale = g * g * L * L * d * d * G_ * G_;
    r.bound = r.bound_opt + r.bound_stoch + r.bound_stale;
  } else {
    r.bound = r.bound_opt = r.bound_stoch = r.bound_stale = std::nan("");
  }
  r.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
  return r;
}

double MetricsRecorder::bound_L() const {
  if (std::isfinite(L_)) return L_;
  return L_est_ ? L_est_->estimate() : std::nan("");
}

const MetricsRow& MetricsRecorder::record(const UpdateEvent& e, const Vec& w) {
  // the row's bound uses the estimate over the logged iterates up to this one (like the running G);
  // ∇f(w) is the tracker's, already computed for ‖∇f(w_k)‖² when current_fresh_
  if (L_est_ && current_fresh_) L_est_->observe(w, tracker_->gradient());
  last_ = make_row(e);
  last_.val_loss = f_.validation_loss(w);
  last_logged_ = k_;
  if (!std::isnan(last_.subopt) && (lows_.empty() || last_.subopt < lows_.back().subopt))
    lows_.push_back({static_cast<double>(last_.k), last_.time, last_.subopt});
  if (log_) {
    log_->append_metrics(last_);
    if (cadence_.iterate_due(logged_rows_, k_)) log_->append_iterate(k_, w);
  }
  ++logged_rows_;
  return last_;
}

bool MetricsRecorder::finish(const Vec& w) {
  if (last_logged_ == k_) return false;
  if (!current_fresh_) evaluate(w);
  record(last_event_, w);
  return true;
}

void MetricsRecorder::save(StateBag& m) const {
  m.put_ints("counters", {k_, last_logged_, logged_rows_, current_fresh_ ? 1 : 0});
  m.put_doubles("sums", {G_, grad_sq_sum_, current_gns_, current_loss_, start_value_, delta0_});
  m.put("wall", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
  // the largest delay read so far: δ of the bound where the plan could not know it (a coupled
  // timeline); a checkpoint without it (older, or never needed) restores 0
  m.put("delta_seen", delta_seen_);
  const UpdateEvent& e = last_event_;
  m.put_ints("event_ints", {e.k, e.stage, e.batch});
  m.put_doubles("event", {e.grad_norm, e.stale_dist, e.time, e.batch_loss});
  std::vector<int64_t> row_ints;
  std::vector<double> row_reals;
  split_row(last_, row_ints, row_reals);  // the metrics table's columns, in its order
  m.put_ints("row_ints", row_ints);
  m.put_doubles("row", row_reals);
  if (last_w_) m.put("w", *last_w_);
  StateBag t;
  tracker_->save(t);
  m.put_bag("tracker", std::move(t));
  if (L_est_) {
    StateBag l;
    L_est_->save(l);
    m.put_bag("smoothness", std::move(l));
  }
}

void MetricsRecorder::restore(const StateBag& m) {
  const auto& c = m.get_ints("counters");
  const auto& s = m.get_doubles("sums");
  const auto& ei = m.get_ints("event_ints");
  const auto& ed = m.get_doubles("event");
  if (c.size() != 4 || s.size() != 6 || ei.size() != 3 || ed.size() != 4)
    throw UserError("checkpoint: the metrics state has the wrong shape");
  k_ = c[0], last_logged_ = c[1], logged_rows_ = c[2], current_fresh_ = c[3] != 0;
  G_ = s[0], grad_sq_sum_ = s[1], current_gns_ = s[2], current_loss_ = s[3], start_value_ = s[4], delta0_ = s[5];
  delta_seen_ = m.has("delta_seen") ? m.get_ints("delta_seen").at(0) : 0;
  last_event_ = UpdateEvent{};
  last_event_.k = ei[0], last_event_.stage = static_cast<int>(ei[1]), last_event_.batch = static_cast<int>(ei[2]);
  last_event_.grad_norm = ed[0], last_event_.stale_dist = ed[1], last_event_.time = ed[2], last_event_.batch_loss = ed[3];
  last_ = join_row(m.get_ints("row_ints"), m.get_doubles("row"), "checkpoint");
  t0_ = std::chrono::steady_clock::now() -
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(m.get_double("wall")));
  tracker_ = f_.make_tracker(m.get_vec("w"));
  resume_tracker_ = m.sub("tracker");
  tracker_->restore(resume_tracker_);
  // a checkpoint written without the estimate (log.L_estimate off then) starts it afresh
  if (L_est_ && m.has("smoothness/L")) L_est_->restore(m.sub("smoothness"));
  restored_ = true;
}

}  // namespace stale
