// 1F1B with flush — PipeDream-Flush / DAPPLE (Narayanan et al. 2021; Fan et al. 2021).
//
//   stage s runs S − 1 − s warm-up forwards, then alternates F and B, then drains; every
//   block steps once per mini-batch of m micro-batches with the mean gradient:
//     w^(s) ← w^(s) − γ (1/m) Σ_{mb} ∇_{w^(s)} f_{mb}(w)
//   the same iterates as GPipe (mini-batch SGD), with at most S − s activations on stage s.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"1f1b-flush", "1F1B with a flush per mini-batch (PipeDream-Flush / DAPPLE): mini-batch SGD", 21, MethodKind::ScheduleDriven, "1f1b-flush",
                                             false, false, {},
                                             schedule_method_factory("1f1b-flush", "1f1b-flush", false, false)});
}  // namespace
}  // namespace stale
