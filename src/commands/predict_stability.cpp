#include "src/commands/predict_stability.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "objectives/linear/linear_model_cpu.hpp"
#include "objectives/objective_factory.hpp"
#include "optimizers/method.hpp"
#include "src/core/error.hpp"
#include "src/theory/stability_pattern.hpp"

namespace stale {

StabilityReport predict_stability(StabilityRequest req) {
  const Config& cfg = req.config;
  check_stability_objective(cfg);
  RadiusOptions ro;
  ro.solver = parse_radius_solver(req.solver);
  ro.dense_max = req.dense_max;
  const MethodParams method = MethodParams::from_config(cfg);  // seed and γ, parsed where every method's are
  ro.seed = method.seed;
  if (req.lrs.empty()) req.lrs.push_back(method.lr);
  for (double g : req.lrs)  // checked before the objective is built: a typo costs nothing
    if (!(g > 0) || !std::isfinite(g))
      throw UserError("stability: lr = " + std::to_string(g) + " is not a step size; give γ > 0 (e.g. --lr 0.01)");
  DelayPattern pattern = pattern_from_config(cfg, req.order);

  const auto f = make_objective(cfg, BackendKind::Cpu);
  const auto* ls = dynamic_cast<const LeastSquaresCpu*>(f.get());
  if (!ls)  // the only other cpu quadratic is the CSR twin, which never forms the Gram matrix
    config_error("objective.storage", "\"sparse\": the stability predictor needs the dense Gram matrix; use \"dense\"");
  StabilityReport rep;
  rep.generator = cfg.get_string("objective.generator");
  rep.samples = f->num_samples();
  rep.dim = f->dim();
  rep.stages = f->stages();
  rep.batches = f->num_batches();
  rep.L = f->constants().L;
  rep.mu = f->constants().mu;
  rep.method = cfg.get_string("method.name");

  const StaleRecursion rec(ls->gram(), f->blocks(), std::move(pattern));
  const StabilityPredictor pred(rec, ro);
  rep.pattern = rec.pattern().description;
  rep.solver = solver_name(pred.solver());
  rep.state_dim = rec.state_dim();
  rep.period = rec.pattern().length();
  for (double g : req.lrs) {
    const RadiusResult r = pred.radius(g);
    rep.points.push_back({g, r.rho, std::pow(r.rho, 1.0 / static_cast<double>(rep.period)), r.converged});
  }
  if (req.gamma_max) rep.bound = largest_stable_step(pred, rep.L, req.rel_tol);
  return rep;
}

}  // namespace stale
