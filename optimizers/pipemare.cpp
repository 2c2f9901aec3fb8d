// PipeMare — asynchronous pipeline without stashing, with learning-rate warm-up and weight
// prediction (Yang et al. 2021).
//
//   schedule: asynchronous 1F1B (pipedream's), no stashing (B uses the current block);
//   warm-up:  γ_k = γ · min(1, (k + 1)/warmup)       (method.warmup block updates)
//   prediction: before F(s, mb) the block is extrapolated by its expected staleness,
//     ŵ^(s) = w^(s) + τ_s v^(s),   v^(s) ← 0.9 v^(s) + 0.1 Δw^(s)  (velocity per update),
//     τ_s = the most updates of block s any micro-batch crosses between F and B (S − 1 − s)
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"pipemare", "PipeDream's schedule without stashing, with warm-up and weight prediction (Yang et al. 2021)", 14, MethodKind::ScheduleDriven, "pipedream",
                                             false, true, {"method.prediction"},
                                             schedule_method_factory("pipemare", "pipedream", false, true)});
}  // namespace
}  // namespace stale
