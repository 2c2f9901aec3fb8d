#include "src/run/metrics_observer.hpp"

#include "src/io/metrics_schema.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/run/interrupt.hpp"

namespace stale {

MetricsObserver::MetricsObserver(const Objective& f, RunLog* log, MetricsOptions opt,
                                 std::function<void(const MetricsRow&)> progress)
    : f_(f), log_(log), opt_(opt), progress_(std::move(progress)) {
  f_star_ = f.constants().f_star;
  L_ = f.constants().L;
  if (opt_.estimate_L) L_est_.emplace(f, opt_.L_power_steps);
  if (opt_.iterates_every < 0) opt_.iterates_every = f.dim() <= 4096 ? opt_.every : 16 * opt_.every;
}

void MetricsObserver::use_tracker(std::unique_ptr<IterateTracker> t) {
  if (!resumed_) {
    injected_ = std::move(t);
    return;
  }
  t->restore(resume_tracker_);
  tracker_ = std::move(t);
}

void MetricsObserver::on_start(const Vec& w0) {
  t0_ = std::chrono::steady_clock::now();
  tracker_ = injected_ ? std::move(injected_) : f_.make_tracker(w0);
  current_loss_ = tracker_->value();
  current_gns_ = tracker_->gradient_sq_norm();
  // Δ₀ = f(w₀) − f_*, or f(w₀) − f_low where f_* is unknown: an upper bound on it, so the bound stays one
  delta0_ = current_loss_ - (std::isfinite(f_star_) ? f_star_ : f_.constants().f_low);
  start_value_ = std::isfinite(f_star_) ? delta0_ : current_loss_;
  k_ = 0;
  if (log_ && opt_.updates > 0) {
    // row 0, one a cadence, the last; an iterate every stride-th row and the last
    const int64_t rows = opt_.updates / std::max<int64_t>(1, opt_.every) + 2;
    const int64_t stride = std::max<int64_t>(1, opt_.iterates_every / std::max<int64_t>(1, opt_.every));
    log_->expect_rows(rows, opt_.iterates_every > 0 ? rows / stride + 2 : 0, opt_.updates);
  }
  UpdateEvent e0;
  if (opt_.clock) e0.time = 0;
  record(e0, w0);
  last_w_ = &w0;
  latch_stop();
}

void MetricsObserver::latch_stop(bool details) {
  // a signal is taken at an update whose event the method computed in full (records_update);
  // stop_after is known before the update and answered there
  if ((details && stop_requested()) || (opt_.stop_after > 0 && k_ >= opt_.stop_after)) interrupted_ = true;
}

bool MetricsObserver::records_update(int64_t k) {
  asked_k_ = k;
  asked_records_ = opt_.exact_mean || on_cadence(k) || interrupted_ || stop_requested() ||
                   (opt_.stop_after > 0 && k >= opt_.stop_after) || (log_ && log_->flush_due());
  return asked_records_;
}

void MetricsObserver::on_update(const UpdateEvent& e, ConstVecRef delta, const Vec& w) {
  // the sum runs over the iterates *before* each update: (1/K) Σ_{k=0}^{K−1} ‖∇f(w_k)‖²
  const int64_t steps = e.k - k_;
  const bool cadence = on_cadence(e.k);
  // the method left this event's details out when it asked and was told they go nowhere
  const bool details = e.k != asked_k_ || asked_records_;
  if (opt_.exact_mean) grad_sq_sum_ += static_cast<double>(steps) * current_gns_;
  k_ = e.k;
  G_ = std::max(G_, e.grad_norm);
  if (!prepared_) track(e, delta);
  prepared_ = false;
  if (log_ && e.delays) log_->append_delays(*e.delays);
  if (e.delays)
    for (int64_t d : *e.delays) delta_seen_ = std::max(delta_seen_, d);
  current_fresh_ = false;
  if (opt_.exact_mean || cadence) {
    current_loss_ = tracker_->value();
    current_gns_ = tracker_->gradient_sq_norm();
    current_fresh_ = true;
    if (!opt_.exact_mean) grad_sq_sum_ += static_cast<double>(steps) * current_gns_;  // sampled mean
    check_divergence(e.grad_norm);
  } else if (!std::isfinite(e.grad_norm)) {
    diverged_ = true;
    reason_ = "the block gradient became non-finite at k = " + std::to_string(k_);
  }
  last_event_ = e;
  if (cadence || diverged_) record(e, w);
  last_w_ = &w;
  if (log_) {
    if (flush_pending_) log_->flush_now();  // the method did not checkpoint at the last boundary
    // a checkpoint stores the event: one due during an update without details waits for the
    // next update (its records_update sees it due)
    flush_pending_ = details && log_->flush_due();
  }
  latch_stop(details);
}

bool MetricsObserver::checkpoint_due() const {
  return log_ && !diverged_ && (flush_pending_ || (interrupted_ && !stop_checkpointed_));
}

// the observer's part of a checkpoint: its sums and counters, the last row and event, the
// elapsed wall time and the tracker's incremental state (bit-identical metrics after a resume)
void MetricsObserver::checkpoint(StateBag&& method_state) {
  if (!log_) return;
  StateBag b;
  b.put_bag("method", std::move(method_state));
  StateBag m;
  m.put_ints("counters", {k_, last_logged_, logged_rows_, current_fresh_ ? 1 : 0});
  m.put_doubles("sums", {G_, grad_sq_sum_, current_gns_, current_loss_, start_value_, delta0_});
  m.put("wall", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count());
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
  b.put_bag("metrics", std::move(m));
  log_->write_checkpoint(std::move(b), k_);
  flush_pending_ = false;
  if (interrupted_) stop_checkpointed_ = true;
}

void MetricsObserver::restore(const StateBag& all) {
  const StateBag m = all.sub("metrics");
  const auto& c = m.get_ints("counters");
  const auto& s = m.get_doubles("sums");
  const auto& ei = m.get_ints("event_ints");
  const auto& ed = m.get_doubles("event");
  if (c.size() != 4 || s.size() != 6 || ei.size() != 3 || ed.size() != 4)
    throw UserError("checkpoint: the metrics state has the wrong shape");
  k_ = c[0], last_logged_ = c[1], logged_rows_ = c[2], current_fresh_ = c[3] != 0;
  G_ = s[0], grad_sq_sum_ = s[1], current_gns_ = s[2], current_loss_ = s[3], start_value_ = s[4], delta0_ = s[5];
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
  resume_method_ = all.sub("method");
  resumed_ = true;
  latch_stop();
}

void MetricsObserver::prepare_update(const UpdateEvent& e, ConstVecRef delta) {
  track(e, delta);
  prepared_ = true;
}

void MetricsObserver::track(const UpdateEvent& e, ConstVecRef delta) {
  if (e.stage >= 0) {
    tracker_->block_changed(e.stage, delta);
  } else {
    const auto& P = f_.blocks();
    for (int s = 0; s < P.stages(); ++s) tracker_->block_changed(s, delta.segment(P.offset(s), P.size(s)));
  }
}

void MetricsObserver::check_divergence(double grad_norm) {
  if (diverged_) return;
  if (!std::isfinite(current_loss_) || !std::isfinite(current_gns_) || !std::isfinite(grad_norm)) {
    diverged_ = true;
    reason_ = "the loss or gradient became non-finite at k = " + std::to_string(k_);
    return;
  }
  if (opt_.divergence <= 0) return;
  const bool known = std::isfinite(f_star_);
  const double now = known ? current_loss_ - f_star_ : current_loss_;
  const double limit = opt_.divergence * std::max(1.0, std::abs(start_value_));
  if (now > limit) {
    diverged_ = true;
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s = %.3e exceeded log.divergence = %g times its start value %.3e at k = %lld",
                  known ? "f - f*" : "the loss", now, opt_.divergence, start_value_, static_cast<long long>(k_));
    reason_ = buf;
  }
}

MetricsRow MetricsObserver::make_row(const UpdateEvent& e) {
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
    const double S = f_.stages(), g = opt_.lr, K = static_cast<double>(k_), d = static_cast<double>(bound_delay(opt_.delta, delta_seen_));
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

double MetricsObserver::bound_L() const {
  if (std::isfinite(L_)) return L_;
  return L_est_ ? L_est_->estimate() : std::nan("");
}

void MetricsObserver::record(const UpdateEvent& e, const Vec& w) {
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
    if (opt_.iterates_every > 0 && (logged_rows_ % std::max<int64_t>(1, opt_.iterates_every / opt_.every) == 0 ||
                                    k_ == opt_.updates))
      log_->append_iterate(k_, w);
  }
  ++logged_rows_;
  if (progress_) progress_(last_);
}

void MetricsObserver::finish(const Vec& w) {
  if (last_logged_ == k_) return;
  if (!current_fresh_) {
    current_loss_ = tracker_->value();
    current_gns_ = tracker_->gradient_sq_norm();
    current_fresh_ = true;
  }
  record(last_event_, w);
}

}  // namespace stale
