// Mini-batch SGD, all blocks at once, fresh reads — the baseline every stale method is
// compared with:
//
//   w_{t+1} = w_t − γ_t (∇f_{m_t}(w_t) + ξ_t),   m_t uniform (or cyclic), ξ_t ~ N(0, σ² I)
//
// (or the momentum / AdamW rule of update_rule.hpp on the whole vector). One step updates
// all S blocks, so it advances the block-update counter k by S (docs/theory.md §1 counts block
// updates). Robbins & Monro (1951). The loop is the fresh-read one (fresh_read.cpp).
#include "optimizers/fresh_read.hpp"
#include "optimizers/method_registry.hpp"

namespace stale {
namespace {
const bool registered = MethodRegistry::add(
    {"sgd", "mini-batch SGD on all blocks at once, fresh reads (Robbins & Monro 1951)", 0, MethodKind::Fresh, "", false,
     false, {}, [](const Config&, const MethodParams& p, const Objective&) {
       return make_fresh_read_method("sgd", p, FreshStep::AllBlocks);
     },
     /*steps_all_blocks=*/true});
}  // namespace
}  // namespace stale
