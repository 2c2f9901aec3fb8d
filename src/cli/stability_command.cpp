#include "src/cli/stability_command.hpp"

#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "src/commands/predict_stability.hpp"
#include "src/config/config.hpp"

namespace stale {

namespace {

struct StabilityCommand {
  std::string config;
  std::vector<std::string> overrides;
  std::vector<double> lr;
  std::string order = "expected";
  std::string solver = "auto";
  int64_t dense_max = 1500;
  bool no_gamma_max = false;
  double rel_tol = 1e-10;
};

StabilityCommand& command() {
  static StabilityCommand c;
  return c;
}

}  // namespace

void add_stability_command(CLI::App& app) {
  auto& c = command();
  auto* s = app.add_subcommand("stability",
                               "spectral radius of a stale method's one-period recursion on a quadratic, and the "
                               "largest stable step size");
  s->add_option("config", c.config, "TOML config (objective.* of a quadratic; method.*, delay.*, costs.*)")->required();
  s->add_option("overrides", c.overrides, "key=value overrides, e.g. objective.stages=8 method.name=paci");
  s->add_option("--lr", c.lr, "step sizes γ to evaluate ρ at (default: method.lr)");
  s->add_option("--order", c.order,
                "rpd/bcd with zero or constant delay: cyclic (block k mod S) or expected (all blocks, step γ/S: the "
                "mean of RPD's uniform stage draws)");
  s->add_option("--solver", c.solver, "auto, dense, power (implicit operator) or eigen (per eigen-direction of A)");
  s->add_option("--dense-max", c.dense_max, "auto: the largest state size solved densely")->check(CLI::Range(1, 100000));
  s->add_option("--rel-tol", c.rel_tol, "bisection: stop at this relative width of the bracket")
      ->check(CLI::Range(1e-14, 0.5));
  s->add_flag("--no-gamma-max", c.no_gamma_max, "skip the bisection for the largest stable step");
}

int run_stability_command() {
  const StabilityCommand& c = command();
  StabilityRequest req(Config::from_file(c.config));
  req.config.apply_overrides(c.overrides);
  req.lrs = c.lr;
  req.order = c.order;
  req.solver = c.solver;
  req.dense_max = c.dense_max;
  req.gamma_max = !c.no_gamma_max;
  req.rel_tol = c.rel_tol;
  const StabilityReport r = predict_stability(std::move(req));

  std::printf("objective: quadratic %s n=%lld d=%lld S=%d L=%.10g mu=%.10g (full-batch recursion: A = X^T X / n)\n",
              r.generator.c_str(), static_cast<long long>(r.samples), static_cast<long long>(r.dim), r.stages, r.L, r.mu);
  if (r.batches > 1)
    std::printf("note: %d mini-batches; the prediction is for the full-batch (expected-gradient) recursion\n", r.batches);
  std::printf("pattern: %s: %s\n", r.method.c_str(), r.pattern.c_str());
  std::printf("state: %lld (per-block versions), period %lld updates, solver %s\n", static_cast<long long>(r.state_dim),
              static_cast<long long>(r.period), r.solver.c_str());
  for (const StabilityPoint& p : r.points)
    std::printf("gamma=%.10g rho=%.12g rho_per_update=%.12g stable=%s%s\n", p.lr, p.rho, p.rho_per_update,
                p.rho <= 1 + 1e-9 ? "yes" : "no", p.converged ? "" : " (power iteration not converged)");
  if (r.bound) {
    const StepBound& b = *r.bound;
    std::printf("gamma_max=%.10g gamma_max_L=%.10g rho_below=%.12g rho_above=%.12g evaluations=%d%s\n", b.gamma_max,
                b.gamma_max * r.L, b.rho_below, b.rho_above, b.evaluations,
                b.converged ? "" : " (some power iterations did not converge)");
  }
  return 0;
}

}  // namespace stale
