// PipeDream — asynchronous 1F1B with weight stashing (Narayanan et al. 2019; the schedule
// and delay analysed by Ilin & Richtárik 2026, docs/theory.md §4).
//
//   micro-batch mb, block a (stage a updates block a after every backward pass):
//     w_{k+1}^(a) = w_k^(a) − γ ∇_{w^(a)} f_{mb}(z),   z^(j) = the version F(j, mb) read
//
// The gradient is taken at the mixed point of the versions the micro-batch's forwards read
// (stashing makes B(a, mb) use the same version as F(a, mb)); its delays are the schedule's
// exact ones, worst S² − S/2 for even S. Batches are read cyclically.
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"pipedream", "asynchronous 1F1B with weight stashing: a stage steps after every backward pass (Narayanan et al. 2019)", 10, MethodKind::ScheduleDriven, "pipedream",
                                             true, false, {},
                                             schedule_method_factory("pipedream", "pipedream", true, false)});
}  // namespace
}  // namespace stale
