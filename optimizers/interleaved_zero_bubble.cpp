// Interleaved zero bubble (Qi et al. 2024; PyTorch's ScheduleInterleavedZeroBubble): v model
// chunks per device (objective.stages = devices · v blocks), B and W split, W deferred as in
// zb-h1. Synchronous with flush: mini-batch SGD on the accumulated gradient.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"interleaved-zb", "interleaved zero bubble, v chunks per device, B and W split, flush: mini-batch SGD (Qi et al. 2024)", 26, MethodKind::ScheduleDriven, "interleaved-zb",
                                             false, false, {},
                                             schedule_method_factory("interleaved-zb", "interleaved-zb", false, false)});
}  // namespace
}  // namespace stale
