// Randomized block-coordinate SGD with fresh reads: RPD without staleness.
//
//   s_k ~ U{1..S}, m_k ~ U{1..M}:  w_{k+1}^(s_k) = w_k^(s_k) − γ_k (∇_{w^(s_k)} f_{m_k}(w_k) + ξ_k)
//
// RPD (rpd.cpp) with the zero delay model must reproduce this bit for bit: both draw s_k
// and m_k from the same streams in the same order and evaluate the same block gradient.
// The loop is the fresh-read one (fresh_read.cpp).
#include "optimizers/fresh_read.hpp"
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add(
    {"bcd", "randomized block-coordinate SGD: one uniformly drawn block per update, fresh reads", 1, MethodKind::Fresh,
     "", false, false, {}, [](const Config&, const MethodParams& p, const Objective&) {
       return make_fresh_read_method("bcd", p, FreshStep::DrawnBlock);
     }});
}  // namespace
}  // namespace stale
