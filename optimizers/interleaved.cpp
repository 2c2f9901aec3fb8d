// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM): each of the S/v devices holds v
// model chunks (objective.stages = devices · v blocks), which shrinks the bubble by v.
// Synchronous with flush: mini-batch SGD on the accumulated gradient, like gpipe.
#include "optimizers/schedule_executor.hpp"

namespace stale {
std::unique_ptr<Method> make_interleaved(const Config& cfg) {
  return std::make_unique<ScheduleMethod>("interleaved", ExecutorOptions::from_config(cfg, "interleaved"));
}
}  // namespace stale
