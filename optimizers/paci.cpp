// PACI — local gradient accumulation as version control (Elam, Rahimi, Mendelson & Baskin
// 2026, arXiv 2606.07881; docs/theory.md §5).
//
//   asynchronous 1F1B without flush, stage s holds at most S − s micro-batches in flight;
//   no stashing: F and B use block s as it is when they run;
//   stage s accumulates a backward gradients and then steps its own optimizer:
//     w^(s) ← step(w^(s), (1/a) Σ_{last a micro-batches} g_s)        (SGD or AdamW)
//
// A micro-batch crosses at most ⌈(S − 1 − s)/a⌉ updates of stage s between its F and B.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"paci", "asynchronous 1F1B, stage s holds S - s in flight, no stashing, a stage steps every a backward passes (Elam et al. 2026)", 12, MethodKind::ScheduleDriven, "paci",
                                             false, false, {},
                                             schedule_method_factory("paci", "paci", false, false)});
}  // namespace
}  // namespace stale
