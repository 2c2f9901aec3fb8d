// Zero-bubble V (Qi et al. 2024, "Pipeline Parallelism with Controllable Memory"): two model
// chunks per device in a V (objective.stages = 2 · devices blocks), B and W split, 1F1B's
// peak activation memory. Synchronous with flush: mini-batch SGD on the accumulated gradient.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"zb-v", "zero bubble V: 2 chunks per device in a V, B and W split, flush: mini-batch SGD (Qi et al. 2024)", 24, MethodKind::ScheduleDriven, "zb-v",
                                             false, false, {},
                                             schedule_method_factory("zb-v", "zb-v", false, false)});
}  // namespace
}  // namespace stale
