// PipeDream without weight stashing (theory.md §4 "Variants").
//
//   F(j, mb) reads block j when it runs;  B(a, mb) uses block a *as it is when B runs*,
//   while the activations and the gradient arriving from stage a + 1 come from the versions
//   the forwards saw:  g_a = ∂_a ℓ evaluated with mixed (F-time, B-time) weights.
//
// This is not a gradient at any single point, so it runs only through the stage-wise
// forward/backward interface. Same schedule as pipedream (asynchronous 1F1B, S in flight).
#include "optimizers/schedule_executor.hpp"

namespace stale {
std::unique_ptr<Method> make_pipedream_nostash(const Config& cfg) {
  ExecutorOptions o = ExecutorOptions::from_config(cfg, "pipedream");
  o.stash = false;
  return std::make_unique<ScheduleMethod>("pipedream-nostash", o);
}
}  // namespace stale
