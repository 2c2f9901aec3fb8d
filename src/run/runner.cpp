#include "src/run/runner.hpp"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <unistd.h>

#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/backend/backend.hpp"
#include "src/core/error.hpp"
#include "src/core/sha256.hpp"
#include "src/run/config_rules.hpp"
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

std::string default_run_path(const Config& cfg) {
  if (!cfg.get_string("log.out").empty()) return cfg.get_string("log.out");
  const std::string stem = cfg.origin().empty() ? "run" : std::filesystem::path(cfg.origin()).stem().string();
  return "runs/" + stem + ".h5";
}

RunResult run_experiment(const Config& cfg, const std::string& out_path, bool progress,
                         std::shared_ptr<const Objective> objective, bool overwrite) {
  const auto t0 = std::chrono::steady_clock::now();
  check_unread_keys(cfg);  // nothing the user set is silently ignored
  const std::string path = out_path.empty() ? default_run_path(cfg) : out_path;
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
    throw UserError(res.path + ": a finished run file is already there; use --force to replace it, or another --out");
  const auto& constants = f->constants();
  if (progress && std::isfinite(constants.L) && cfg.get_float("method.lr") > 1.0 / constants.L)
    std::fprintf(stderr,
                 "warning: method.lr = %g exceeds 1/L = %.3g: the bound of docs/theory.md §3 assumes γ ≤ 1/L and does not apply\n",
                 cfg.get_float("method.lr"), 1.0 / constants.L);
  // K·S as a quotient, so that an absurd K cannot overflow the product
  const bool keep_table = cfg.get_bool("log.delays") && K <= RunLog::kMaxDelayEntries / f->stages();
  RunLog log(res.path, f->dim(), f->stages(), keep_table);
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
    if (!f->data_file().empty()) {
      uint64_t bytes = 0;
      const std::string sha = sha256_file(f->data_file(), &bytes);
      log.write_data_record(f->data_file(), static_cast<int64_t>(bytes), sha);
    }

    MetricsOptions opt;
    opt.every = every;
    opt.iterates_every = cfg.get_int("log.iterates_every");
    const std::string& exact = cfg.get_string("log.exact_mean");
    opt.exact_mean = exact == "true" || (exact == "auto" && f->cheap_exact_metrics());
    opt.divergence = cfg.get_float("log.divergence");
    opt.lr = cfg.get_float("method.lr");
    opt.delta = plan.delay_bound;
    opt.updates = K;

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
    // w_0 = 0 for the linear models (the authors' code); the transformer draws GPT-2's init
    Vec w = f->initial_point(static_cast<uint64_t>(cfg.get_int("seed")));
    const RunReport report = method->run(*f, plan, w, obs);
    obs.finish(w);
    if (progress && tty) std::fprintf(stderr, "\n");

    TheoryConstants t;
    t.L = c.L;
    t.L_exact = c.L_exact;
    t.mu = c.mu;
    t.f_star = c.f_star;
    t.f_star_method = c.f_star_method;
    // δ planned, or measured along the run when a coupled timeline made the delays
    t.delta = static_cast<double>(std::max(plan.delay_bound, report.delay_moments.max_overall()));
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
    if (plan.executes_schedule)
      log.write_schedule(*plan.schedule, report.simulation ? *report.simulation : *plan.simulation, report.measured_crossed);
    if (!report.delay_moments.empty()) log.write_delay_moments(report.delay_moments);

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
