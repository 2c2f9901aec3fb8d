// Stage-distributed LocalSGD, the comparison method of [RPD] (docs/theory.md §6).
//
//   R replicas (default R = S), micro-batch mb trains replica mb mod R;
//   each replica takes H local SGD steps per round, every block fresh (no staleness):
//     w_r^(s) ← w_r^(s) − γ ∇_{w^(s)} f_{mb}(w_r)
//   at the round's end every block is averaged:  w^(s) ← (1/R) Σ_r w_r^(s)
//   rounds drain the pipeline (hence bubbles); metrics are taken at the replica average.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"localsgd", "R replicas interleaved in one pipeline, H local steps, drain and average per round", 15, MethodKind::ScheduleDriven, "localsgd",
                                             false, false, {},
                                             schedule_method_factory("localsgd", "localsgd", false, false)});
}  // namespace
}  // namespace stale
