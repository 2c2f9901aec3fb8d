// Randomized block-coordinate SGD with fresh reads: RPD without staleness.
//
//   s_k ~ U{1..S}, m_k ~ U{1..M}:  w_{k+1}^(s_k) = w_k^(s_k) − γ_k (∇_{w^(s_k)} f_{m_k}(w_k) + ξ_k)
//
// RPD (rpd.cpp) with the zero delay model must reproduce this bit for bit: both draw s_k
// and m_k from the same streams in the same order and evaluate the same block gradient.
#include "optimizers/method_registry.hpp"
#include "optimizers/sampling.hpp"

namespace stale {
namespace {
// what the loop carries between updates (checkpoints save and restore it, with the iterate)
struct LoopState : BlockStepDraws {
  int64_t k = 0;
  LoopState(const Objective& f, const MethodParams& p) : BlockStepDraws(f, p) {}
  void save(StateBag& b, const Vec& w) const {
    b.put("k", k);
    b.put("w", w);
    BlockStepDraws::save(b);
  }
  void restore(const StateBag& b, Vec& w) {
    k = b.get_int("k");
    w = b.get_vec("w");
    BlockStepDraws::restore(b);
  }
};

class Bcd final : public Method {
 public:
  explicit Bcd(MethodParams p) : p_(p) {}
  std::string name() const override { return "bcd"; }
  RunPlan plan(const Objective&) const override {
    RunPlan pl;
    pl.updates = p_.updates;
    return pl;
  }
  RunReport run(const Objective& f, const RunPlan& plan, Vec& w, RunObserver& obs) const override {
    const auto& P = f.blocks();
    LoopState st(f, p_);
    Vec g(P.max_size()), delta;
    if (const StateBag* resume = obs.resume_state()) st.restore(*resume, w);
    else obs.on_start(w);
    for (int64_t& k = st.k; k < plan.updates && !obs.should_stop();) {
      const int s = st.stages.next();
      const int m = st.batches.next();
      auto gs = g.head(P.size(s));
      f.batch_block_grad(w, m, s, gs);
      st.noise.add(gs);
      st.rules[s]->step(P.block(w, s), gs, p_.lr_schedule.at(k), delta);
      ++k;
      UpdateEvent e;
      e.k = k;
      e.stage = s;
      e.batch = m;
      e.grad_norm = gs.norm();
      obs.update_done(e, delta, w, [&](StateBag& b) { st.save(b, w); });
    }
    return {};
  }

 private:
  MethodParams p_;
};
const bool registered = MethodRegistry::add(
    {"bcd", "randomized block-coordinate SGD: one uniformly drawn block per update, fresh reads", 1, MethodKind::Fresh,
     "", false, false, {}, [](const Config&, const MethodParams& p, const Objective&) -> std::unique_ptr<Method> {
       return std::make_unique<Bcd>(p);
     }});
}  // namespace
}  // namespace stale
