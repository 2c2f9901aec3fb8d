// Looped breadth-first pipeline (Lamy-Poirier 2023; PyTorch's ScheduleLoopedBFS): v model chunks
// per device (objective.stages = devices · v blocks), all forwards chunk by chunk, then all
// backwards. Synchronous with flush: mini-batch SGD on the accumulated gradient.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"looped-bfs", "looped breadth-first, v chunks per device, flush: mini-batch SGD (Lamy-Poirier 2023)", 27, MethodKind::ScheduleDriven, "looped-bfs",
                                             false, false, {},
                                             schedule_method_factory("looped-bfs", "looped-bfs", false, false)});
}  // namespace
}  // namespace stale
