// PipeDream-2BW — double-buffered weights (Narayanan et al. 2021).
//
//   1F1B without flush; each stage accumulates m micro-batch gradients and then steps:
//     w^(s) ← w^(s) − γ (1/m) Σ g_s(mb)
//   F reads the newest version, B uses the version its F read (stashing), and at most two
//   versions per stage are ever live.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"2bw", "PipeDream-2BW: 1F1B without flush, step every a micro-batches, two stashed versions (Narayanan et al. 2021)", 13, MethodKind::ScheduleDriven, "2bw",
                                             true, false, {},
                                             schedule_method_factory("2bw", "2bw", true, false)});
}  // namespace
}  // namespace stale
