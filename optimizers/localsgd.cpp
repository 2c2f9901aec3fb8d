// Stage-distributed LocalSGD, the comparison method of [RPD] (theory.md §6).
//
//   R replicas (default R = S), micro-batch mb trains replica mb mod R;
//   each replica takes H local SGD steps per round, every block fresh (no staleness):
//     w_r^(s) ← w_r^(s) − γ ∇_{w^(s)} f_{mb}(w_r)
//   at the round's end every block is averaged:  w^(s) ← (1/R) Σ_r w_r^(s)
//   rounds drain the pipeline (hence bubbles); metrics are taken at the replica average.
#include "optimizers/schedule_executor.hpp"

namespace stale {
std::unique_ptr<Method> make_localsgd(const Config& cfg) {
  return std::make_unique<ScheduleMethod>("localsgd", ExecutorOptions::from_config(cfg, "localsgd"));
}
}  // namespace stale
