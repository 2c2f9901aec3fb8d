#include "src/cli/stability_command.hpp"

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "objectives/linear_model_cpu.hpp"
#include "objectives/objective_factory.hpp"
#include "src/config/config.hpp"
#include "src/core/error.hpp"
#include "src/run/stability.hpp"
#include "src/run/stability_pattern.hpp"

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
  Config cfg = Config::from_file(c.config);
  cfg.apply_overrides(c.overrides);
  check_stability_objective(cfg);
  RadiusOptions ro;
  ro.solver = parse_radius_solver(c.solver);
  ro.dense_max = c.dense_max;
  ro.seed = static_cast<uint64_t>(cfg.get_int("seed"));
  DelayPattern pattern = pattern_from_config(cfg, c.order);

  const auto f = make_objective(cfg, BackendKind::Cpu);
  const auto* ls = dynamic_cast<const LeastSquaresCpu*>(f.get());
  if (!ls)  // the only other cpu quadratic is the CSR twin, which never forms the Gram matrix
    config_error("objective.storage", "\"sparse\": the stability predictor needs the dense Gram matrix; use \"dense\"");
  const double L = f->constants().L;
  const StaleRecursion rec(ls->gram(), f->blocks(), std::move(pattern));
  const StabilityPredictor pred(rec, ro);

  const auto& p = rec.pattern();
  std::printf("objective: quadratic %s n=%lld d=%lld S=%d L=%.10g mu=%.10g (full-batch recursion: A = X^T X / n)\n",
              cfg.get_string("objective.generator").c_str(), static_cast<long long>(f->num_samples()),
              static_cast<long long>(f->dim()), f->stages(), L, f->constants().mu);
  if (f->num_batches() > 1)
    std::printf("note: %d mini-batches; the prediction is for the full-batch (expected-gradient) recursion\n",
                f->num_batches());
  std::printf("pattern: %s: %s\n", cfg.get_string("method.name").c_str(), p.description.c_str());
  std::printf("state: %lld (per-block versions), period %lld updates, solver %s\n",
              static_cast<long long>(rec.state_dim()), static_cast<long long>(p.length()),
              solver_name(pred.solver()).c_str());
  std::vector<double> lrs = c.lr;
  if (lrs.empty()) lrs.push_back(cfg.get_float("method.lr"));
  for (double g : lrs) {
    if (!(g > 0) || !std::isfinite(g)) throw UserError("stability: --lr " + std::to_string(g) + " must be > 0");
    const RadiusResult r = pred.radius(g);
    std::printf("gamma=%.10g rho=%.12g rho_per_update=%.12g stable=%s%s\n", g, r.rho,
                std::pow(r.rho, 1.0 / static_cast<double>(p.length())), r.rho <= 1 + 1e-9 ? "yes" : "no",
                r.converged ? "" : " (power iteration not converged)");
  }
  if (!c.no_gamma_max) {
    const StepBound b = largest_stable_step(pred, L, c.rel_tol);
    std::printf("gamma_max=%.10g gamma_max_L=%.10g rho_below=%.12g rho_above=%.12g evaluations=%d%s\n", b.gamma_max,
                b.gamma_max * L, b.rho_below, b.rho_above, b.evaluations,
                b.converged ? "" : " (some power iterations did not converge)");
  }
  return 0;
}

}  // namespace stale
