#include "src/io/theory_record.hpp"

#include <cmath>

namespace stale {

std::vector<TheoryEntry> theory_record(const TheoryConstants& t) {
  std::vector<TheoryEntry> r;
  auto flag = [](bool b) { return TheoryValue{int64_t{b ? 1 : 0}}; };
  r.push_back({"L", t.L});
  r.push_back({"L_exact", flag(t.L_exact)});
  // which L the bound used; an estimate says so here, in bound_uses_estimated_L, in bound_formula
  // and on the /metrics series that contain L
  r.push_back({"L_source", t.L_source});
  r.push_back({"bound_uses_estimated_L", flag(t.L_estimated())});
  if (!t.L_estimate_method.empty()) {
    r.push_back({"L_estimate", t.L_estimate});
    r.push_back({"L_estimate_method", t.L_estimate_method});
    r.push_back({"L_estimate_secant", t.L_estimate_secant});
    r.push_back({"L_estimate_power", t.L_estimate_power});
    r.push_back({"L_estimate_pairs", t.L_estimate_pairs});
    r.push_back({"L_estimate_hvps", t.L_estimate_hvps});
    r.push_back({"L_estimate_seconds", t.L_estimate_seconds});
    r.push_back({"L_estimate_note", std::string("a lower estimate of L (the largest curvature seen along this run's "
                                                "logged iterates; src/theory/smoothness_estimator.hpp), not a "
                                                "certified constant")});
  }
  r.push_back({"exact_mean", flag(t.exact_mean)});
  if (std::isfinite(t.f_low)) r.push_back({"f_low", t.f_low});  // Δ₀ = f(w₀) − f_low (f_* unknown)
  r.push_back({"mu", t.mu});
  r.push_back({"f_star", t.f_star});
  r.push_back({"f_star_method", t.f_star_method});
  // only when set, as in /objective (a convex run's file never had it; the golden digests hold that)
  if (t.f_star_is_lower_bound) r.push_back({"f_star_is_lower_bound", flag(true)});
  r.push_back({"delta", t.delta});
  r.push_back({"delay_model", t.delay_model});
  for (const auto& [name, value] : t.delay_attributes) r.push_back({name, value});
  r.push_back({"delta_steady", t.delta_steady});
  r.push_back({"delay_mean_steady", t.delay_mean_steady});
  r.push_back({"G", t.G});
  r.push_back({"lr", t.lr});
  r.push_back({"Delta0", t.delta0});
  r.push_back({"S", t.stages});
  r.push_back({"K", t.updates});
  r.push_back({"K_planned", t.updates_planned});
  r.push_back({"K_note", t.updates_note});
  r.push_back({"lr_note", t.lr_note});
  r.push_back({"lr_within_1_over_L", flag(t.lr_within_1_over_L())});
  std::string formula = "2 S Delta0 / (lr K) + lr S L G^2 + lr^2 L^2 delta^2 G^2 (docs/theory.md section 3)";
  if (t.L_estimated())
    formula += " with L estimated along the run (L_source): a lower estimate of L, so this bound is an estimate, "
               "not a certified bound; each row uses the estimate over the logged iterates up to it";
  r.push_back({"bound_formula", formula});
  return r;
}

}  // namespace stale
