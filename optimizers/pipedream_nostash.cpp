// PipeDream without weight stashing (docs/theory.md §4 "Variants").
//
//   F(j, mb) reads block j when it runs;  B(a, mb) uses block a *as it is when B runs*,
//   while the activations and the gradient arriving from stage a + 1 come from the versions
//   the forwards saw:  g_a = ∂_a ℓ evaluated with mixed (F-time, B-time) weights.
//
// This is not a gradient at any single point, so it runs only through the stage-wise
// forward/backward interface. Same schedule as pipedream (asynchronous 1F1B, S in flight).
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"pipedream-nostash", "PipeDream's schedule without stashing: B uses the block as it is when B runs", 11, MethodKind::ScheduleDriven, "pipedream",
                                             false, false, {},
                                             schedule_method_factory("pipedream-nostash", "pipedream", false, false)});
}  // namespace
}  // namespace stale
