// Zero-bubble H1 (Qi et al. 2024): the backward splits into B (input gradient, on the
// critical path) and W (weight gradient, scheduled into the bubbles) at 1F1B's memory.
// Synchronous with flush: mini-batch SGD on the accumulated gradient, like gpipe; the
// weight gradient is applied when W runs.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"zb-h1", "zero bubble H1: B split into B and W, W fills the bubbles, flush: mini-batch SGD (Qi et al. 2024)", 23, MethodKind::ScheduleDriven, "zb-h1",
                                             false, false, {},
                                             schedule_method_factory("zb-h1", "zb-h1", false, false)});
}  // namespace
}  // namespace stale
