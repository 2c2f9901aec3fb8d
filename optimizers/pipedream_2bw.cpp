// PipeDream-2BW — double-buffered weights (Narayanan et al. 2021).
//
//   1F1B without flush; each stage accumulates m micro-batch gradients and then steps:
//     w^(s) ← w^(s) − γ (1/m) Σ g_s(mb)
//   F reads the newest version, B uses the version its F read (stashing), and at most two
//   versions per stage are ever live.
#include "optimizers/schedule_executor.hpp"

namespace stale {
std::unique_ptr<Method> make_2bw(const Config& cfg) {
  return std::make_unique<ScheduleMethod>("2bw", ExecutorOptions::from_config(cfg, "2bw"));
}
}  // namespace stale
