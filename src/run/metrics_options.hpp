#pragma once
// What configures a run's MetricsObserver and its parts (RunSession fills it from the log.*
// keys and the plan; tests set it directly).
#include <cstdint>

namespace stale {

struct MetricsOptions {
  int64_t every = 1;            // log cadence in block updates
  int64_t iterates_every = -1;  // -1 auto, 0 none
  bool exact_mean = true;
  double lr = 0;
  int64_t delta = 0;
  int64_t updates = 0;
  // diverged when f − f_* (the loss when f_* is unknown) exceeds divergence × max(start, 1),
  // or is not finite; 0: only when not finite
  double divergence = 1e6;
  // stop as if interrupted once k ≥ stop_after (0: never; tests of checkpoint and resume)
  int64_t stop_after = 0;
  // estimate L along the run (src/theory/smoothness_estimator.hpp); the bound uses the estimate
  // only where the objective has no certified L
  bool estimate_L = false;
  int L_power_steps = 0;
  bool clock = false;  // the method keeps a simulated clock: time = 0 at k = 0 (else NaN: no clock)
};

}  // namespace stale
