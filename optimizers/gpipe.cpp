// GPipe — synchronous pipeline with flush (Huang et al. 2019).
//
//   per mini-batch of m micro-batches: all F, then all B, then every block steps once with
//     w^(s) ← w^(s) − γ (1/m) Σ_{mb} ∇_{w^(s)} f_{mb}(w)
//   i.e. mini-batch SGD on the accumulated gradient; no staleness, bubble (S−1)/(m+S−1).
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add({"gpipe", "all F then all B per mini-batch of a micro-batches, flush: mini-batch SGD (Huang et al. 2019)", 20, MethodKind::ScheduleDriven, "gpipe",
                                             false, false, {},
                                             schedule_method_factory("gpipe", "gpipe", false, false)});
}  // namespace
}  // namespace stale
