#include "src/run/run_in_memory.hpp"

#include <algorithm>
#include <chrono>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/backend/backend.hpp"
#include "src/run/config_rules.hpp"
#include "src/run/metrics_observer.hpp"
#include "src/run/resource_estimate.hpp"

namespace stale {

namespace {

// Forwards every event to the MetricsObserver (which computes the metrics exactly as for a
// run file, with no RunLog) and keeps what the RunLog would have written: the delay rows
// (RunLog::append_delays) and the iterate snapshots at the observer's cadence
// (MetricsObserver::record), taken when the observer reports a logged row.
class CapturingObserver final : public RunObserver {
 public:
  CapturingObserver(InMemoryRun& out, int64_t stages, bool keep_table) : out_(out), stages_(stages), keep_(keep_table) {
    out_.delay_max.assign(static_cast<size_t>(stages), 0);
    sum_.assign(static_cast<size_t>(stages), 0.0);
  }
  void attach(MetricsObserver* obs) { obs_ = obs; }
  void set_current(const Vec* w) { w_ = w; }
  const Vec* current() const { return w_; }

  void on_start(const Vec& w0) override {
    w_ = &w0;
    obs_->on_start(w0);
  }
  void on_update(const UpdateEvent& e, ConstVecRef delta, const Vec& w) override {
    if (e.delays) {
      const auto& d = *e.delays;
      for (int64_t s = 0; s < stages_; ++s) {
        out_.delay_max[s] = std::max(out_.delay_max[s], d[s]);
        sum_[s] += static_cast<double>(d[s]);
      }
      ++out_.delay_rows;
      if (keep_) out_.delays.insert(out_.delays.end(), d.begin(), d.begin() + stages_);
    }
    w_ = &w;
    obs_->on_update(e, delta, w);
  }
  bool should_stop() const override { return obs_->should_stop(); }

  void finish_delays() {
    out_.delay_table_kept = keep_ && out_.delay_rows > 0;
    out_.delay_mean.assign(static_cast<size_t>(stages_), 0.0);
    if (out_.delay_rows == 0) {
      out_.delay_max.clear();
      out_.delay_mean.clear();
      return;
    }
    for (int64_t s = 0; s < stages_; ++s) out_.delay_mean[s] = sum_[s] / static_cast<double>(out_.delay_rows);
  }

 private:
  InMemoryRun& out_;
  int64_t stages_;
  bool keep_;
  MetricsObserver* obs_ = nullptr;
  const Vec* w_ = nullptr;
  std::vector<double> sum_;
};

}  // namespace

InMemoryRun run_in_memory(const Config& cfg, std::shared_ptr<const Objective> objective) {
  const auto t0 = std::chrono::steady_clock::now();
  // the runner's checks, in its order (src/run/runner.cpp)
  check_unread_keys(cfg);
  check_resources(cfg, "");
  const BackendKind backend = resolve_backend(cfg.get_string("backend"));
  std::shared_ptr<const Objective> f = objective ? std::move(objective) : make_objective(cfg, backend);
  auto method = make_method(cfg, *f);
  const RunPlan plan = method->plan(*f);
  const int64_t K = plan.updates;

  InMemoryRun out;
  out.config_toml = cfg.to_toml();
  const auto& c = f->constants();
  auto& o = out.objective;
  o.name = f->name();
  o.description = f->description().empty() ? cfg.get_string("objective.generator") : f->description();
  o.n = f->num_samples();
  o.d = f->dim();
  o.S = f->stages();
  o.batches = f->num_batches();
  for (int s = 0; s < f->stages(); ++s) o.block_sizes.push_back(f->blocks().size(s));
  o.L = c.L;
  o.mu = c.mu;
  o.f_star = c.f_star;

  MetricsOptions opt;
  opt.every = cfg.get_int("log.every");
  opt.iterates_every = cfg.get_int("log.iterates_every");
  const std::string& exact = cfg.get_string("log.exact_mean");
  opt.exact_mean = exact == "true" || (exact == "auto" && f->cheap_exact_metrics());
  opt.divergence = cfg.get_float("log.divergence");
  opt.lr = cfg.get_float("method.lr");
  opt.delta = plan.delay_bound;
  opt.updates = K;
  // the snapshot cadence MetricsObserver resolves and applies in record()
  const int64_t iterates_every = opt.iterates_every < 0 ? (f->dim() <= 4096 ? opt.every : 16 * opt.every) : opt.iterates_every;
  const int64_t stride = std::max<int64_t>(1, iterates_every / opt.every);

  const bool keep_table = cfg.get_bool("log.delays") && K <= RunLog::kMaxDelayEntries / f->stages();
  CapturingObserver capture(out, f->stages(), keep_table);
  int64_t rows = 0;
  auto on_row = [&](const MetricsRow& r) {
    out.metrics.push_back(r);
    if (iterates_every > 0 && (rows % stride == 0 || r.k == K)) {
      const Vec& w = *capture.current();
      out.iterates_k.push_back(r.k);
      out.iterates.insert(out.iterates.end(), w.data(), w.data() + w.size());
    }
    ++rows;
  };
  MetricsObserver obs(*f, nullptr, opt, on_row);
  capture.attach(&obs);
  Vec w = f->initial_point(static_cast<uint64_t>(cfg.get_int("seed")));
  const RunReport report = method->run(*f, plan, w, capture);
  capture.set_current(&w);
  obs.finish(w);
  capture.finish_delays();

  TheoryConstants& t = out.theory;
  t.L = c.L;
  t.L_exact = c.L_exact;
  t.mu = c.mu;
  t.f_star = c.f_star;
  t.f_star_method = c.f_star_method;
  t.delta = static_cast<double>(plan.delay_bound);
  t.delay_model = plan.delay_name;
  t.delay_mean = plan.delay_mean;
  t.updates_planned = plan.updates;
  t.updates_note = plan.note;
  t.lr_note = cfg.get_string("method.lr_schedule") == "constant" && cfg.get_int("method.warmup") == 0
                  ? "constant"
                  : "peak of the " + cfg.get_string("method.lr_schedule") + " schedule (warm-up " +
                        std::to_string(cfg.get_int("method.warmup")) + "); the bound assumes a constant step";
  t.G = obs.G();
  t.lr = opt.lr;
  t.delta0 = obs.delta0();
  t.stages = f->stages();
  t.updates = obs.updates_done();
  if (plan.executes_schedule) {
    auto& s = out.schedule;
    s.present = true;
    s.makespan = plan.simulation->makespan;
    s.bubble_fraction = plan.simulation->bubble_overall;
    s.bubble = plan.simulation->bubble;
    s.busy = plan.simulation->busy;
    s.peak_inflight = plan.simulation->peak_inflight;
    s.peak_versions = plan.simulation->peak_versions;
    s.measured_crossed = report.measured_crossed;
  }

  RunResult& res = out.result;
  res.status = obs.diverged() ? "diverged" : "ok";
  res.message = obs.divergence_reason();
  res.last = obs.last();
  res.grad_norm_sq_mean = obs.grad_norm_sq_mean();
  res.G = obs.G();
  res.updates = obs.updates_done();
  res.final_w = w;
  res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace stale
