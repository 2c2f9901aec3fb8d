// GPipe — synchronous pipeline with flush (Huang et al. 2019).
//
//   per mini-batch of m micro-batches: all F, then all B, then every block steps once with
//     w^(s) ← w^(s) − γ (1/m) Σ_{mb} ∇_{w^(s)} f_{mb}(w)
//   i.e. mini-batch SGD on the accumulated gradient; no staleness, bubble (S−1)/(m+S−1).
#include "optimizers/schedule_executor.hpp"

namespace stale {
std::unique_ptr<Method> make_gpipe(const Config& cfg) {
  return std::make_unique<ScheduleMethod>("gpipe", ExecutorOptions::from_config(cfg, "gpipe"));
}
}  // namespace stale
