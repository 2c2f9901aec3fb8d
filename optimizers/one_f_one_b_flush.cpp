// 1F1B with flush — PipeDream-Flush / DAPPLE (Narayanan et al. 2021; Fan et al. 2021).
//
//   stage s runs S − 1 − s warm-up forwards, then alternates F and B, then drains; every
//   block steps once per mini-batch of m micro-batches with the mean gradient:
//     w^(s) ← w^(s) − γ (1/m) Σ_{mb} ∇_{w^(s)} f_{mb}(w)
//   the same iterates as GPipe (mini-batch SGD), with at most S − s activations on stage s.
#include "optimizers/schedule_executor.hpp"

namespace stale {
std::unique_ptr<Method> make_1f1b_flush(const Config& cfg) {
  return std::make_unique<ScheduleMethod>("1f1b-flush", ExecutorOptions::from_config(cfg, "1f1b-flush"));
}
}  // namespace stale
