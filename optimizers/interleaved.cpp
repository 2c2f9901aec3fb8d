// Interleaved 1F1B (Narayanan et al. 2021, Megatron-LM): each of the S/v devices holds v
// model chunks (objective.stages = devices · v blocks), which shrinks the bubble by v.
// Synchronous with flush: mini-batch SGD on the accumulated gradient, like gpipe.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"interleaved", "Megatron interleaved 1F1B, v chunks per device, flush: mini-batch SGD (Narayanan et al. 2021)", 22, MethodKind::ScheduleDriven, "interleaved",
                                             false, false, {},
                                             schedule_method_factory("interleaved", "interleaved", false, false)});
}  // namespace
}  // namespace stale
