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
// what the loop carries between steps (checkpoints save and restore it, with the iterate)
struct LoopState {
  BatchSampler batches;
  GradientNoise noise;
  std::unique_ptr<BlockOptimizer> rule;
  int64_t k = 0;
  LoopState(const Objective& f, const MethodParams& p)
      : batches(f.num_batches(), p.cyclic_batches, p.seed), noise(p.grad_noise_std, p.seed),
        rule(make_block_optimizer(p.rule, f.dim())) {}
  void save(StateBag& b, const Vec& w) const {
    b.put("k", k);
    b.put("w", w);
    batches.save(b, "batches");
    noise.save(b, "noise");
    rule->save(b, "rule");
  }
  void restore(const StateBag& b, Vec& w) {
    k = b.get_int("k");
    w = b.get_vec("w");
    batches.restore(b, "batches");
    noise.restore(b, "noise");
    rule->restore(b, "rule");
  }
};

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
    LoopState st(f, p_);
    Vec g, delta;
    if (const StateBag* resume = obs.resume_state()) st.restore(*resume, w);
    else obs.on_start(w);
    for (int64_t& k = st.k; k < plan.updates && !obs.should_stop();) {
      const int m = st.batches.next();
      UpdateEvent e;
      e.batch_loss = f.batch_value_grad(w, m, g);
      st.noise.add(g);
      st.rule->step(w, g, p_.lr_schedule.at(k), delta);
      k += S;
      e.k = k;
      e.batch = m;
      e.grad_norm = g.norm();
      obs.update_done(e, delta, w, [&](StateBag& b) { st.save(b, w); });
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
     },
     /*steps_all_blocks=*/true});
}  // namespace
}  // namespace stale
