// DualPipeV (DeepSeek-V3's DualPipe, V variant): two model chunks per device in a V
// (objective.stages = 2 · devices blocks), overlapped F&B pairs, B and W split at the ends.
// Synchronous with flush: mini-batch SGD on the accumulated gradient.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"dualpipev", "DualPipeV: 2 chunks per device in a V, overlapped F&B pairs, flush: mini-batch SGD (DeepSeek-AI 2024)", 25, MethodKind::ScheduleDriven, "dualpipev",
                                             false, false, {},
                                             schedule_method_factory("dualpipev", "dualpipev", false, false)});
}  // namespace
}  // namespace stale
