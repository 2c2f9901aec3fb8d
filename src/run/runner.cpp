#include "src/run/runner.hpp"

#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <signal.h>
#include <unistd.h>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"
#include "src/core/sha256.hpp"
#include "src/run/config_rules.hpp"
#include "src/run/interrupt.hpp"
#include "src/run/metrics_observer.hpp"
#include "src/run/resource_estimate.hpp"

namespace stale {

std::string run_summary_line(const RunResult& r) {
  const char* fmt = "%s: status=%s k=%lld f-f*=%.6e mean|grad f|^2=%.6e bound=%.6e wall=%.2fs";
  auto print = [&](char* buf, size_t n) {
    return std::snprintf(buf, n, fmt, r.path.c_str(), r.status.c_str(), static_cast<long long>(r.updates),
                         r.last.subopt, r.grad_norm_sq_mean, r.last.bound, r.wall_seconds);
  };
  std::string out(static_cast<size_t>(print(nullptr, 0)), '\0');
  print(out.data(), out.size() + 1);
  return out;
}

std::string partial_target(const std::string& partial_path) {
  const std::string suffix = ".partial";
  if (partial_path.size() > suffix.size() && partial_path.compare(partial_path.size() - suffix.size(), suffix.size(), suffix) == 0)
    return partial_path.substr(0, partial_path.size() - suffix.size());
  return partial_path;
}

namespace {
// the process that wrote a .partial still runs `stale` on this machine (another process: a
// run resumed inside the process that interrupted it is not a second writer)
bool writer_is_alive(const PartialRun& p) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  if (p.writer_pid <= 0 || p.writer_pid == getpid() || p.writer_host != host) return false;
  if (kill(static_cast<pid_t>(p.writer_pid), 0) != 0) return false;
  std::ifstream comm("/proc/" + std::to_string(p.writer_pid) + "/comm");
  std::string name;
  std::getline(comm, name);
  return name.find("stale") != std::string::npos;
}
}  // namespace

std::string default_run_path(const Config& cfg) {
  if (!cfg.get_string("log.out").empty()) return cfg.get_string("log.out");
  const std::string stem = cfg.origin().empty() ? "run" : std::filesystem::path(cfg.origin()).stem().string();
  return "runs/" + stem + ".h5";
}

// One run's file and metrics from its config to its finished file: what run_experiment and
// an ensemble's columns (run_ensemble_experiment) share. The caller has checked the config
// and planned the method; the constructor creates the run file (last, after every check) and
// the observer; finish() writes the theory record and the status.
class RunSession {
 public:
  // `resume`: the .partial this run continues (null: a fresh run)
  RunSession(const Config& cfg, std::string path, bool progress, std::shared_ptr<const Objective> objective,
             const Method& method, const RunPlan& plan, std::chrono::steady_clock::time_point t0, bool overwrite,
             const PartialRun* resume = nullptr, int64_t stop_after = 0)
      : cfg_(cfg), f_(std::move(objective)), plan_(plan), t0_(t0), progress_(progress) {
    res_.path = std::move(path);
    if (!overwrite && std::filesystem::exists(res_.path))
      throw UserError(res_.path + (resume ? ": the run already finished; nothing to resume"
                                          : ": a finished run file is already there; use --force to replace it, or another --out"));
    const auto& c = f_->constants();
    if (progress && std::isfinite(c.L) && cfg.get_float("method.lr") > 1.0 / c.L)
      std::fprintf(stderr,
                   "warning: method.lr = %g exceeds 1/L = %.3g: the bound of docs/theory.md §3 assumes γ ≤ 1/L and does not apply\n",
                   cfg.get_float("method.lr"), 1.0 / c.L);
    const int64_t K = plan.updates;
    // K·S as a quotient, so that an absurd K cannot overflow the product
    const bool keep_table = cfg.get_bool("log.delays") && K <= RunLog::kMaxDelayEntries / f_->stages();
    // the data's checksum before the run file exists: the header is written in one short step
    std::string data_sha;
    uint64_t data_bytes = 0;
    if (!f_->data_file().empty()) data_sha = sha256_file(f_->data_file(), &data_bytes);
    log_ = std::make_unique<RunLog>(res_.path, f_->dim(), f_->stages(), keep_table, cfg.get_float("log.flush_seconds"));
    try {
      std::string device = "cpu";
      if (resolve_backend(cfg.get_string("backend")) == BackendKind::Cuda) {
        auto devs = cuda_devices();
        device = devs.empty() ? "cuda" : devs.front().name;
      }
      log_->write_root(cfg.to_toml(), cfg.get_int("seed"), f_->backend(), device, f_->precision());
      std::vector<int64_t> sizes;
      for (int s = 0; s < f_->stages(); ++s) sizes.push_back(f_->blocks().size(s));
      const std::string desc = f_->description().empty() ? cfg.get_string("objective.generator") : f_->description();
      log_->write_objective(f_->name(), f_->num_samples(), f_->dim(), sizes, c.L, c.mu, c.f_star, f_->num_batches(), desc);
      if (!f_->data_file().empty()) log_->write_data_record(f_->data_file(), static_cast<int64_t>(data_bytes), data_sha);
      if (resume) log_->adopt(*resume);
      log_->start_streaming();  // the header is complete: the file becomes RUN.h5.partial, in SWMR mode
      MetricsOptions opt;
      opt.every = cfg.get_int("log.every");
      opt.iterates_every = cfg.get_int("log.iterates_every");
      const std::string& exact = cfg.get_string("log.exact_mean");
      opt.exact_mean = exact == "true" || (exact == "auto" && f_->cheap_exact_metrics());
      opt.divergence = cfg.get_float("log.divergence");
      opt.lr = cfg.get_float("method.lr");
      opt.delta = plan.delay_bound;
      opt.updates = K;
      opt.stop_after = stop_after;
      lr_ = opt.lr;
      tty_ = isatty(STDERR_FILENO);
      last_print_ = std::chrono::steady_clock::now() - std::chrono::hours(1);
      tag_ = method.name();
      obs_ = std::make_unique<MetricsObserver>(*f_, log_.get(), opt, [this](const MetricsRow& r) { print_progress(r); });
      if (resume && resume->has_checkpoint) obs_->restore(resume->state);
    } catch (...) {
      log_->abort();
      throw;
    }
  }
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  MetricsObserver& observer() { return *obs_; }
  // w_0 = 0 for the linear models (the authors' code); the transformer draws GPT-2's init
  Vec initial_point() const { return f_->initial_point(static_cast<uint64_t>(cfg_.get_int("seed"))); }

  RunResult finish(const RunReport& report, const Vec& w) {
    try {
      if (progress_ && tty_) std::fprintf(stderr, "\n");
      if (obs_->interrupted()) {
        // the method wrote its checkpoint at the update it stopped after; the .partial stays
        res_.status = "interrupted";
        res_.last = obs_->last();
        res_.grad_norm_sq_mean = obs_->grad_norm_sq_mean();
        res_.G = obs_->G();
        res_.updates = obs_->updates_done();
        res_.final_w = w;
        res_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
        const int sig = stop_signal();
        res_.message = "stopped by " + std::string(sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "request") +
                       " at k = " + std::to_string(res_.updates) + "; continue with: stale run --resume " + res_.path +
                       ".partial";
        res_.path += ".partial";
        log_->interrupt(res_.wall_seconds, res_.message);
        return res_;
      }
      obs_->finish(w);
      const auto& c = f_->constants();
      TheoryConstants t;
      t.L = c.L;
      t.L_exact = c.L_exact;
      t.mu = c.mu;
      t.f_star = c.f_star;
      t.f_star_method = c.f_star_method;
      // δ planned, or measured along the run when a coupled timeline made the delays
      t.delta = static_cast<double>(std::max(plan_.delay_bound, report.delay_moments.max_overall()));
      t.delay_model = plan_.delay_name;
      t.delay_mean = plan_.delay_mean;
      t.updates_planned = plan_.updates;
      t.updates_note = plan_.note;
      // the §3 bound holds for a constant γ; under a schedule it is evaluated at the peak γ,
      // an upper bound on every γ_k the run used (the file says so)
      t.lr_note = cfg_.get_string("method.lr_schedule") == "constant" && cfg_.get_int("method.warmup") == 0
                      ? "constant"
                      : "peak of the " + cfg_.get_string("method.lr_schedule") + " schedule (warm-up " +
                            std::to_string(cfg_.get_int("method.warmup")) + "); the bound assumes a constant step";
      t.G = obs_->G();
      t.lr = lr_;
      t.delta0 = obs_->delta0();
      t.stages = f_->stages();
      t.updates = obs_->updates_done();
      log_->write_theory(t);
      if (plan_.executes_schedule)
        log_->write_schedule(*plan_.schedule, report.simulation ? *report.simulation : *plan_.simulation,
                             report.measured_crossed);
      if (!report.delay_moments.empty()) log_->write_delay_moments(report.delay_moments);

      res_.status = obs_->diverged() ? "diverged" : "ok";
      res_.last = obs_->last();
      res_.grad_norm_sq_mean = obs_->grad_norm_sq_mean();
      res_.G = obs_->G();
      res_.updates = obs_->updates_done();
      res_.final_w = w;
      res_.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
      log_->finish(res_.status, res_.wall_seconds, obs_->divergence_reason());
      res_.message = obs_->divergence_reason();
    } catch (...) {
      log_->abort();
      throw;
    }
    return res_;
  }

  // removes the run file (a failure after the constructor)
  void abort() { log_->abort(); }

 private:
  void print_progress(const MetricsRow& r) {
    if (!progress_) return;
    const int64_t K = plan_.updates;
    const auto now = std::chrono::steady_clock::now();
    if (r.k != K && r.k != 0 && now - last_print_ < std::chrono::milliseconds(tty_ ? 200 : 2000)) return;
    last_print_ = now;
    // f_* unknown (the transformer): show the loss itself
    const bool known = std::isfinite(r.subopt);
    const double rate = r.wall > 0 ? static_cast<double>(r.k) / r.wall : 0.0;
    const double eta = rate > 0 ? static_cast<double>(K - r.k) / rate : 0.0;
    std::fprintf(stderr, "%s[%s] k=%lld/%lld (%3.0f%%)  %s=%.3e  |grad f|^2=%.3e  %.1fs  %.3g updates/s  eta %.0fs%s",
                 tty_ ? "\r" : "", tag_.c_str(), static_cast<long long>(r.k), static_cast<long long>(K),
                 100.0 * static_cast<double>(r.k) / static_cast<double>(K), known ? "f-f*" : "loss",
                 known ? r.subopt : r.loss, r.grad_norm_sq, r.wall, rate, eta, tty_ ? "   " : "\n");
    std::fflush(stderr);
  }

  const Config& cfg_;
  std::shared_ptr<const Objective> f_;
  const RunPlan& plan_;
  std::chrono::steady_clock::time_point t0_;
  bool progress_, tty_ = false;
  double lr_ = 0;
  std::string tag_;
  std::chrono::steady_clock::time_point last_print_;
  std::unique_ptr<RunLog> log_;
  std::unique_ptr<MetricsObserver> obs_;
  RunResult res_;
};

RunResult run_experiment(const Config& cfg, const std::string& out_path, bool progress,
                         std::shared_ptr<const Objective> objective, bool overwrite) {
  RunOptions o;
  o.progress = progress;
  o.objective = std::move(objective);
  o.overwrite = overwrite;
  return run_experiment(cfg, out_path, o);
}

RunResult run_experiment(const Config& given_cfg, const std::string& out_path, const RunOptions& options) {
  const auto t0 = std::chrono::steady_clock::now();
  const bool resuming = !options.resume_from.empty();
  // a resumed run is the .partial's: its config (checked when it started) and its path
  PartialRun partial;
  Config resumed_cfg;
  if (resuming) {
    partial = read_partial_run(options.resume_from);
    if (writer_is_alive(partial))
      throw UserError(options.resume_from + ": still being written by process " + std::to_string(partial.writer_pid) +
                      " (stop it with kill -INT " + std::to_string(partial.writer_pid) + ", then resume)");
    resumed_cfg = Config::from_string(partial.config, options.resume_from);
  }
  const Config& cfg = resuming ? resumed_cfg : given_cfg;
  if (!resuming) check_unread_keys(cfg);  // nothing the user set is silently ignored
  const std::string path =
      resuming ? partial_target(options.resume_from) : (out_path.empty() ? default_run_path(cfg) : out_path);
  check_resources(cfg, path);  // memory and disk, before anything is allocated or created
  std::shared_ptr<const Objective> f =
      options.objective ? options.objective : make_objective(cfg, resolve_backend(cfg.get_string("backend")));
  auto method = make_method(cfg, *f);
  // the one plan every consumer reads; planning errors surface before the run file exists
  const RunPlan plan = method->plan(*f);
  RunSession session(cfg, path, options.progress, f, *method, plan, t0, options.overwrite, resuming ? &partial : nullptr,
                     options.stop_after);
  try {
    Vec w = session.initial_point();
    const RunReport report = method->run(*f, plan, w, session.observer());
    return session.finish(report, w);
  } catch (...) {
    session.abort();
    throw;
  }
}

std::vector<EnsembleColumnResult> run_ensemble_experiment(const std::vector<EnsembleColumn>& columns,
                                                          std::shared_ptr<const Objective> objective, bool overwrite) {
  const auto t0 = std::chrono::steady_clock::now();
  const size_t P = columns.size();
  std::vector<EnsembleColumnResult> out(P);
  STALE_CHECK(P > 0, "an ensemble has columns");
  // every check of every column before any file exists; a column that fails them is
  // reported and left out, the others run
  struct Ready {
    size_t index;
    std::unique_ptr<Method> method;
    RunPlan plan;
  };
  std::vector<Ready> ready;
  std::shared_ptr<const Objective> f = objective;
  for (size_t i = 0; i < P; ++i) {
    try {
      const Config& cfg = columns[i].config;
      check_unread_keys(cfg);
      check_resources(cfg, columns[i].path);
      if (!f) f = make_objective(cfg, resolve_backend(cfg.get_string("backend")));
      auto method = make_method(cfg, *f);
      RunPlan plan = method->plan(*f);
      if (!ready.empty()) {
        const RunPlan& first = ready.front().plan;
        STALE_CHECK(method->name() == ready.front().method->name() && plan.updates == first.updates &&
                        plan.delay_bound == first.delay_bound && !plan.schedule == !first.schedule &&
                        (!plan.schedule || plan.schedule->ops.size() == first.schedule->ops.size()),
                    "the columns of an ensemble share method and plan");
      }
      ready.push_back({i, std::move(method), std::move(plan)});
    } catch (const UserError& e) {
      out[i].error = e.what();
    }
  }
  if (ready.empty()) return out;
  if (!ready.front().method->runs_ensembles()) {
    // a method without a lockstep loop (or a coupled timeline, which follows each run's own
    // state): the columns run one after another, on the shared objective
    for (const auto& r : ready) {
      try {
        out[r.index].result = run_experiment(columns[r.index].config, columns[r.index].path, false, f, overwrite);
      } catch (const UserError& e) {
        out[r.index].error = e.what();
      }
    }
    return out;
  }
  const Method& lead = *ready.front().method;
  const RunPlan& plan = ready.front().plan;
  std::vector<std::unique_ptr<RunSession>> sessions;
  try {
    for (const auto& r : ready)
      sessions.push_back(std::make_unique<RunSession>(columns[r.index].config, columns[r.index].path, false, f, *r.method,
                                                      plan, t0, overwrite));
    std::vector<Vec> w;
    std::vector<const Method*> methods;
    std::vector<RunObserver*> observers;
    for (size_t c = 0; c < ready.size(); ++c) {
      w.push_back(sessions[c]->initial_point());
      methods.push_back(ready[c].method.get());
      observers.push_back(&sessions[c]->observer());
    }
    Mat W0(f->dim(), static_cast<Index>(w.size()));
    for (size_t c = 0; c < w.size(); ++c) W0.col(static_cast<Index>(c)) = w[c];
    std::shared_ptr<EnsembleTracker> tracker = f->make_ensemble_tracker(W0);
    for (size_t c = 0; c < ready.size(); ++c) sessions[c]->observer().use_tracker(column_tracker(tracker, static_cast<int>(c)));
    const std::vector<RunReport> reports = lead.run_ensemble(*f, plan, methods, w, observers);
    for (size_t c = 0; c < ready.size(); ++c) out[ready[c].index].result = sessions[c]->finish(reports[c], w[c]);
  } catch (...) {
    for (auto& s : sessions) s->abort();
    throw;
  }
  return out;
}

}  // namespace stale
