#include "src/run/metrics_observer.hpp"

#include <utility>

namespace stale {

MetricsObserver::MetricsObserver(const Objective& f, RunLog* log, MetricsOptions opt,
                                 std::function<void(const MetricsRow&)> progress)
    : metrics_(f, log, opt),
      divergence_(opt.divergence, f.constants().f_star),
      stop_(opt.stop_after),
      checkpoints_(log),
      progress_(std::move(progress)) {}

void MetricsObserver::on_start(const Vec& w0) {
  report(metrics_.start(w0));
  stop_.latch(metrics_.updates_done());
}

bool MetricsObserver::records_update(int64_t k) {
  const LogCadence& c = metrics_.cadence();
  asked_k_ = k;
  asked_records_ = c.exact_mean() || c.on_cadence(metrics_.updates_done(), k) || stop_.stopping() ||
                   stop_requested() || stop_.reaches(k) || checkpoints_.flush_due();
  return asked_records_;
}

void MetricsObserver::on_update(const UpdateEvent& e, ConstVecRef delta, const Vec& w) {
  // the method left this event's details out when it asked and was told they go nowhere
  const bool details = e.k != asked_k_ || asked_records_;
  const bool on_cadence = metrics_.advance(e, delta, w);
  if (metrics_.evaluated())
    divergence_.check(metrics_.loss(), metrics_.grad_norm_sq(), e.grad_norm, metrics_.start_value(), e.k);
  else divergence_.check_gradient(e.grad_norm, e.k);
  // a diverged run's last row is the one that diverged, on the cadence or not
  if (on_cadence || divergence_.diverged()) report(metrics_.record(e, w));
  checkpoints_.after_update(details);
  stop_.latch(metrics_.updates_done(), details);
}

void MetricsObserver::checkpoint(StateBag&& method_state) {
  if (!checkpoints_.writes()) return;
  StateBag m;
  metrics_.save(m);
  checkpoints_.write(std::move(method_state), std::move(m), metrics_.updates_done(), stop_.stopping());
}

void MetricsObserver::restore(const StateBag& all) {
  metrics_.restore(all.sub("metrics"));
  resume_method_ = all.sub("method");
  resumed_ = true;
  stop_.latch(metrics_.updates_done());
}

void MetricsObserver::finish(const Vec& w) {
  if (metrics_.finish(w)) report(metrics_.last());
}

}  // namespace stale
