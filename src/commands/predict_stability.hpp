#pragma once
// `stability`: the spectral radius of a stale method's one-period recursion on a quadratic at
// given step sizes, and the largest stable step (src/theory/stability.hpp has the theory). The one
// implementation behind `stale stability` and stale.stability(): front ends parse into a
// StabilityRequest and format the StabilityReport.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/config/config.hpp"
#include "src/theory/stability.hpp"

namespace stale {

struct StabilityRequest {
  explicit StabilityRequest(Config c) : config(std::move(c)) {}
  Config config;             // objective.* of a quadratic; method.*, delay.*, costs.*
  std::vector<double> lrs;   // empty: method.lr
  std::string order = "expected";
  std::string solver = "auto";
  int64_t dense_max = 1500;
  bool gamma_max = true;     // bisect for the largest stable step
  double rel_tol = 1e-10;
};

struct StabilityPoint {
  double lr = 0, rho = 0, rho_per_update = 0;
  bool converged = true;
};

struct StabilityReport {
  // the quadratic
  std::string generator;
  int64_t samples = 0, dim = 0;
  int stages = 0, batches = 0;
  double L = 0, mu = 0;
  // the recursion
  std::string method, pattern, solver;
  int64_t state_dim = 0, period = 0;
  std::vector<StabilityPoint> points;
  std::optional<StepBound> bound;  // with StabilityRequest::gamma_max
};

StabilityReport predict_stability(StabilityRequest request);

}  // namespace stale
