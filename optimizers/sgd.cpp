// Mini-batch SGD, all blocks at once, fresh reads — the baseline every stale method is
// compared with:
//
//   w_{t+1} = w_t − γ_t (∇f_{m_t}(w_t) + ξ_t),   m_t uniform (or cyclic), ξ_t ~ N(0, σ² I)
//
// (or the momentum / AdamW rule of update_rule.hpp on the whole vector). One step updates
// all S blocks, so it advances the block-update counter k by S (docs/theory.md §1 counts block
// updates). Robbins & Monro (1951).
#include "optimizers/method_registry.hpp"
#include "optimizers/sampling.hpp"

namespace stale {
namespace {
class Sgd final : public Method {
 public:
  explicit Sgd(MethodParams p) : p_(p) {}
  std::string name() const override { return "sgd"; }
  // K rounds up to whole steps: a step updates all S blocks at once
  RunPlan plan(const Objective& f) const override {
    RunPlan pl;
    const int64_t S = f.stages();
    pl.updates = (p_.updates + S - 1) / S * S;
    if (pl.updates != p_.updates)
      pl.note = "method.updates = " + std::to_string(p_.updates) + " rounded up to whole SGD steps of S = " +
                std::to_string(S) + " block updates";
    return pl;
  }
  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override {
    const int S = f.stages();
    BatchSampler batches(f.num_batches(), p_.cyclic_batches, p_.seed);
    GradientNoise noise(p_.grad_noise_std, p_.seed);
    auto rule = make_block_optimizer(p_.rule, f.dim());
    Vec g, delta;
    obs.on_start(w);
    for (int64_t k = 0; k < plan.updates && !obs.should_stop(); k += S) {
      const int m = batches.next();
      UpdateEvent e;
      e.batch_loss = f.batch_value_grad(w, m, g);
      noise.add(g);
      rule->step(w, g, p_.lr_schedule.at(k), delta);
      e.k = k + S;
      e.batch = m;
      e.grad_norm = g.norm();
      obs.on_update(e, delta, w);
    }
    return {};
  }

 private:
  MethodParams p_;
};
const bool registered = MethodRegistry::add(
    {"sgd", "mini-batch SGD on all blocks at once, fresh reads (Robbins & Monro 1951)", 0, MethodKind::Fresh, "", false,
     false, {}, [](const Config&, const MethodParams& p, const Objective&) -> std::unique_ptr<Method> {
       return std::make_unique<Sgd>(p);
     }});
}  // namespace
}  // namespace stale
