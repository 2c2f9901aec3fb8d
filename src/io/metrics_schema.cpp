#include "src/io/metrics_schema.hpp"

#include "src/core/error.hpp"

namespace stale {

const char* dtype_name(ColumnType t) { return t == ColumnType::Int64 ? "int64" : "float64"; }

const std::vector<MetricColumn>& metric_columns() {
  using R = MetricsRow;
  // the bound and its terms: docs/theory.md §3, evaluated with the run's γ, S, L, δ and the running G
  static const std::vector<MetricColumn> table = {
      {"k", "block updates", "block updates done (0 = the starting point)", &R::k},
      {"time", "simulated time", "simulated time at the update's end (t_F = 1 by default; 0 at k = 0; NaN without a schedule)",
       &R::time},
      {"loss", "loss", "f(w_k) over all data", &R::loss},
      {"subopt", "loss", "f(w_k) - f_* (NaN when f_* is unknown)", &R::subopt},
      {"grad_norm_sq", "squared gradient norm", "‖∇f(w_k)‖², exact", &R::grad_norm_sq},
      {"grad_norm_sq_mean", "squared gradient norm", "(1/K) Σ_{k<K} ‖∇f(w_k)‖², the bound's left side",
       &R::grad_norm_sq_mean},
      {"stale_dist", "parameter norm", "‖w_k − z_k‖, distance of the read point from the iterate", &R::stale_dist},
      {"stage", "block", "the block updated (−1: all blocks at once)", &R::stage},
      {"batch", "mini-batch", "the mini-batch the gradient was taken on", &R::batch},
      {"bound", "squared gradient norm", "the convergence bound 2SΔ₀/(γK) + γSLG² + γ²L²δ²G²", &R::bound},
      {"bound_opt", "squared gradient norm", "the bound's optimisation term 2SΔ₀/(γK)", &R::bound_opt},
      {"bound_stoch", "squared gradient norm", "the bound's stochastic term γSLG²", &R::bound_stoch},
      {"bound_stale", "squared gradient norm", "the bound's stale-read term γ²L²δ²G²", &R::bound_stale},
      {"G", "gradient norm", "running maximum block-gradient norm", &R::G},
      {"wall", "seconds", "wall-clock time since the run started", &R::wall},
      {"batch_loss", "loss", "loss at the last stage's forward of the update's micro-batch", &R::batch_loss},
      {"val_loss", "loss", "held-out loss (NaN without a held-out set)", &R::val_loss},
  };
  return table;
}

const std::vector<IndexColumn>& index_columns() {
  using S = RunSummary;
  static const std::vector<IndexColumn> table = {
      {"k", "block updates", "block updates done (the last logged k)", &S::k, "k"},
      {"time", "simulated time", "simulated time at the last logged update (NaN without a schedule)", &S::time, "time"},
      {"loss", "loss", "f at the last logged update", &S::loss, "loss"},
      {"subopt", "loss", "f - f_* at the last logged update", &S::subopt, "subopt"},
      {"grad_norm_sq", "squared gradient norm", "‖∇f(w_k)‖² at the last logged update", &S::grad_norm_sq,
       "grad_norm_sq"},
      {"grad_norm_sq_mean", "squared gradient norm", "(1/K) Σ_{k<K} ‖∇f(w_k)‖² at the end", &S::grad_norm_sq_mean,
       "grad_norm_sq_mean"},
      {"bound", "squared gradient norm", "the convergence bound at the end", &S::bound, "bound"},
      {"bound_opt", "squared gradient norm", "the bound's optimisation term 2SΔ₀/(γK) at the end", &S::bound_opt,
       "bound_opt"},
      {"bound_stoch", "squared gradient norm", "the bound's stochastic term γSLG² at the end", &S::bound_stoch,
       "bound_stoch"},
      {"bound_stale", "squared gradient norm", "the bound's stale-read term γ²L²δ²G² at the end", &S::bound_stale,
       "bound_stale"},
      {"G", "gradient norm", "the running maximum block-gradient norm at the end", &S::G, "G"},
      {"delta", "block updates", "δ of the bound: the largest delay any read of the run had, warm-up included (/theory/delta)",
       &S::delta, nullptr},
      {"lr_within_1_over_L", "flag", "1 when γ ≤ 1/L, the bound's step-size condition; 0 when not (/theory/lr_within_1_over_L)",
       &S::lr_within_1_over_L, nullptr},
      {"L", "curvature", "the smoothness constant L the bound used (/theory/L; NaN: none)", &S::L, nullptr},
      {"L_estimated", "flag",
       "1 when the bound's L is the estimate along the run (a lower estimate of L: the bound is not certified), 0 when "
       "certified (/theory/L_source)",
       &S::L_estimated, nullptr},
      {"time_to_eps_k", "block updates", "the first logged k with f - f_* ≤ epsilon (empty: never, or no epsilon)",
       &S::time_to_eps_k, nullptr},
      {"time_to_eps", "simulated time", "the simulated time of time_to_eps_k", &S::time_to_eps, nullptr},
      {"wall_seconds", "seconds", "the run's wall time (its root attribute wall_seconds)", &S::wall, nullptr},
  };
  return table;
}

void split_row(const MetricsRow& row, std::vector<int64_t>& ints, std::vector<double>& reals) {
  ints.clear();
  reals.clear();
  for (const auto& c : metric_columns()) {
    if (c.type() == ColumnType::Int64) ints.push_back(row.*std::get<0>(c.member));
    else reals.push_back(row.*std::get<1>(c.member));
  }
}

MetricsRow join_row(const std::vector<int64_t>& ints, const std::vector<double>& reals, const std::string& what) {
  size_t ni = 0, nr = 0;
  for (const auto& c : metric_columns()) (c.type() == ColumnType::Int64 ? ni : nr)++;
  if (ints.size() != ni || reals.size() != nr)
    throw UserError(what + ": a metrics row of " + std::to_string(ints.size()) + " integer and " +
                    std::to_string(reals.size()) + " floating-point values; the table has " + std::to_string(ni) +
                    " and " + std::to_string(nr));
  MetricsRow row;
  ni = nr = 0;
  for (const auto& c : metric_columns()) {
    if (c.type() == ColumnType::Int64) row.*std::get<0>(c.member) = ints[ni++];
    else row.*std::get<1>(c.member) = reals[nr++];
  }
  return row;
}

}  // namespace stale
