// Zero-bubble H1 (Qi et al. 2024): the backward splits into B (input gradient, on the
// critical path) and W (weight gradient, scheduled into the bubbles) at 1F1B's memory.
// Synchronous with flush: mini-batch SGD on the accumulated gradient, like gpipe; the
// weight gradient is applied when W runs.
#include "optimizers/schedule_executor.hpp"

namespace stale {
std::unique_ptr<Method> make_zero_bubble(const Config& cfg) {
  return std::make_unique<ScheduleMethod>("zb-h1", ExecutorOptions::from_config(cfg, "zb-h1"));
}
}  // namespace stale
