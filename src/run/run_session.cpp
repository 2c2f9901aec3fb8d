#include "src/run/run_session.hpp"

#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "objectives/objective_factory.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"
#include "src/core/sha256.hpp"
#include "src/run/interrupt.hpp"
#include "src/run/log_aliasing.hpp"

namespace stale {

namespace {
// the objective's block sizes as the run file's /objective records them (and a resume reads back)
std::vector<int64_t> block_sizes(const Objective& f) {
  std::vector<int64_t> sizes;
  for (int s = 0; s < f.stages(); ++s) sizes.push_back(f.blocks().size(s));
  return sizes;
}
}  // namespace

bool RunSession::keeps_delay_table(const Config& cfg, const Objective& f, const RunPlan& plan) {
  // K·S as a quotient, so that an absurd K cannot overflow the product
  return LogParams::from_config(cfg).delays && plan.updates <= RunLog::kMaxDelayEntries / f.stages();
}

RunSession::RunSession(const Config& cfg, std::string path, bool progress, std::shared_ptr<const Objective> objective,
                       const RunPlan& plan, std::chrono::steady_clock::time_point t0)
    : cfg_(cfg), log_params_(LogParams::from_config(cfg)), method_params_(MethodParams::from_config(cfg)), f_(std::move(objective)), plan_(plan), t0_(t0), progress_(progress) {
  res_.path = std::move(path);
}

RunSession::RunSession(const Config& cfg, std::string path, bool progress, std::shared_ptr<const Objective> objective,
                       const Method& method, const RunPlan& plan, std::chrono::steady_clock::time_point t0,
                       bool overwrite, const ResumeFrom* from, int64_t stop_after)
    : RunSession(cfg, std::move(path), progress, std::move(objective), plan, t0) {
  const PartialRun* resume = from ? from->partial : nullptr;
  if (!overwrite && std::filesystem::exists(res_.path))
    throw UserError(res_.path + (resume ? ": the run already finished; nothing to resume"
                                        : ": a finished run file is already there; use --force to replace it, or another --out"));
  const auto& c = f_->constants();
  if (progress && std::isfinite(c.L) && method_params_.lr > 1.0 / c.L)
    std::fprintf(stderr,
                 "warning: method.lr = %g exceeds 1/L = %.3g: the bound of docs/theory.md §3 assumes γ ≤ 1/L and does not apply\n",
                 method_params_.lr, 1.0 / c.L);
  // (LocalSGD's replicas each have their own serial order: not this rule's)
  if (progress && plan.simulation && plan.schedule && plan.schedule->replicas <= 1) {
    const std::string alias =
        log_aliasing_warning(plan.simulation->updates, log_params_.every, plan.updates, f_->stages());
    if (!alias.empty()) std::fprintf(stderr, "warning: %s\n", alias.c_str());
  }
  // the data's checksum before the run file exists: the header is written in one short step
  std::string data_sha;
  uint64_t data_bytes = 0;
  const bool in_memory = f_->data_file().empty();
  data_sha = in_memory ? f_->data_checksum(&data_bytes) : sha256_file(f_->data_file(), &data_bytes);
  // data in memory come only from Python (a stale.StageModel's), where force is force=True
  const bool from_python = in_memory && !data_sha.empty();
  // a resume continues on the bytes its checkpoint was computed from, or says so
  std::string forced = from ? from->forced : std::string();
  if (resume && resume->has_checkpoint &&
      (resume->has_data_fingerprint ? text_fingerprint(data_sha) != resume->data_fingerprint
                                    : data_sha != resume->data_sha256)) {
    const std::string sums = " changed since the checkpoint (SHA-256 " +
                             (resume->data_sha256.empty() ? "none" : resume->data_sha256.substr(0, 16)) + "… then, " +
                             (data_sha.empty() ? "none" : data_sha.substr(0, 16)) + "… now)";
    const std::string what =
        from_python ? "the model's data or stages" + sums
                    : "the data file " + (in_memory ? cfg.get_string("objective.data") : f_->data_file()) + sums;
    if (!from->force)
      throw UserError(resume->path + ": " + what +
                      (from_python ? "; resume with the model the run started from, or with force=True to continue on "
                                     "this one (recorded in the file as resume_forced)"
                                   : "; restore the data the run started from, or resume with --force to continue on "
                                     "the new data (recorded in the file as resume_forced)"));
    forced += (forced.empty() ? "" : "; ") + what;
  }
  // a checkpoint holds blocks, rules' state and activations in flight of one shape: on another
  // (a Python model with other stages or batches, a data file of other rows or features) it
  // cannot continue, forced or not (said after the data's check, which names what changed)
  if (resume && resume->has_checkpoint && !resume->block_sizes.empty()) {
    const std::vector<int64_t> sizes = block_sizes(*f_);
    auto shape = [](const std::vector<int64_t>& b, int64_t n, int64_t M) {
      std::string t = "blocks [";
      for (size_t i = 0; i < b.size(); ++i) t += (i ? ", " : "") + std::to_string(b[i]);
      return t + "], " + std::to_string(n) + " samples in " + std::to_string(M) + " batches";
    };
    if (sizes != resume->block_sizes || resume->samples != f_->num_samples() || resume->batches != f_->num_batches())
      throw UserError(resume->path + ": the " + (from_python ? "model" : "data") +
                      "'s shape changed since the checkpoint (" + shape(resume->block_sizes, resume->samples, resume->batches) +
                      " then, " + shape(sizes, f_->num_samples(), f_->num_batches()) +
                      " now); a checkpoint continues only on its own shape, even with force: resume with what it "
                      "started on, or rerun from the start");
  }
  auto file = std::make_unique<RunFile>(res_.path, f_->dim(), f_->stages(), keeps_delay_table(cfg, *f_, plan),
                                        log_params_.flush_seconds);
  RunFile& run_file = *file;
  log_ = std::move(file);
  try {
    write_header(data_sha, data_bytes);
    if (!forced.empty()) run_file.write_note("resume_forced", forced);
    if (resume) run_file.adopt(*resume);
    start_observer(method, stop_after);
    if (resume && resume->has_checkpoint) obs_->restore(resume->state);
    // said once the checkpoint fits this objective: a refusal stays the one line
    if (!forced.empty())
      std::fprintf(stderr, "warning: %s: continued with %s although %s\n", resume->path.c_str(),
                   from_python ? "force=True" : "--force", forced.c_str());
  } catch (...) {
    log_->abort();
    throw;
  }
}

RunSession::RunSession(const Config& cfg, std::unique_ptr<RunLog> log, std::shared_ptr<const Objective> objective,
                       const Method& method, const RunPlan& plan, std::chrono::steady_clock::time_point t0,
                       bool progress)
    : RunSession(cfg, std::string(), progress, std::move(objective), plan, t0) {
  log_ = std::move(log);
  try {
    write_header("", 0);
    start_observer(method, 0);
  } catch (...) {
    log_->abort();
    throw;
  }
}

void RunSession::write_header(const std::string& data_sha, uint64_t data_bytes) {
  std::string device = "cpu";
  if (f_->backend() == "cuda") {  // the objective's own backend: config "auto" already resolved
    auto devs = cuda_devices();
    device = devs.empty() ? "cuda" : devs.front().name;
  }
  log_->write_root(cfg_.to_toml(), static_cast<int64_t>(method_params_.seed), f_->backend(), device, f_->precision());
  const std::vector<int64_t> sizes = block_sizes(*f_);
  const auto& c = f_->constants();
  const std::string desc = objective_description(*f_, cfg_);
  log_->write_objective(f_->name(), f_->num_samples(), f_->dim(), sizes, c.L, c.mu, c.f_star, c.f_star_is_lower_bound,
                        f_->num_batches(), desc);
  // data in memory (a Python model's) are recorded by their checksum, with no path
  if (!data_sha.empty()) log_->write_data_record(f_->data_file(), static_cast<int64_t>(data_bytes), data_sha);
}

void RunSession::start_observer(const Method& method, int64_t stop_after) {
  MetricsOptions opt;
  opt.every = log_params_.every;
  opt.iterates_every = log_params_.iterates_every;
  opt.exact_mean = log_params_.exact_mean_for(f_->cheap_exact_metrics());
  opt.divergence = log_params_.divergence;
  opt.lr = method_params_.lr;
  opt.delta = plan_.delay_bound;
  opt.updates = plan_.updates;
  opt.stop_after = stop_after;
  opt.clock = plan_.clock;
  opt.estimate_L = log_params_.estimate_L_for(!std::isfinite(f_->constants().L));
  opt.L_power_steps = log_params_.L_power_steps;
  exact_mean_ = opt.exact_mean;
  progress_line_ = std::make_unique<ProgressLine>(progress_, method.name(), plan_.updates);
  obs_ = std::make_unique<MetricsObserver>(*f_, log_.get(), opt,
                                           [line = progress_line_.get()](const MetricsRow& r) { line->print(r); });
}

TheoryConstants RunSession::theory(const RunReport& report) const {
  const auto& c = f_->constants();
  const MetricsRecorder& m = obs_->metrics();
  TheoryConstants t;
  t.L = m.bound_L();
  t.L_exact = c.L_exact;
  if (const SmoothnessEstimator* e = m.L_estimator()) {
    t.L_estimate_method = e->method();
    t.L_estimate = e->estimate();
    t.L_estimate_secant = e->secant();
    t.L_estimate_power = e->power();
    t.L_estimate_pairs = e->pairs();
    t.L_estimate_hvps = e->hvps();
    t.L_estimate_seconds = e->seconds();
  }
  t.L_source = std::isfinite(c.L)      ? "certified"
               : m.bound_L_estimated() ? "estimated (" + t.L_estimate_method + ")"
                                       : "none";
  t.exact_mean = exact_mean_;
  if (!std::isfinite(c.f_star) && std::isfinite(c.f_low)) t.f_low = c.f_low;
  t.mu = c.mu;
  t.f_star = c.f_star;
  t.f_star_method = c.f_star_method;
  t.f_star_is_lower_bound = c.f_star_is_lower_bound;
  // δ planned, or measured along the run when a coupled timeline made the delays
  t.delta = static_cast<double>(plan_.bound_delay(report.delay_moments.max_overall()));
  t.delay_model = plan_.delay_name;
  t.delay_attributes = plan_.delay_attributes;
  t.delta_steady = static_cast<double>(plan_.delay_max_steady);
  t.delay_mean_steady = plan_.delay_mean_steady;
  t.updates_planned = plan_.updates;
  t.updates_note = plan_.note;
  // the §3 bound holds for a constant γ; under a schedule it is evaluated at the peak γ,
  // an upper bound on every γ_k the run used (the file says so)
  t.lr_note = method_params_.lr_schedule.bound_note();
  t.G = m.G();
  t.lr = method_params_.lr;
  t.delta0 = m.delta0();
  t.stages = f_->stages();
  t.updates = m.updates_done();
  return t;
}

void RunSession::take_results(const Vec& w) {
  const MetricsRecorder& m = obs_->metrics();
  res_.last = m.last();
  res_.grad_norm_sq_mean = m.grad_norm_sq_mean();
  res_.G = m.G();
  res_.updates = m.updates_done();
  res_.final_w = w;
  res_.subopt_lows = m.subopt_lows();
  res_.resumed = obs_->resumed();
  res_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

RunResult RunSession::finish(const RunReport& report, const Vec& w) {
  try {
    progress_line_->end();
    if (obs_->interrupted()) {
      // the method wrote its checkpoint at the update it stopped after; the .partial stays
      res_.status = "interrupted";
      take_results(w);
      const int sig = stop_signal();
      res_.message = "stopped by " + std::string(sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "request") +
                     " at k = " + std::to_string(res_.updates);
      if (!res_.path.empty()) {
        res_.message += "; continue with: stale run --resume " + res_.path + ".partial";
        res_.path += ".partial";
      }
      res_.delta = plan_.bound_delay(obs_->metrics().delta_seen());
      log_->interrupt(res_.wall_seconds, res_.message);
      return res_;
    }
    obs_->finish(w);
    const TheoryConstants t = theory(report);
    log_->write_theory(t);
    res_.delta = static_cast<int64_t>(t.delta);
    res_.lr_within_1_over_L = t.lr_within_1_over_L();
    res_.L = t.L;
    res_.L_estimated = t.L_estimated();
    if (plan_.executes_schedule)
      log_->write_schedule(*plan_.schedule, report.simulation ? *report.simulation : *plan_.simulation,
                           report.measured_crossed);
    if (!report.delay_moments.empty()) log_->write_delay_moments(report.delay_moments);
    res_.status = obs_->diverged() ? "diverged" : "ok";
    take_results(w);
    log_->finish(res_.status, res_.wall_seconds, obs_->divergence_reason());
    res_.message = obs_->divergence_reason();
  } catch (...) {
    log_->abort();
    throw;
  }
  return res_;
}

}  // namespace stale
