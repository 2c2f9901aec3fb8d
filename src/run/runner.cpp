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
  const bool progress = options.progress;
  const bool overwrite = options.overwrite;
  std::shared_ptr<const Objective> objective = options.objective;
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
  const std::string path = resuming ? partial_target(options.resume_from)
                                    : (out_path.empty() ? default_run_path(cfg) : out_path);
  check_resources(cfg, path);  // memory and disk, before anything is allocated or created
  const BackendKind backend = resolve_backend(cfg.get_string("backend"));
  std::shared_ptr<const Objective> f = objective ? std::move(objective) : make_objective(cfg, backend);
  auto method = make_method(cfg, *f);
  // the one plan every consumer reads; planning errors surface before the run file exists
  const RunPlan plan = method->plan(*f);
  const int64_t K = plan.updates;
  const int64_t every = cfg.get_int("log.every");

  RunResult res;
  res.path = path;
  if (!overwrite && std::filesystem::exists(res.path))
    throw UserError(res.path + (resuming ? ": the run already finished; nothing to resume"
                                         : ": a finished run file is already there; use --force to replace it, or another --out"));
  const auto& constants = f->constants();
  if (progress && std::isfinite(constants.L) && cfg.get_float("method.lr") > 1.0 / constants.L)
    std::fprintf(stderr,
                 "warning: method.lr = %g exceeds 1/L = %.3g: the bound of docs/theory.md §3 assumes γ ≤ 1/L and does not apply\n",
                 cfg.get_float("method.lr"), 1.0 / constants.L);
  // K·S as a quotient, so that an absurd K cannot overflow the product
  const bool keep_table = cfg.get_bool("log.delays") && K <= RunLog::kMaxDelayEntries / f->stages();
  // the data's checksum before the run file exists: the header is written in one short step
  std::string data_sha;
  uint64_t data_bytes = 0;
  if (!f->data_file().empty()) data_sha = sha256_file(f->data_file(), &data_bytes);
  RunLog log(res.path, f->dim(), f->stages(), keep_table, cfg.get_float("log.flush_seconds"));
  try {
    std::string device = "cpu";
    if (backend == BackendKind::Cuda) {
      auto devs = cuda_devices();
      device = devs.empty() ? "cuda" : devs.front().name;
    }
    log.write_root(cfg.to_toml(), cfg.get_int("seed"), f->backend(), device, f->precision());
    std::vector<int64_t> sizes;
    for (int s = 0; s < f->stages(); ++s) sizes.push_back(f->blocks().size(s));
    const auto& c = f->constants();
    const std::string desc = f->description().empty() ? cfg.get_string("objective.generator") : f->description();
    log.write_objective(f->name(), f->num_samples(), f->dim(), sizes, c.L, c.mu, c.f_star, f->num_batches(), desc);
    if (!f->data_file().empty()) log.write_data_record(f->data_file(), static_cast<int64_t>(data_bytes), data_sha);
    if (resuming) log.adopt(partial);
    log.start_streaming();  // the header is complete: the file becomes RUN.h5.partial, in SWMR mode

    MetricsOptions opt;
    opt.every = every;
    opt.iterates_every = cfg.get_int("log.iterates_every");
    const std::string& exact = cfg.get_string("log.exact_mean");
    opt.exact_mean = exact == "true" || (exact == "auto" && f->cheap_exact_metrics());
    opt.divergence = cfg.get_float("log.divergence");
    opt.lr = cfg.get_float("method.lr");
    opt.delta = plan.delay_bound;
    opt.updates = K;
    opt.stop_after = options.stop_after;

    const bool tty = isatty(STDERR_FILENO);
    auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
    const std::string tag = method->name();
    auto progress_fn = [&](const MetricsRow& r) {
      if (!progress) return;
      const auto now = std::chrono::steady_clock::now();
      if (r.k != K && r.k != 0 && now - last_print < std::chrono::milliseconds(tty ? 200 : 2000)) return;
      last_print = now;
      // f_* unknown (the transformer): show the loss itself
      const bool known = std::isfinite(r.subopt);
      const double rate = r.wall > 0 ? static_cast<double>(r.k) / r.wall : 0.0;
      const double eta = rate > 0 ? static_cast<double>(K - r.k) / rate : 0.0;
      std::fprintf(stderr, "%s[%s] k=%lld/%lld (%3.0f%%)  %s=%.3e  |grad f|^2=%.3e  %.1fs  %.3g updates/s  eta %.0fs%s",
                   tty ? "\r" : "", tag.c_str(), static_cast<long long>(r.k), static_cast<long long>(K),
                   100.0 * static_cast<double>(r.k) / static_cast<double>(K), known ? "f-f*" : "loss",
                   known ? r.subopt : r.loss, r.grad_norm_sq, r.wall, rate, eta, tty ? "   " : "\n");
      std::fflush(stderr);
    };
    MetricsObserver obs(*f, &log, opt, progress_fn);
    if (resuming && partial.has_checkpoint) obs.restore(partial.state);
    // w_0 = 0 for the linear models (the authors' code); the transformer draws GPT-2's init
    Vec w = f->initial_point(static_cast<uint64_t>(cfg.get_int("seed")));
    const RunReport report = method->run(*f, plan, w, obs);
    if (progress && tty) std::fprintf(stderr, "\n");
    if (obs.interrupted()) {
      // the method wrote its checkpoint at the update it stopped after; the .partial stays
      res.status = "interrupted";
      res.last = obs.last();
      res.grad_norm_sq_mean = obs.grad_norm_sq_mean();
      res.G = obs.G();
      res.updates = obs.updates_done();
      res.final_w = w;
      res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      const int sig = stop_signal();
      res.message = "stopped by " + std::string(sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "request") +
                    " at k = " + std::to_string(res.updates) + "; continue with: stale run --resume " +
                    res.path + ".partial";
      res.path += ".partial";
      log.interrupt(res.wall_seconds, res.message);
      return res;
    }
    obs.finish(w);

    TheoryConstants t;
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
    // the §3 bound holds for a constant γ; under a schedule it is evaluated at the peak γ,
    // an upper bound on every γ_k the run used (the file says so)
    t.lr_note = cfg.get_string("method.lr_schedule") == "constant" && cfg.get_int("method.warmup") == 0
                    ? "constant"
                    : "peak of the " + cfg.get_string("method.lr_schedule") + " schedule (warm-up " +
                          std::to_string(cfg.get_int("method.warmup")) + "); the bound assumes a constant step";
    t.G = obs.G();
    t.lr = opt.lr;
    t.delta0 = obs.delta0();
    t.stages = f->stages();
    t.updates = obs.updates_done();
    log.write_theory(t);
    if (plan.executes_schedule) log.write_schedule(*plan.schedule, *plan.simulation, report.measured_crossed);

    res.status = obs.diverged() ? "diverged" : "ok";
    res.last = obs.last();
    res.grad_norm_sq_mean = obs.grad_norm_sq_mean();
    res.G = obs.G();
    res.updates = obs.updates_done();
    res.final_w = w;
    res.wall_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    log.finish(res.status, res.wall_seconds, obs.divergence_reason());
    res.message = obs.divergence_reason();
  } catch (...) {
    log.abort();
    throw;
  }
  return res;
}

}  // namespace stale
